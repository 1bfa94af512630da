"""Optional reflection pass: each reviewer sees the others' findings and amends the set.

Amendments: add (a new finding of its own), upgrade / downgrade (any finding's severity by
one step), retract (only its own findings). Runs before the judge when ``reflection = true``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from codejury.agents.runner import AgentOutcome, ChangeContext, Limits, run_agent
from codejury.findings import Finding, FindingDraft
from codejury.judge.coordinator import findings_for_judge
from codejury.models.pricing import PriceTable
from codejury.models.profiles import ResolvedModel
from codejury.record.events import EventLog

STEPS: tuple[str, ...] = ("suggestion", "warning", "critical")

REFLECTION_TASK = (
    "Other reviewers reviewed the same change. Read their findings below. Return amendments: "
    "'add' a finding in your focus that everyone missed (give it in 'finding'), 'upgrade' or "
    "'downgrade' a finding whose severity is wrong (give its id), or 'retract' one of YOUR OWN "
    "findings that you now think is wrong (give its id). Return an empty list when the set is right."
)


class Amendment(BaseModel):
    action: Literal["add", "upgrade", "downgrade", "retract"]
    id: str | None = Field(default=None, description="Id of the finding amended (not for add).")
    finding: FindingDraft | None = Field(default=None, description="The new finding (add only).")
    reason: str = ""


class Amendments(BaseModel):
    amendments: list[Amendment] = Field(default_factory=list)


async def reflect(
    ctx: ChangeContext,
    findings: Sequence[Finding],
    reviewers: Sequence[tuple[str, str, ResolvedModel]],
    *,
    limits: Limits,
    prices: PriceTable,
    events: EventLog,
    to_finding: Callable[[str, FindingDraft], Finding | None],
) -> tuple[list[Finding], list[tuple[str, AgentOutcome]]]:
    """Ask every (name, prompt, model) reviewer for amendments and apply them in order."""
    shown = findings_for_judge(findings)

    async def one(name: str, prompt: str, model: ResolvedModel) -> tuple[str, AgentOutcome]:
        outcome = await run_agent(
            ctx,
            name=f"{name}:reflection",
            task_prompt=prompt + "\n\n" + REFLECTION_TASK,
            model=model,
            output_type=Amendments,
            extra_user_text=shown,
            allowed_tools=frozenset({"read_file", "read_patch", "grep"}),
            limits=limits,
            prices=prices,
            events=events,
        )
        return name, outcome

    outcomes = await asyncio.gather(*(one(n, p, m) for n, p, m in reviewers))
    current = list(findings)
    for name, outcome in outcomes:
        if outcome.ok and isinstance(outcome.output, Amendments):
            current = apply_amendments(current, name, outcome.output.amendments, to_finding)
    return current, list(outcomes)


def apply_amendments(
    findings: list[Finding],
    reviewer: str,
    amendments: Sequence[Amendment],
    to_finding: Callable[[str, FindingDraft], Finding | None],
) -> list[Finding]:
    """Apply one reviewer's amendments; a retract of someone else's finding is ignored."""
    out = list(findings)
    for a in amendments:
        if a.action == "add" and a.finding is not None:
            new = to_finding(reviewer, a.finding)
            if new is not None and all(f.id != new.id for f in out):
                out.append(new)
            continue
        idx = next((i for i, f in enumerate(out) if f.id == a.id), None)
        if idx is None:
            continue
        f = out[idx]
        if a.action == "retract":
            if f.reviewer == reviewer:
                del out[idx]
        else:
            step = STEPS.index(f.severity) + (1 if a.action == "upgrade" else -1)
            if 0 <= step < len(STEPS):
                out[idx] = f.model_copy(update={"severity": STEPS[step]})
    return out
