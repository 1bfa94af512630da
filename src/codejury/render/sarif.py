"""A review as SARIF 2.1.0, for GitHub code scanning (``--format sarif``).

One run whose driver is codejury. A finding an analyzer's hit backs belongs to that tool's rule: the
run's ``tool.extensions`` hold one component per analyzer (``ruff``, ``shellcheck``...) with its rules,
the result's ``ruleId`` is namespaced by the tool (``ruff/S608``) and its ``rule`` points into the
component. Any other finding belongs to a driver rule, its category. Every rule carries ``properties``:
``tags`` (the reviewers that own it, and ``security`` for a security rule) and, for a security rule,
``security-severity`` as GitHub code scanning reads it (from its most severe finding:
``tool_rules.SECURITY_SEVERITY``); an analyzer's rule has the tool's ``helpUri`` where the tool
documents one. Each result says what it stands on (``render.grounds_phrase``) at the end of its
message and as ``properties.grounds``. One result per finding, with the fields GitHub needs
(``message.text``, a repository-relative ``artifactLocation.uri``,
``region.startLine`` and ``partialFingerprints``, see FORGES.md). A finding's suggested
replacement becomes a SARIF ``fix``. Reviewers that failed, an unjudged review and a change that
nothing reviewed (verdict ``not_reviewed``: every file skipped, the skipped files in the
notification's properties) are reported as ``toolExecutionNotifications`` on ``invocations[0]``,
with ``executionSuccessful: false``, so an upload never reads as a clean, complete analysis when
part of the panel, or all of it, did not run. What else the review could not do (an analyzer
skipped or failed, no head-side tree, files left out or cut to fit) is one ``review-limited``
warning notification per line: the review itself completed, so these leave ``executionSuccessful``
as it is.
Verdict, tier and the other review facts ride in the run's property bag.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from codejury import __version__
from codejury.findings import SEVERITY_RANK, Finding, Review, ReviewerReport
from codejury.fingerprint import unique_fingerprints
from codejury.render import clean_text, coverage_lines, finding_grounds, finding_rule, not_reviewed_notice, one_line
from codejury.render.tool_rules import SECURITY_SEVERITY, help_uri, is_security_rule, rule_name

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "codejury/v1"
LEVELS: dict[str, str] = {"critical": "error", "warning": "warning", "suggestion": "note"}
NOTIFICATIONS: list[dict[str, Any]] = [
    {"id": "reviewer-failed", "shortDescription": {"text": "A reviewer failed; its part of the review is missing."}},
    {"id": "review-unjudged", "shortDescription": {"text": "The coordinator could not judge the findings."}},
    {"id": "not-reviewed", "shortDescription": {"text": "Nothing was reviewed: no model looked at the change."}},
    {
        "id": "review-limited",
        "shortDescription": {
            "text": "Part of the review did not run: an analyzer skipped or failed, no head-side tree, files left out."
        },
    },
    {"id": "tests", "shortDescription": {"text": "The CI job's test reports: how many tests ran and which failed."}},
]
"""Descriptors of the notifications a run may carry (``driver.notifications``)."""


def rule_id(finding: Finding) -> str:
    """The result's ``ruleId``: ``tool/rule`` for an analyzer's rule (``ruff/S608``), else the category."""
    tool, rule = finding_rule(finding)
    return f"{tool}/{rule}" if tool is not None else rule


def _failed(review: Review) -> list[ReviewerReport]:
    reports = [r for r in review.reviewers if r.status == "failed"]
    if review.coordinator is not None and review.coordinator.status == "failed":
        reports.append(review.coordinator)
    return reports


def _message(f: Finding) -> str:
    body = clean_text(f.body).strip()
    title = one_line(f.title)
    return "\n\n".join([title, *([body] if body else []), f"Grounds: {finding_grounds(f)}"])


def _region(f: Finding) -> dict[str, int]:
    return {"startLine": f.start_line, "endLine": max(f.end_line, f.start_line)}


def _artifact(f: Finding) -> dict[str, str]:
    return {"uri": quote(f.path.replace("\\", "/"), safe="/")}


def _result(f: Finding, fp: str, index: int, component: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"ruleId": rule_id(f), "ruleIndex": index}
    if component is not None:  # the rule is in tool.extensions[component], not in the driver
        out["rule"] = {"id": rule_id(f), "index": index, "toolComponent": {"index": component}}
    out |= {
        "level": LEVELS.get(f.severity, "warning"),
        "message": {"text": _message(f)},
        "locations": [{"physicalLocation": {"artifactLocation": _artifact(f), "region": _region(f)}}],
        "partialFingerprints": {FINGERPRINT_KEY: fp},
    }
    if f.suggestion is not None and f.suggestion.strip():
        out["fixes"] = [
            {
                "description": {"text": "Suggested change"},
                "artifactChanges": [
                    {
                        "artifactLocation": _artifact(f),
                        "replacements": [
                            {
                                "deletedRegion": _region(f),
                                "insertedContent": {"text": clean_text(f.suggestion).rstrip("\n")},
                            }
                        ],
                    }
                ],
            }
        ]
    out["properties"] = {
        "reviewer": f.reviewer,
        "severity": f.severity,
        "confidence": f.confidence,
        "category": f.category,
        "grounds": finding_grounds(f),
        "evidence": list(f.evidence),
    }
    return out


def _descriptor(tool: str | None, rule: str, findings: list[Finding]) -> dict[str, Any]:
    """The rule's reporting descriptor, its properties drawn from the tool's docs and the findings of the rule."""
    security = any(f.reviewer == "security" for f in findings) or (tool is not None and is_security_rule(tool, rule))
    tags = sorted({f.reviewer for f in findings} | ({"security"} if security else set()))
    properties: dict[str, Any] = {"tags": tags}
    if security:
        worst = max(findings, key=lambda f: SEVERITY_RANK.get(f.severity, 0)).severity
        properties["security-severity"] = SECURITY_SEVERITY.get(worst, SECURITY_SEVERITY["warning"])
    out: dict[str, Any] = {"id": f"{tool}/{rule}" if tool is not None else rule}
    name = rule_name(tool, rule) if tool is not None else None
    if name:
        out["name"] = name
    out["shortDescription"] = {"text": f"{tool} {rule}" + (f" ({name})" if name else "") if tool is not None else rule}
    uri = help_uri(tool, rule) if tool is not None else None
    if uri:
        out["helpUri"] = uri
    out["properties"] = properties
    return out


def _tool(review: Review) -> tuple[dict[str, Any], list[tuple[int, int | None]]]:
    """``run.tool`` (the driver and one extension per analyzer) and each finding's (rule index, component index)."""
    by_rule: dict[tuple[str | None, str], list[Finding]] = {}
    for f in review.findings:
        by_rule.setdefault(finding_rule(f), []).append(f)
    tools = sorted({tool for tool, _ in by_rule if tool is not None})
    component = {tool: i for i, tool in enumerate(tools)}
    rules: dict[str | None, list[str]] = {owner: [] for owner in [None, *tools]}
    for owner, rule in sorted(by_rule, key=lambda key: (key[0] or "", key[1])):
        rules[owner].append(rule)
    tool: dict[str, Any] = {
        "driver": {
            "name": "codejury",
            "version": __version__,
            "rules": [_descriptor(None, rule, by_rule[None, rule]) for rule in rules[None]],
            "notifications": NOTIFICATIONS,
        }
    }
    if tools:
        tool["extensions"] = [
            {"name": name, "rules": [_descriptor(name, rule, by_rule[name, rule]) for rule in rules[name]]}
            for name in tools
        ]
    places = []
    for f in review.findings:
        owner, rule = finding_rule(f)
        places.append((rules[owner].index(rule), component.get(owner) if owner is not None else None))
    return tool, places


def _notifications(review: Review) -> list[dict[str, Any]]:
    notes: list[dict[str, Any]] = [
        {
            "level": "error",
            "message": {
                "text": f"Reviewer {one_line(r.name)} failed ({one_line(r.model)}): "
                f"{one_line(r.error or 'no reason given')}. Its part of the review is missing."
            },
            "descriptor": {"id": "reviewer-failed"},
            "properties": {"reviewer": r.name, "model": r.model},
        }
        for r in _failed(review)
    ]
    if not review.judged:
        notes.append(
            {
                "level": "warning",
                "message": {
                    "text": "The coordinator could not run: findings are as the reviewers reported them, "
                    "not checked for false positives."
                },
                "descriptor": {"id": "review-unjudged"},
            }
        )
    unreviewed = not_reviewed_notice(review)
    if unreviewed is not None:
        notes.append(
            {
                "level": "warning",
                "message": {"text": unreviewed},
                "descriptor": {"id": "not-reviewed"},
                "properties": {"skippedFiles": [s.model_dump() for s in review.skipped_files]},
            }
        )
    return notes


def _limits(review: Review) -> list[dict[str, Any]]:
    return [
        {"level": "warning", "message": {"text": f"codejury: {line}"}, "descriptor": {"id": "review-limited"}}
        for line in coverage_lines(review)
    ] + ([{"level": "note", "message": {"text": f"codejury: {one_line(review.tests)}"}, "descriptor": {"id": "tests"}}]
         if review.tests else [])  # fmt: skip


def review_to_sarif_dict(review: Review) -> dict[str, Any]:
    """The review as a SARIF log (plain data)."""
    tool, places = _tool(review)
    fingerprints = unique_fingerprints(review.findings)
    failures = _notifications(review)
    notifications = [*failures, *_limits(review)]
    invocation: dict[str, Any] = {"executionSuccessful": not failures}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    run: dict[str, Any] = {
        "tool": tool,
        "invocations": [invocation],
        "results": [
            _result(f, fp, index, component)
            for f, fp, (index, component) in zip(review.findings, fingerprints, places, strict=True)
        ],
        "properties": {
            "verdict": review.verdict,
            "tier": review.tier,
            "judged": review.judged,
            "breakGlass": review.break_glass,
            "failedReviewers": [r.name for r in _failed(review)],
            "summary": clean_text(review.summary).strip(),
            "notes": coverage_lines(review),
            "tests": review.tests,
        },
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(review: Review) -> str:
    """The review as SARIF 2.1.0 JSON text."""
    return json.dumps(review_to_sarif_dict(review), indent=2, ensure_ascii=False)
