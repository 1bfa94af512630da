"""The ``codejury`` check run of a pull request: its conclusion, title, summary and annotations.

Never a success for a review that did not complete: nothing reviewed (verdict ``not_reviewed``:
every file skipped) → neutral, or failure when ``--fail-on`` says so; no reviewer succeeded →
failure, "partial: no reviewer succeeded" when the analyzers' hits were published unchecked,
"not reviewed" when there was nothing to publish (``failed_report``); ``--fail-on`` triggered →
failure; unjudged → neutral; an approval withheld (``Review.approval_withheld``: what the review
could not read, and why) → neutral, its reasons in the check's summary. Each open finding is an
annotation at its lines, with its grounds as the inline comments word them.
"""

from __future__ import annotations

from dataclasses import dataclass

from codejury.findings import Finding, Review
from codejury.fingerprint import unique_fingerprints
from codejury.forges.github.types import Annotation, AnnotationLevel
from codejury.forges.plan import PublishPlan
from codejury.forges.safety import checked, inline_code, safe_line
from codejury.judge.verdict import should_fail
from codejury.render import grounding_note
from codejury.render.markdown import VERDICT_HEADLINES

CHECK_NAME = "codejury"
_LEVELS: dict[str, AnnotationLevel] = {"critical": "failure", "warning": "warning", "suggestion": "notice"}
PARTIAL = "partial: no reviewer succeeded"
"""The title's head of a partial review: no reviewer answered, the analyzers' hits were published unchecked."""
_MESSAGE_LIMIT = 4000
CheckReport = tuple[str, str, str, list[Annotation]]
"""``(conclusion, title, summary, annotations)``."""


@dataclass(frozen=True)
class Outcome:
    """What the check run and the approval event need from the review."""

    review: Review
    fail_on: str = "requested_changes"
    approve: bool = True


def check_conclusion(outcome: Outcome) -> tuple[str, str]:
    """``(conclusion, title)``: never success for a review that did not complete."""
    review = outcome.review
    counts = {s: sum(1 for f in review.findings if f.severity == s) for s in ("critical", "warning", "suggestion")}
    tally = ", ".join(f"{n} {s}{'' if n == 1 else 's'}" for s, n in counts.items() if n) or "no findings"
    headline = VERDICT_HEADLINES.get(review.verdict, review.verdict)
    if review.verdict == "not_reviewed" and not review.break_glass:
        # Nothing to approve: neutral, never success (a failure only when --fail-on asks for one).
        conclusion = "failure" if should_fail(review, outcome.fail_on) else "neutral"  # type: ignore[arg-type]
        if review.refused is not None:
            return conclusion, f"not reviewed: {review.refused}"[:200]
        return conclusion, f"not reviewed: {len(review.skipped_files)} file(s) skipped, no model looked at the change"
    if not any(r.status == "ok" for r in review.reviewers):  # the analyzers' hits alone, unchecked: never success
        return "failure", f"{PARTIAL}: {tally}"
    if should_fail(review, outcome.fail_on):  # type: ignore[arg-type]
        return "failure", f"{headline}: {tally}"
    if not review.judged:
        return "neutral", f"not fully reviewed (unjudged): {tally}"
    if review.approval_withheld and not review.break_glass:
        return "neutral", f"not approved (approval withheld): {tally}"
    if review.break_glass or review.verdict in ("approved", "approved_with_comments"):
        return "success", f"{headline}: {tally}"
    return "neutral", f"{headline}: {tally}"


def check_report(outcome: Outcome, plan: PublishPlan, head_sha: str) -> CheckReport:
    """The check run of a published review."""
    conclusion, title = check_conclusion(outcome)
    findings = open_findings(outcome, plan)
    withheld = (
        ""
        if outcome.review.break_glass
        else "".join(f" Approval withheld: {safe_line(reason)}." for reason in outcome.review.approval_withheld)
    )
    summary = checked(
        f"**{safe_line(title)}** for commit {inline_code(head_sha[:12])}: "
        f"{len(findings)} open finding(s).{withheld} The summary comment on the pull request has the whole review."
    )
    return conclusion, title, summary, [_annotation(f) for f in findings]


def failed_report(message: str) -> CheckReport:
    """The check run of a review in which no reviewer succeeded."""
    summary = checked(f"No reviewer succeeded: {safe_line(message)}. Nothing was approved.")
    return "failure", "not reviewed", summary, []


def open_findings(outcome: Outcome, plan: PublishPlan) -> list[Finding]:
    findings = outcome.review.findings
    fps = unique_fingerprints(findings)
    return [f for fp, f in zip(fps, findings, strict=True) if plan.state.findings.get(fp) == "open"]


def _annotation(finding: Finding) -> Annotation:
    """The finding at its lines, its grounds last in the inline comments' words (``Grounds: ruff S608``)."""
    grounds = safe_line(grounding_note(finding))[: _MESSAGE_LIMIT // 2]
    text = safe_line(finding.body or finding.title)[: _MESSAGE_LIMIT - len(grounds) - 2]
    return Annotation(
        path=finding.path,
        start_line=max(1, finding.start_line),
        end_line=max(finding.start_line, finding.end_line, 1),
        level=_LEVELS.get(finding.severity, "notice"),
        message=f"{text}\n\n{grounds}",
        title=safe_line(finding.title)[:255],
    )
