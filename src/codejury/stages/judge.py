"""The judge stage: reflection (optional), dedup, the coordinator's pass, and disputed findings.

Everything between "the reviewers answered" and "the rubric decides": reviewers may amend each
other's findings (reflection), the same issue found twice is kept once, the coordinator drops
speculative findings and re-categorises, and on a forge re-review it judges the human replies
that dispute earlier findings. A coordinator that cannot run leaves the review unjudged, which
is never an approval. Findings held on security evidence (``judge.holds``) survive every model's
word and leave only when a person dismissed them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from codejury.agents.runner import AgentOutcome, ChangeContext
from codejury.analyzers.junit import TestCoverage
from codejury.evidence import Evidence
from codejury.findings import SEVERITY_RANK, Finding, FindingDraft, ReplyVerdict, ReviewerReport
from codejury.fingerprint import fingerprint
from codejury.judge import anchors, coordinator, reflection
from codejury.judge.dedup import deduplicate
from codejury.judge.grounding import (
    DUPLICATE,
    MAX_CANDIDATES,
    Grounded,
    demote_unproven,
    dropped,
    evidence_alone,
    ground_stage,
    is_weak,
)
from codejury.judge.holds import DISMISSED, SecurityEvidence, release_dismissed
from codejury.judge.replies import judge_disputes
from codejury.models.selection import ReviewModels
from codejury.reviewers.roster import coordinator_prompt
from codejury.runstate import ReviewRun
from codejury.stages.panel import PanelResult, agent_model, answered_by, count, finished

NO_MODEL = "every model in its failback chain is disabled"
JUDGE_DROPPED = "dropped by judge"
"""The ``dropped_findings`` reason of a finding the coordinator dropped."""
RETRACTED = "retracted by its reviewer"
"""The ``dropped_findings`` reason of a finding its own reviewer retracted in reflection."""


@dataclass
class Judgement:
    """The judged findings, what was dropped and why, and the reports of every extra agent run."""

    findings: list[Finding]
    dropped: dict[str, int]
    coordinator: ReviewerReport
    judged: bool = True
    reports: list[ReviewerReport] = field(default_factory=list)
    replies: list[ReplyVerdict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Lines for the review's notes: what grounding could not check."""


async def judge_stage(
    run: ReviewRun,
    ctx: ChangeContext,
    models: ReviewModels,
    panel: PanelResult,
    evidence: Sequence[Evidence] = (),
    tests: TestCoverage | None = None,
) -> Judgement:
    """Reflection → dedup → grounding (evidence, verification) → coordinator → disputes.

    Every finding left out on the way is a ``finding_dropped`` event and counted under its reason."""
    counts = dict(panel.dropped)
    findings, reports = await _reflect(run, ctx, models, panel, counts)
    findings, same = _unique(findings)
    findings, dupes = deduplicate(findings)
    dropped(run, counts, DUPLICATE, [*same, *(d for d, _ in dupes)])
    if tests is not None:  # a failing test covering a finding's function backs it (``junit:<test id>``)
        findings = tests.back(findings)
    grounded = await ground_stage(run, models, findings, evidence)
    for reason, n in grounded.dropped.items():
        counts[reason] = counts.get(reason, 0) + n
    judgement = await _coordinate(run, ctx, models, grounded.findings, counts, SecurityEvidence(evidence))
    judgement.reports[:0] = [*reports, *grounded.reports]
    judgement.notes += grounding_notes(grounded, f"{{hits}} past the review's limit of {MAX_CANDIDATES} model checks")
    # The coordinator may re-grade: a weak model's claim that nothing backs still cannot block.
    judgement.findings = [
        demote_unproven(f, is_weak(run, models, run.selection.models.get(f.reviewer))) for f in judgement.findings
    ]
    await _disputes(run, ctx, models, judgement)
    judgement.findings, released = release_dismissed(
        judgement.findings, run.change.meta.previous, run.options.disputes, judgement.replies
    )
    dropped(run, judgement.dropped, DISMISSED, released)
    judgement.findings.sort(key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), f.path, f.start_line))
    return judgement


def evidence_judgement(
    run: ReviewRun, models: ReviewModels, panel: PanelResult, evidence: Sequence[Evidence]
) -> Judgement:
    """The judgement of a review in which no reviewer answered: every analyzer hit published unchecked
    (``grounding.evidence_alone``), unjudged, never an approval. A hit a person dismissed stays dismissed."""
    grounded = evidence_alone(run, models, evidence)
    spec = run.selection.models.get("coordinator")
    coordinator_report = ReviewerReport(name="coordinator", model=spec or "-", status="skipped")
    judgement = Judgement(grounded.findings, dict(panel.dropped), coordinator_report, judged=False)
    judgement.notes += grounding_notes(grounded, "no reviewer answered to check {hits}")
    judgement.findings, released = release_dismissed(judgement.findings, run.change.meta.previous)
    dropped(run, judgement.dropped, DISMISSED, released)
    judgement.findings.sort(key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), f.path, f.start_line))
    return judgement


def grounding_notes(grounded: Grounded, unchecked: str) -> list[str]:
    """The review's lines on analyzer hits no model checked: one for failed checks, one for the hits published
    unchecked (``unchecked``: why, with ``{hits}`` for their count)."""
    notes = []
    if grounded.unconfirmed:
        notes.append(
            f"the check of {count(grounded.unconfirmed, 'analyzer hit')} failed (an error, a timeout, an answer "
            "that did not parse, or the cost ceiling): published unconfirmed, in the analyzer's words"
        )
    if grounded.unchecked:
        hits = count(grounded.unchecked, "analyzer hit")
        notes.append(
            unchecked.format(hits=hits) + ": published unchecked, in the analyzer's words (advisory unless "
            "critical; security hits held for a person)"
        )
    return notes


async def _reflect(
    run: ReviewRun, ctx: ChangeContext, models: ReviewModels, panel: PanelResult, counts: dict[str, int]
) -> tuple[list[Finding], list[ReviewerReport]]:
    """The findings after reflection: a finding its reviewer retracted, or one a reviewer added that cannot be
    anchored, is a ``finding_dropped`` event counted in ``counts``."""
    if not (run.settings.reflection and panel.findings):
        return panel.findings, []
    files_by_path = {f.path: f for f in run.selection.kept}

    def to_finding(reviewer: str, draft: FindingDraft) -> Finding | None:
        res = anchors.anchor(reviewer, draft, files_by_path)
        if isinstance(res, str):
            counts[res] = counts.get(res, 0) + 1
            run.events.emit("finding_dropped", reviewer=reviewer, reason=res, path=draft.path, line=draft.start_line)
            return None
        return res

    limits = run.limits_for("reflection")
    trio = []
    for name in panel.ok_names:
        spec = run.selection.models[name]
        if spec is not None:
            model, _ = agent_model(run, models, f"{name}:reflection", spec, time.monotonic() + limits.timeout_s)
            trio.append((name, run.config.reviewers[name].prompt, model))
    findings, outcomes = await reflection.reflect(
        ctx, panel.findings, trio, limits=limits, prices=run.prices, events=run.events, to_finding=to_finding
    )
    reports = [_report(f"{name}:reflection", run.selection.models[name] or "-", outcome) for name, outcome in outcomes]
    left = {f.id for f in findings}
    dropped(run, counts, RETRACTED, [f for f in panel.findings if f.id not in left])
    return findings, reports


async def _coordinate(
    run: ReviewRun,
    ctx: ChangeContext,
    models: ReviewModels,
    findings: list[Finding],
    counts: dict[str, int],
    security: SecurityEvidence,
) -> Judgement:
    spec = run.selection.models["coordinator"]
    if not findings:
        return Judgement(findings, counts, ReviewerReport(name="coordinator", model=spec or "-", status="skipped"))
    if spec is None:
        report = ReviewerReport(name="coordinator", model="-", status="failed", error=NO_MODEL)
        return Judgement(findings, counts, report, judged=False)
    grounded: list[Finding] = []
    if is_weak(run, models, spec):
        # Measured on the demo: the embedded coordinator kept 6 of 6 checked findings and took 50 s.
        # A finding that passed its own focused check or rests on an analyzer gets no second opinion
        # from a weak model: it would add time, not judgement, and a weak model never rejects an
        # analyzer's hit (judge.grounding). Such findings are kept as they are; the rest are judged.
        grounded = [f for f in findings if f.verified or f.evidence]
        findings = [f for f in findings if not (f.verified or f.evidence)]
        if not findings:
            run.options.say("coordinator skipped: every finding passed its own check or rests on an analyzer")
            return Judgement(grounded, counts, ReviewerReport(name="coordinator", model=spec, status="skipped"))
    aside = f" ({count(len(grounded), 'checked or analyzer-backed finding')} kept as is)" if grounded else ""
    run.options.say(f"coordinator started ({spec}): judging {count(len(findings), 'finding')}{aside}")
    limits = run.limits_for("coordinator")
    model, watch = agent_model(run, models, "coordinator", spec, time.monotonic() + limits.timeout_s)
    kept, _, outcome = await coordinator.judge(
        ctx,
        findings,
        prompt=coordinator_prompt(),
        model=model,
        limits=limits,
        prices=run.prices,
        events=run.events,
        sections=list(run.config.reviewers),
        security=security,
    )
    run.options.say(finished("coordinator", outcome, f"{count(len(kept), 'finding')} kept"))
    left = {f.id for f in kept}
    dropped(run, counts, JUDGE_DROPPED, [f for f in findings if f.id not in left])
    report = _report("coordinator", answered_by(watch, spec), outcome)
    return Judgement([*grounded, *kept], counts, report, judged=outcome.ok)


async def _disputes(run: ReviewRun, ctx: ChangeContext, models: ReviewModels, judgement: Judgement) -> None:
    spec = run.selection.models["coordinator"]
    if not run.options.disputes or spec is None:
        return
    limits = run.limits_for("coordinator")
    model, watch = agent_model(run, models, "coordinator", spec, time.monotonic() + limits.timeout_s)
    replies, outcomes = await judge_disputes(
        ctx,
        run.options.disputes,
        {fingerprint(f): f for f in judgement.findings},
        model=model,
        limits=limits,
        prices=run.prices,
        events=run.events,
    )
    judgement.replies = replies
    judgement.reports += [_report("coordinator:reply", answered_by(watch, spec), o) for o in outcomes]


def _report(name: str, model: str, outcome: AgentOutcome) -> ReviewerReport:
    return ReviewerReport.from_usage(name, model, "ok" if outcome.ok else "failed", outcome.usage, outcome.error)


def _unique(findings: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """The findings once per id (a reviewer reporting the same thing twice), and the repeats."""
    seen: set[str] = set()
    out, again = [], []
    for f in findings:
        if f.id not in seen:
            seen.add(f.id)
            out.append(f)
        else:
            again.append(f)
    return out, again
