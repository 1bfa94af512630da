"""The verdict stages: the rubric (``judge.verdict``) applied to what the panel and the judge produced, or to
a run that reached no model (nothing reviewable, a refusal).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from codejury.findings import Review, Usage
from codejury.judge.grounding import dropped as drop
from codejury.judge.threshold import BELOW_CONFIDENCE, split_by_confidence
from codejury.judge.verdict import decide_verdict, summarise, summarise_unreviewed
from codejury.runstate import Refusal, ReviewRun

if TYPE_CHECKING:
    from codejury.stages.judge import Judgement
    from codejury.stages.panel import PanelResult


def verdict_stage(
    run: ReviewRun,
    panel: PanelResult,
    judgement: Judgement,
    notes: Sequence[str] = (),
    stopped: str | None = None,
    tests: str | None = None,
) -> Review:
    """The finished review: verdict by the rubric, summary, every report, usage and time; ``tests`` is the line
    on the CI job's test reports (``--tests``).

    ``stopped`` says why the review stopped early (its cost ceiling): such a review is partial,
    and like an unjudged one it is never an approval.
    """
    findings, below = split_by_confidence(judgement.findings, run.settings.confidence_threshold)
    dropped = dict(judgement.dropped)
    drop(run, dropped, BELOW_CONFIDENCE, below)  # kept aside in ``below_threshold``, never published: each an event
    withheld = list(run.withheld)
    verdict = decide_verdict(
        findings, break_glass=run.break_glass, judged=judgement.judged and stopped is None, withheld=bool(withheld)
    )
    reports = [*panel.reports, *judgement.reports]
    failed = [r.name for r in reports if r.status == "failed"]
    total = sum((r.usage() for r in [*reports, judgement.coordinator]), Usage())
    review = Review(
        verdict=verdict,
        tier=run.selection.tier,
        summary=summarise(findings, verdict, failed, judgement.judged, run.break_glass, stopped, withheld),
        findings=findings,
        reviewers=reports,
        coordinator=judgement.coordinator,
        skipped_files=list(run.selection.skipped),
        usage=total.model_copy(update={"duration_s": run.elapsed()}),
        judged=judgement.judged,
        break_glass=run.break_glass,
        dropped_findings=dropped,
        below_threshold=below,
        replies=judgement.replies,
        cut_files=panel.cut_files,
        notes=[*([stopped] if stopped else []), *notes, *judgement.notes],
        tests=tests,
        approval_withheld=withheld,
    )
    run.events.emit(
        "review_finished",
        verdict=verdict,
        tier=review.tier,
        findings=len(findings),
        judged=review.judged,
        break_glass=run.break_glass,
        stopped=stopped,
        failed_reviewers=failed,
        dropped=review.dropped_findings,
        **review.usage.model_dump(),
    )
    return review


def not_reviewed_stage(run: ReviewRun) -> Review:
    """Nothing reached a model (every file skipped, or no reviewer enabled): never an approval."""
    selection = run.selection
    review = Review(
        verdict="approved" if run.break_glass else "not_reviewed",
        tier=selection.tier,
        skipped_files=list(selection.skipped),
        break_glass=run.break_glass,
        summary=summarise_unreviewed(
            selection.skipped, reviewable=len(selection.kept), tier=selection.tier, break_glass=run.break_glass
        ),
        usage=Usage(duration_s=run.elapsed()),
    )
    run.events.emit("review_finished", verdict=review.verdict, tier=review.tier, findings=0)
    return review


def refused_stage(run: ReviewRun, refusal: Refusal) -> Review:
    """A review a daily cap or the kill switch stopped before any model was called: not reviewed, with the
    reason, never an approval (break glass included: nothing looked at the change)."""
    review = Review(
        verdict="not_reviewed",
        tier=run.selection.tier,
        summary=f"Not reviewed: {refusal.reason}.",
        notes=[f"not reviewed: {refusal.reason}"],
        refused=refusal.reason,
        usage=Usage(duration_s=run.elapsed()),
    )
    run.events.emit("review_finished", verdict=review.verdict, tier=review.tier, findings=0)
    return review
