"""The verdict rubric (biased toward approval), the CI failure rule and the review summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from codejury.findings import SEVERITY_RANK, VERDICT_RANK, Finding, Review, Verdict
from codejury.judge.dedup import normalise_category

VcsAction = Literal["approve", "unapprove", "block"]
FailOn = Literal["suggestion", "warning", "critical", "requested_changes", "never"]

VCS_ACTION: dict[Verdict, VcsAction] = {
    "approved": "approve",
    "approved_with_comments": "approve",
    "significant_concerns": "unapprove",
    "requested_changes": "block",
}
VERDICT_LABELS: dict[Verdict, str] = {
    "approved": "approved",
    "approved_with_comments": "approved with comments",
    "significant_concerns": "significant concerns",
    "requested_changes": "requested changes",
}
TRIVIAL_CONFIDENCE = 0.5
RISK_PATTERN_WARNINGS = 3


def _rubric(findings: Sequence[Finding]) -> Verdict:
    if any(f.severity == "critical" for f in findings):
        return "requested_changes"
    warnings = [f for f in findings if f.severity == "warning"]
    by_path = Counter(f.path for f in warnings)
    by_category = Counter(normalise_category(f.category) for f in warnings)
    if (
        len(warnings) >= RISK_PATTERN_WARNINGS
        or any(n >= 2 for n in by_path.values())
        or any(n >= 2 for n in by_category.values())
    ):
        return "significant_concerns"
    if warnings or any(f.confidence >= TRIVIAL_CONFIDENCE for f in findings):
        return "approved_with_comments"
    return "approved"


def decide_verdict(findings: Sequence[Finding], *, break_glass: bool = False, judged: bool = True) -> Verdict:
    """Apply the rubric; break glass forces approval, an unjudged review is never an approval."""
    if break_glass:
        return "approved"
    verdict = _rubric(findings)
    if not judged and VERDICT_RANK[verdict] < VERDICT_RANK["significant_concerns"]:
        return "significant_concerns"
    return verdict


def should_fail(review: Review, fail_on: FailOn) -> bool:
    """Whether CI should fail for this review under the ``--fail-on`` threshold."""
    if review.break_glass or fail_on == "never":
        return False
    if fail_on == "requested_changes":
        return review.verdict == "requested_changes"
    threshold = SEVERITY_RANK[fail_on]
    return any(SEVERITY_RANK.get(f.severity, 0) >= threshold for f in review.findings)


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def _join(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _counts(findings: Sequence[Finding]) -> str:
    by_severity = Counter(f.severity for f in findings)
    parts = []
    if by_severity["critical"]:
        parts.append(_plural(by_severity["critical"], "critical issue"))
    if by_severity["warning"]:
        parts.append(_plural(by_severity["warning"], "warning"))
    if by_severity["suggestion"]:
        parts.append(_plural(by_severity["suggestion"], "suggestion"))
    reviewers = len({f.reviewer for f in findings})
    return f"{_join(parts)} from {_plural(reviewers, 'reviewer')}"


def _headline(findings: Sequence[Finding]) -> str | None:
    serious = [f for f in findings if f.severity != "suggestion"]
    if not serious:
        return None
    top = min(serious, key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), -f.confidence))
    title = " ".join(top.title.split()).rstrip(".")
    return f"{top.reviewer}: {title} in {top.path}:{top.start_line}"


def summarise(
    findings: Sequence[Finding],
    verdict: Verdict,
    failed_reviewers: Sequence[str],
    judged: bool,
    break_glass: bool,
) -> str:
    """A short deterministic summary of the review, in one to three sentences."""
    if findings:
        headline = _headline(findings)
        first = _counts(findings) + (f"; {headline}." if headline else ".")
    elif verdict == "approved" or break_glass:
        first = "No problems found."
    else:
        first = "No findings were reported."
    sentences = [first]
    caveats = []
    failed = list(dict.fromkeys(failed_reviewers))
    if failed:
        caveats.append(f"{_plural(len(failed), 'reviewer')} failed ({', '.join(failed)})")
    if not judged:
        caveats.append("the coordinator could not run, so the findings are unjudged")
    if caveats:
        text = "; ".join(caveats)
        sentences.append(text[0].upper() + text[1:] + ".")
    if break_glass:
        would = VERDICT_LABELS[decide_verdict(findings, judged=judged)]
        sentences.append(f"Break glass: approved by a human override (the review alone: {would}).")
    return " ".join(sentences)
