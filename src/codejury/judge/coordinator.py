"""The coordinator's judge pass: the model decides which findings stand; the engine applies it.

The coordinator can keep, drop, re-categorise, move or re-grade findings, never invent
new ones. It cannot drop a confident critical finding (it may downgrade it to a warning
with a reason): text planted in a change must not be able to talk the judge into erasing
the one finding that blocks the merge. Nor can it drop or downgrade a finding that security
evidence backs (``judge.holds``): that finding is held, its reason shown next to the rule's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from codejury.agents.prompts import fence
from codejury.agents.runner import AgentOutcome, ChangeContext, Limits, run_agent
from codejury.findings import SEVERITY_RANK, Finding, Severity
from codejury.judge.holds import SecurityEvidence
from codejury.models.pricing import PriceTable
from codejury.models.profiles import ResolvedModel
from codejury.record.events import EventLog

PROTECTED_CONFIDENCE = 0.7


class JudgeDecision(BaseModel):
    """The coordinator's decision on one finding."""

    id: str = Field(description="The finding's id, exactly as given.")
    action: Literal["keep", "drop"] = Field(description="keep it in the review, or drop it")
    severity: Severity | None = Field(default=None, description="New severity, when it should change.")
    category: str | None = Field(default=None, description="New category, when it should change.")
    section: str | None = Field(default=None, description="Reviewer section it fits best, when different.")
    reason: str = Field(default="", description="Why, in one sentence.")


class JudgeOutput(BaseModel):
    """Decisions on the findings; findings without a decision are kept as they are."""

    decisions: list[JudgeDecision] = Field(default_factory=list)


def findings_for_judge(findings: Sequence[Finding]) -> str:
    """The findings as JSON inside their fence (their text came from models reading the change)."""
    rows = [
        {
            "id": f.id,
            "reviewer": f.reviewer,
            "category": f.category,
            "severity": f.severity,
            "path": f.path,
            "lines": f"{f.start_line}-{f.end_line}",
            "title": f.title,
            "body": f.body,
            "confidence": f.confidence,
        }
        for f in findings
    ]
    return "\n\nFindings to judge:\n" + fence("reviewer_findings", json.dumps(rows, indent=1)) + "\n"


async def judge(
    ctx: ChangeContext,
    findings: Sequence[Finding],
    *,
    prompt: str,
    model: ResolvedModel,
    limits: Limits,
    prices: PriceTable,
    events: EventLog,
    sections: Sequence[str],
    security: SecurityEvidence | None = None,
) -> tuple[list[Finding], dict[str, int], AgentOutcome]:
    """Run the coordinator over ``findings`` and apply its decisions."""
    outcome = await run_agent(
        ctx,
        name="coordinator",
        task_prompt=prompt,
        model=model,
        output_type=JudgeOutput,
        extra_user_text=findings_for_judge(findings),
        allowed_tools=frozenset({"read_file", "read_patch", "grep"}),
        limits=limits,
        prices=prices,
        events=events,
    )
    if not outcome.ok or not isinstance(outcome.output, JudgeOutput):
        return list(findings), {}, outcome
    kept, dropped = apply_decisions(findings, outcome.output.decisions, sections=sections, security=security)
    for d in outcome.output.decisions:
        events.emit("judge_decision", id=d.id, action=d.action, severity=d.severity, reason=d.reason[:300])
    return kept, dropped, outcome


def apply_decisions(
    findings: Sequence[Finding],
    decisions: Sequence[JudgeDecision],
    *,
    sections: Sequence[str],
    security: SecurityEvidence | None = None,
) -> tuple[list[Finding], dict[str, int]]:
    """Apply the judge's decisions; unknown ids are ignored, undecided findings are kept. A drop or a
    downgrade of a finding that security evidence backs holds it instead (at its severity)."""
    by_id = {d.id: d for d in decisions}
    kept: list[Finding] = []
    dropped: dict[str, int] = {}
    for f in findings:
        d = by_id.get(f.id)
        if d is None:
            kept.append(f)
            continue
        lower = d.severity is not None and SEVERITY_RANK[d.severity] < SEVERITY_RANK[f.severity]
        if security is not None and (d.action == "drop" or lower):
            said = f"The coordinator {'dropped it' if d.action == 'drop' else f'rated it a {d.severity}'}"
            reason = " ".join(d.reason.split())
            held = security.hold(f, said + (f": {reason}" if reason else "."))
            if held.withholds_approval:
                section = d.section if d.section and d.section in sections else held.reviewer
                kept.append(held.model_copy(update={"reviewer": section}) if section != held.reviewer else held)
                continue
        protected = f.severity == "critical" and f.confidence >= PROTECTED_CONFIDENCE
        if d.action == "drop" and not protected:
            dropped["dropped by judge"] = dropped.get("dropped by judge", 0) + 1
            continue
        update: dict[str, object] = {}
        severity = d.severity
        if d.action == "drop" and protected:
            severity = "warning"
        if severity and severity != f.severity:
            if protected and severity == "suggestion":
                severity = "warning"
            update["severity"] = severity
        if d.category:
            update["category"] = d.category[:60]
        if d.section and d.section in sections:
            update["reviewer"] = d.section
        kept.append(f.model_copy(update=update) if update else f)
    return kept, dropped
