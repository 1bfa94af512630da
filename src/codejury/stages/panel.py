"""The reviewers stage: every reviewer of the panel as its own agent, concurrently, within the fan-out deadline.

Each reviewer runs on its model's gate (how many requests the model may have in flight), with
an explicit ``AgentWatch``: the earlier of the fan-out deadline and its own timeout, heartbeats
named after it, and the models that answered (a failback model when the chosen one failed).
Findings are anchored to lines of the change; the rest are dropped, counted and each an event. A
reviewer that fails never sinks the review; when none succeeds, ``PanelResult.failure`` says so
(the pipeline publishes the analyzers' hits as a partial review and fails with ``ReviewFailed``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from codejury.agents import voting
from codejury.agents.runner import AgentOutcome, ChangeContext, run_agent
from codejury.agents.tools import TOOL_NAMES
from codejury.findings import Finding, FindingDraft, ReviewerOutput, ReviewerReport, ReviewerStatus, Usage
from codejury.judge import anchors
from codejury.judge.grounding import is_weak
from codejury.models.profiles import ResolvedModel
from codejury.models.selection import ReviewModels
from codejury.resilience import AgentWatch
from codejury.runstate import ReviewRun


@dataclass
class PanelResult:
    """What the reviewers returned: anchored findings, drop counts, one report per reviewer."""

    findings: list[Finding]
    dropped: dict[str, int]
    reports: list[ReviewerReport]
    cut_files: list[str]
    watches: dict[str, AgentWatch] = field(default_factory=dict)
    failure: str | None = None
    """``no reviewer succeeded (...)`` with each reviewer's error, when none did; None otherwise."""

    @property
    def ok_names(self) -> list[str]:
        return [r.name for r in self.reports if r.status == "ok"]


def agent_model(
    run: ReviewRun, models: ReviewModels, name: str, spec: str, deadline: float
) -> tuple[ResolvedModel, AgentWatch]:
    """``spec`` for one agent run named ``name``: heartbeats say its name, no retry starts past ``deadline``."""
    warn = run.options.warn
    watch = AgentWatch(deadline=deadline, heartbeat=lambda line: warn(f"{name}: {line}"))
    return models.for_agent(spec, watch), watch


def agent_deadline(run: ReviewRun, name: str, outer: float) -> float:
    return min(outer, time.monotonic() + run.limits_for(name).timeout_s)


async def run_panel(run: ReviewRun, ctx: ChangeContext, models: ReviewModels) -> PanelResult:
    """Run every reviewer of the selection and collect what they found."""
    names = run.selection.names
    config, say = run.config, run.options.say
    outer = time.monotonic() + run.settings.overall_timeout_s
    watches: dict[str, AgentWatch] = {}
    lost: dict[str, list[FindingDraft]] = {}
    say(f"tier {run.selection.tier}: {', '.join(names)} ({count(len(names), 'reviewer')})")

    async def run_one(name: str) -> AgentOutcome:
        spec = run.selection.models[name]
        # Alone on its model: no other reviewer's prompt shares this change, the next review shares its focus.
        alone = sum(1 for other in names if run.selection.models.get(other) == spec) == 1
        if spec is None:
            say(f"{name} skipped: every model in its failback chain is disabled")
            return AgentOutcome(None, Usage(), error="every model in its failback chain is disabled")
        async with models.gates[spec]:
            say(f"{name} started ({spec})")
            deadline = agent_deadline(run, name, outer)
            model, watches[name] = agent_model(run, models, name, spec, deadline)
            samples = run.settings.votes if is_weak(run, models, spec) else 1

            async def sample(i: int) -> AgentOutcome:
                return await run_agent(
                    voting.sample_context(ctx, i),
                    name=name if i == 0 else f"{name}:sample{i}",
                    task_prompt=config.reviewers[name].prompt,
                    model=model,
                    output_type=ReviewerOutput,
                    allowed_tools=config.tool_permissions.get(name, config.reviewers[name].tools) & TOOL_NAMES,
                    limits=run.limits_for(name),
                    prices=run.prices,
                    events=run.events,
                    deadline=deadline,
                    model_settings=voting.sample_settings(i),
                    focus_first=samples == 1 and alone,
                )

            if samples > 1:
                outcome, lost[name] = await voting.voted(sample, samples, run.settings.votes_needed or samples // 2 + 1)
            else:
                outcome = await sample(0)
        found = len(outcome.output.findings) if isinstance(outcome.output, ReviewerOutput) else 0
        voted = f", {len(lost[name])} without enough votes" if lost.get(name) else ""
        say(finished(name, outcome, count(found, "finding") + voted))
        return outcome

    outcomes = await fan_out(names, run_one, run.settings.overall_timeout_s)
    result = _collect(run, outcomes, watches)
    for name, drafts in lost.items():
        for draft in drafts:
            result.dropped[voting.NO_MAJORITY] = result.dropped.get(voting.NO_MAJORITY, 0) + 1
            run.events.emit(
                "finding_dropped", reviewer=name, reason=voting.NO_MAJORITY, path=draft.path, line=draft.start_line
            )
    if result.cut_files:
        run.events.emit("context_cut", files=result.cut_files)
    if not result.ok_names:
        failures = "; ".join(f"{r.name}: {r.error}" for r in result.reports)
        run.events.emit("review_failed", reason="no reviewer succeeded", failures=failures)
        result.failure = f"no reviewer succeeded ({failures})"
    return result


def _collect(run: ReviewRun, outcomes: dict[str, AgentOutcome], watches: dict[str, AgentWatch]) -> PanelResult:
    files_by_path = {f.path: f for f in run.selection.kept}
    result = PanelResult(findings=[], dropped={}, reports=[], cut_files=[], watches=watches)
    for name in run.selection.names:
        outcome = outcomes[name]
        status: ReviewerStatus = "ok" if outcome.ok else "failed"
        model = answered_by(watches.get(name), run.selection.models[name])
        result.reports.append(ReviewerReport.from_usage(name, model, status, outcome.usage, outcome.error))
        if not (outcome.ok and isinstance(outcome.output, ReviewerOutput)):
            continue
        for draft in outcome.output.findings:
            anchored = anchors.anchor(name, draft, files_by_path)
            if isinstance(anchored, str):
                result.dropped[anchored] = result.dropped.get(anchored, 0) + 1
                run.events.emit(
                    "finding_dropped", reviewer=name, reason=anchored, path=draft.path, line=draft.start_line
                )
            else:
                result.findings.append(anchored)
    result.cut_files = sorted({path for outcome in outcomes.values() for path in outcome.cut})
    return result


def answered_by(watch: AgentWatch | None, chosen: str | None) -> str:
    """The model that answered last (a failback model when the chosen one failed), else the chosen one."""
    last = watch.last_answered if watch is not None else None
    return last or chosen or "-"


async def fan_out(
    names: Sequence[str], run_one: Callable[[str], Coroutine[Any, Any, AgentOutcome]], overall_s: float
) -> dict[str, AgentOutcome]:
    """Run every reviewer concurrently; past the overall timeout the unfinished ones fail."""
    tasks = {name: asyncio.create_task(run_one(name)) for name in names}
    done, pending = await asyncio.wait(tasks.values(), timeout=overall_s)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    out: dict[str, AgentOutcome] = {}
    for name, task in tasks.items():
        if task in done and not task.cancelled() and task.exception() is None:
            out[name] = task.result()
        else:
            exc = None if task.cancelled() or task not in done else task.exception()
            out[name] = AgentOutcome(None, Usage(), error="overall review timeout" if exc is None else str(exc))
    return out


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def finished(name: str, outcome: AgentOutcome, detail: str) -> str:
    """The progress line of a finished agent: its time, and what it found or why it failed."""
    took = f"{outcome.usage.duration_s:.1f} s"
    return f"{name} done in {took} ({detail})" if outcome.ok else f"{name} failed after {took}: {outcome.error}"
