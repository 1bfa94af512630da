"""A review as a GitLab Code Quality report (``--format codeclimate``), shown in the merge request widget.

A JSON array of Code Climate issues with the fields GitLab reads (``description``,
``check_name``, ``fingerprint``, ``severity``, ``location.path``, ``location.lines.begin``) plus
the Code Climate ones it ignores but other consumers use (``type``, ``categories``,
``content.body``, ``location.lines.end``). GitLab keys the report by fingerprint, so every entry's
fingerprint is unique (``unique_fingerprints``); the widget compares fingerprints between the
target branch's report and the merge request's, which is why they do not depend on lines. A finding an
analyzer's hit backs has the tool's rule as its ``check_name`` (``ruff/S608``), any other its category;
the description ends with what the finding stands on (``render.grounds_phrase``: ``ruff S608``,
``model, checked against the code``, ``model alone``), since the widget shows only the description.

The format has no run status. A reviewer that failed, an unjudged review, or a change nothing
reviewed (verdict ``not_reviewed``) becomes a ``major`` issue with check name
``codejury/reviewer-failed``, ``codejury/review-unjudged`` or ``codejury/not-reviewed`` located at
``.`` (the repository itself, line 1), with a fingerprint stable across runs: the widget shows it
as new while the reviewer keeps failing and as resolved once it runs again, instead of a clean
report. Each thing the review could not do (an analyzer skipped or failed, no head-side tree,
files left out or cut to fit) is a ``minor`` issue ``codejury/review-limited`` at the same place,
its fingerprint keyed on the line: a review that ran without its analyzers is never an empty,
clean-looking array.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from codejury.findings import Finding, Review, ReviewerReport
from codejury.fingerprint import unique_fingerprints
from codejury.render import clean_text, coverage_lines, finding_grounds, finding_rule, not_reviewed_notice, one_line

SEVERITIES: dict[str, str] = {"critical": "critical", "warning": "major", "suggestion": "minor"}
CATEGORIES: dict[str, str] = {
    "security": "Security",
    "performance": "Performance",
    "code_quality": "Bug Risk",
    "documentation": "Clarity",
    "agents_md": "Clarity",
    "release": "Compatibility",
    "compliance": "Style",
}
"""Code Climate category per reviewer (one of Bug Risk, Clarity, Compatibility, Complexity,
Duplication, Performance, Security, Style); other reviewers report ``Bug Risk``."""


def _failed(review: Review) -> list[ReviewerReport]:
    reports = [r for r in review.reviewers if r.status == "failed"]
    if review.coordinator is not None and review.coordinator.status == "failed":
        reports.append(review.coordinator)
    return reports


def _issue(f: Finding, fp: str) -> dict[str, Any]:
    tool, rule = finding_rule(f)
    out: dict[str, Any] = {
        "type": "issue",
        "check_name": f"{tool}/{rule}" if tool is not None else rule,
        "description": f"{one_line(f.title)} ({finding_grounds(f)})",
        "categories": [CATEGORIES.get(f.reviewer, "Bug Risk")],
        "severity": SEVERITIES.get(f.severity, "major"),
        "fingerprint": fp,
        "location": {"path": f.path, "lines": {"begin": f.start_line, "end": max(f.end_line, f.start_line)}},
    }
    body = clean_text(f.body).strip()
    if body:
        out["content"] = {"body": body}
    return out


def _notice(check_name: str, key: str, description: str) -> dict[str, Any]:
    return {
        "type": "issue",
        "check_name": check_name,
        "description": description,
        "categories": ["Bug Risk"],
        "severity": "major",
        "fingerprint": hashlib.sha256(f"{check_name}\0{key}".encode()).hexdigest()[:16],
        "location": {"path": ".", "lines": {"begin": 1}},
    }


def _notices(review: Review) -> list[dict[str, Any]]:
    notices = [
        _notice(
            "codejury/reviewer-failed",
            r.name,
            f"codejury: reviewer {one_line(r.name)} failed ({one_line(r.error or 'no reason given')}); "
            "its part of the review is missing.",
        )
        for r in _failed(review)
    ]
    if not review.judged:
        notices.append(
            _notice(
                "codejury/review-unjudged",
                "coordinator",
                "codejury: the coordinator could not run; findings are not checked for false positives.",
            )
        )
    unreviewed = not_reviewed_notice(review)
    if unreviewed is not None:
        notices.append(_notice("codejury/not-reviewed", "change", unreviewed))
    for line in coverage_lines(review):
        notices.append({**_notice("codejury/review-limited", line, f"codejury: {line}"), "severity": "minor"})
    if review.tests:
        line = one_line(review.tests)
        notices.append({**_notice("codejury/tests", line, f"codejury: {line}"), "severity": "info"})
    return notices


def review_to_codeclimate_list(review: Review) -> list[dict[str, Any]]:
    """The review as a Code Quality report (plain data)."""
    fingerprints = unique_fingerprints(review.findings)
    issues = [_issue(f, fp) for f, fp in zip(review.findings, fingerprints, strict=True)]
    return [*issues, *_notices(review)]


def render(review: Review) -> str:
    """The review as Code Quality JSON text."""
    return json.dumps(review_to_codeclimate_list(review), indent=2, ensure_ascii=False)
