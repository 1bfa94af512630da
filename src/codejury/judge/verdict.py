"""The verdict rubric (biased toward approval), the CI failure rule and the review summary (the verdict
stage that applies them to a run is ``codejury.stages.verdict``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from codejury.findings import SEVERITY_RANK, VERDICT_RANK, Finding, Review, SkippedFile, Verdict
from codejury.judge.dedup import normalise_category

VcsAction = Literal["approve", "unapprove", "block"]
FailOn = Literal["suggestion", "warning", "critical", "unreviewed", "requested_changes", "never"]

VCS_ACTION: dict[Verdict, VcsAction] = {
    "approved": "approve",
    "approved_with_comments": "approve",
    "significant_concerns": "unapprove",
    "requested_changes": "block",
    "not_reviewed": "unapprove",
}
VERDICT_LABELS: dict[Verdict, str] = {
    "approved": "approved",
    "approved_with_comments": "approved with comments",
    "significant_concerns": "significant concerns",
    "requested_changes": "requested changes",
    "not_reviewed": "not reviewed",
}
TRIVIAL_CONFIDENCE = 0.5
RISK_PATTERN_WARNINGS = 3
UNREVIEWED_LISTED = 5
"""How many skipped files a not-reviewed summary names (all are listed in ``skipped_files``)."""


def _rubric(findings: Sequence[Finding]) -> Verdict:
    counted = [f for f in findings if not f.advisory]  # an advisory finding never blocks or withdraws
    if any(f.severity == "critical" for f in counted):
        return "requested_changes"
    warnings = [f for f in counted if f.severity == "warning"]
    by_path = Counter(f.path for f in warnings)
    by_category = Counter(normalise_category(f.category) for f in warnings)
    if (
        len(warnings) >= RISK_PATTERN_WARNINGS
        or any(n >= 2 for n in by_path.values())
        or any(n >= 2 for n in by_category.values())
    ):
        return "significant_concerns"
    if warnings or any(f.severity == "warning" or f.confidence >= TRIVIAL_CONFIDENCE for f in findings):
        return "approved_with_comments"
    return "approved"


def decide_verdict(
    findings: Sequence[Finding], *, break_glass: bool = False, judged: bool = True, withheld: bool = False
) -> Verdict:
    """Apply the rubric; break glass forces approval, an unjudged review is never an approval, and neither is
    one with a finding held on security evidence (``Finding.withholds_approval``) that no person dismissed, nor
    one whose approval is ``withheld`` (``ReviewRun.withhold``)."""
    if break_glass:
        return "approved"
    verdict = _rubric(findings)
    held = any(f.withholds_approval for f in findings)
    if (held or withheld or not judged) and VERDICT_RANK[verdict] < VERDICT_RANK["significant_concerns"]:
        return "significant_concerns"
    return verdict


def should_fail(review: Review, fail_on: FailOn) -> bool:
    """Whether CI should fail for this review under the ``--fail-on`` threshold.

    The levels form one ladder, each failing on everything the looser ones fail on:
    ``never`` < ``requested_changes`` < ``unreviewed`` < ``critical`` < ``warning`` < ``suggestion``.
    So a ``not_reviewed`` review passes under the default (a lock-file-only bump must not fail
    CI) and fails from ``unreviewed`` up: a team strict enough to fail on a warning does not
    let a change that no model looked at through.
    """
    if review.break_glass or fail_on == "never":
        return False
    if review.verdict == "not_reviewed":
        return fail_on != "requested_changes"
    if fail_on in ("requested_changes", "unreviewed"):
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
    stopped: str | None = None,
    withheld: Sequence[str] = (),
) -> str:
    """A short deterministic summary of the review, in one to five sentences."""
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
    held = sum(1 for f in findings if f.withholds_approval)
    if held:
        caveats.append(
            f"{_plural(held, 'finding')} on security evidence that no model confirmed "
            f"{'withholds' if held == 1 else 'withhold'} approval until a person with write access dismisses "
            f"{'it' if held == 1 else 'them'}"
        )
    if stopped:
        caveats.append(f"the review is partial ({stopped}), so it is not an approval")
    if withheld:
        caveats.append(f"approval is withheld: {'; '.join(withheld)}")
    if caveats:
        text = "; ".join(caveats)
        sentences.append(text[0].upper() + text[1:] + ".")
    if break_glass:
        would = VERDICT_LABELS[decide_verdict(findings, judged=judged and not stopped, withheld=bool(withheld))]
        sentences.append(f"Break glass: approved by a human override (the review alone: {would}).")
    return " ".join(sentences)


def summarise_unreviewed(
    skipped: Sequence[SkippedFile], *, reviewable: int = 0, tier: str = "", break_glass: bool = False
) -> str:
    """The summary of a review in which no model looked at anything, saying why.

    ``reviewable`` counts the files the noise filter kept: when it is not zero, no reviewer was
    enabled for the change's ``tier``.
    """
    if not reviewable and not skipped:
        return "Nothing to review: the change is empty (no file differs from its base)."
    if reviewable:
        first = (
            f"Nothing was reviewed: no reviewer is enabled for a {tier} change "
            f"({_plural(reviewable, 'reviewable file')}); check the disabled reviewers in the config."
        )
    else:
        shown = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:UNREVIEWED_LISTED])
        more = f"; and {len(skipped) - UNREVIEWED_LISTED} more" if len(skipped) > UNREVIEWED_LISTED else ""
        first = f"Nothing was reviewed: every changed file was skipped ({shown}{more})."
    if break_glass:
        return f"{first} Break glass: approved by a human override (the review alone: not reviewed)."
    return f"{first} Nothing is approved; a human should look at this change."
