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

from codejury.agents.panel import PanelResult, agent_model, answered_by, count, finished
from codejury.agents.runner import AgentOutcome, ChangeContext
from codejury.analyzers.junit import TestCoverage
from codejury.evidence import Evidence
from codejury.findings import SEVERITY_RANK, Finding, FindingDraft, ReplyVerdict, ReviewerReport
from codejury.fingerprint import fingerprint
from codejury.judge import anchors, coordinator, reflection
from codejury.judge.dedup import deduplicate
from codejury.judge.grounding import demote_unproven, ground_stage, is_weak
from codejury.judge.holds import DISMISSED, SecurityEvidence, release_dismissed
from codejury.judge.replies import judge_disputes
from codejury.models.selection import ReviewModels
from codejury.reviewers.roster import coordinator_prompt
from codejury.runstate import ReviewRun

NO_MODEL = "every model in its failback chain is disabled"


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
    """Reflection → dedup → grounding (evidence, verification) → coordinator → disputes."""
    findings, reports = await _reflect(run, ctx, models, panel)
    findings, dupes = deduplicate(_unique(findings))
    if tests is not None:  # a failing test covering a finding's function backs it (``junit:<test id>``)
        findings = tests.back(findings)
    dropped = dict(panel.dropped)
    if dupes:
        dropped["duplicate"] = dropped.get("duplicate", 0) + len(dupes)
    grounded = await ground_stage(run, models, findings, evidence)
    for reason, n in grounded.dropped.items():
        dropped[reason] = dropped.get(reason, 0) + n
    judgement = await _coordinate(run, ctx, models, grounded.findings, dropped, SecurityEvidence(evidence))
    judgement.reports[:0] = [*reports, *grounded.reports]
    if grounded.unconfirmed:
        judgement.notes.append(
            f"the check of {count(grounded.unconfirmed, 'analyzer hit')} failed (an error, a timeout, an answer "
            "that did not parse, or the cost ceiling): published unconfirmed, in the analyzer's words"
        )
    # The coordinator may re-grade: a weak model's claim that nothing backs still cannot block.
    judgement.findings = [
        demote_unproven(f, is_weak(run, models, run.selection.models.get(f.reviewer))) for f in judgement.findings
    ]
    await _disputes(run, ctx, models, judgement)
    judgement.findings, released = release_dismissed(
        judgement.findings, run.change.meta.previous, run.options.disputes, judgement.replies
    )
    if released:
        judgement.dropped[DISMISSED] = judgement.dropped.get(DISMISSED, 0) + released
    judgement.findings.sort(key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), f.path, f.start_line))
    return judgement


async def _reflect(
    run: ReviewRun, ctx: ChangeContext, models: ReviewModels, panel: PanelResult
) -> tuple[list[Finding], list[ReviewerReport]]:
    if not (run.settings.reflection and panel.findings):
        return panel.findings, []
    files_by_path = {f.path: f for f in run.selection.kept}

    def to_finding(reviewer: str, draft: FindingDraft) -> Finding | None:
        res = anchors.anchor(reviewer, draft, files_by_path)
        return None if isinstance(res, str) else res

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
    return findings, reports


async def _coordinate(
    run: ReviewRun,
    ctx: ChangeContext,
    models: ReviewModels,
    findings: list[Finding],
    dropped: dict[str, int],
    security: SecurityEvidence,
) -> Judgement:
    spec = run.selection.models["coordinator"]
    if not findings:
        return Judgement(findings, dropped, ReviewerReport(name="coordinator", model=spec or "-", status="skipped"))
    if spec is None:
        report = ReviewerReport(name="coordinator", model="-", status="failed", error=NO_MODEL)
        return Judgement(findings, dropped, report, judged=False)
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
            return Judgement(grounded, dropped, ReviewerReport(name="coordinator", model=spec, status="skipped"))
    aside = f" ({count(len(grounded), 'checked or analyzer-backed finding')} kept as is)" if grounded else ""
    run.options.say(f"coordinator started ({spec}): judging {count(len(findings), 'finding')}{aside}")
    limits = run.limits_for("coordinator")
    model, watch = agent_model(run, models, "coordinator", spec, time.monotonic() + limits.timeout_s)
    kept, judge_dropped, outcome = await coordinator.judge(
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
    for reason, n in judge_dropped.items():
        dropped[reason] = dropped.get(reason, 0) + n
    report = _report("coordinator", answered_by(watch, spec), outcome)
    return Judgement([*grounded, *kept], dropped, report, judged=outcome.ok)


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


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: set[str] = set()
    out = []
    for f in findings:
        if f.id not in seen:
            seen.add(f.id)
            out.append(f)
    return out
