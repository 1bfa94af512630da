"""A review as reviewdog's rdjson (``--format rdjson``), for ``reviewdog -f=rdjson``.

One ``DiagnosticResult``: source ``codejury``, one diagnostic per finding with a line-wise range
(no columns: start to end line inclusive, as the format defines it), severity ERROR / WARNING /
INFO, and the suggested replacement, if any, as a suggestion over the same lines. A finding an
analyzer's hit backs carries that tool as its own ``source`` and the tool's rule as ``code.value``
(with ``code.url`` where the tool documents the rule: ``render.tool_rules``); any other finding has
its category as ``code.value``. Every message ends with what the finding stands on
(``render.grounds_phrase``).

reviewdog parses rdjson with protobuf's strict JSON reader, which rejects unknown fields, so
nothing outside the format is added. The format has no run status either: a reviewer that failed,
an unjudged review, or a change nothing reviewed (verdict ``not_reviewed``) becomes a
location-less WARNING diagnostic (code ``codejury/reviewer-failed``, ``codejury/review-unjudged``
or ``codejury/not-reviewed``), and each thing the review could not do (an analyzer skipped or
failed, no head-side tree, files left out or cut to fit) an INFO one with code
``codejury/review-limited``. reviewdog shows those with
``-filter-mode=nofilter`` or the local reporter, and they count towards ``-fail-level``.
The format has no fingerprint field: reviewdog computes its own.
"""

from __future__ import annotations

import json
from typing import Any

from codejury.findings import Finding, Review, ReviewerReport
from codejury.render import clean_text, coverage_lines, finding_grounds, finding_rule, not_reviewed_notice, one_line
from codejury.render.tool_rules import help_uri

SEVERITIES: dict[str, str] = {"critical": "ERROR", "warning": "WARNING", "suggestion": "INFO"}


def _failed(review: Review) -> list[ReviewerReport]:
    reports = [r for r in review.reviewers if r.status == "failed"]
    if review.coordinator is not None and review.coordinator.status == "failed":
        reports.append(review.coordinator)
    return reports


def _range(f: Finding) -> dict[str, Any]:
    return {"start": {"line": f.start_line}, "end": {"line": max(f.end_line, f.start_line)}}


def _diagnostic(f: Finding) -> dict[str, Any]:
    body = clean_text(f.body).strip()
    title = one_line(f.title)
    tool, rule = finding_rule(f)
    out: dict[str, Any] = {
        "message": "\n\n".join([title, *([body] if body else []), f"Grounds: {finding_grounds(f)}"]),
        "location": {"path": f.path, "range": _range(f)},
        "severity": SEVERITIES.get(f.severity, "WARNING"),
    }
    if tool is not None:
        out["source"] = {"name": tool}
    uri = help_uri(tool, rule) if tool is not None else None
    out["code"] = {"value": rule, **({"url": uri} if uri else {})}
    if f.suggestion is not None and f.suggestion.strip():
        out["suggestions"] = [{"range": _range(f), "text": clean_text(f.suggestion).rstrip("\n")}]
    return out


def _notices(review: Review) -> list[dict[str, Any]]:
    notices = [
        {
            "message": f"codejury: reviewer {one_line(r.name)} failed ({one_line(r.model)}): "
            f"{one_line(r.error or 'no reason given')}. Its part of the review is missing.",
            "severity": "WARNING",
            "code": {"value": "codejury/reviewer-failed"},
        }
        for r in _failed(review)
    ]
    if not review.judged:
        notices.append(
            {
                "message": "codejury: the coordinator could not run; findings are as the reviewers reported them, "
                "not checked for false positives.",
                "severity": "WARNING",
                "code": {"value": "codejury/review-unjudged"},
            }
        )
    unreviewed = not_reviewed_notice(review)
    if unreviewed is not None:
        notices.append({"message": unreviewed, "severity": "WARNING", "code": {"value": "codejury/not-reviewed"}})
    notices += [
        {"message": f"codejury: {line}", "severity": "INFO", "code": {"value": "codejury/review-limited"}}
        for line in coverage_lines(review)
    ]
    if review.tests:
        notices.append(
            {"message": f"codejury: {one_line(review.tests)}", "severity": "INFO", "code": {"value": "codejury/tests"}}
        )
    return notices


def review_to_rdjson_dict(review: Review) -> dict[str, Any]:
    """The review as an rdjson ``DiagnosticResult`` (plain data)."""
    return {
        "source": {"name": "codejury"},
        "diagnostics": [*(_diagnostic(f) for f in review.findings), *_notices(review)],
    }


def render(review: Review) -> str:
    """The review as rdjson text."""
    return json.dumps(review_to_rdjson_dict(review), indent=2, ensure_ascii=False)
