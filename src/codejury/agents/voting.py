"""Voting: several samples of one reviewer, a finding kept only where enough of them agree.

A small model's real findings tend to come back when it is asked again with a little variation,
its inventions less so (Cursor's Bugbot keeps the majority of 8 passes over shuffled diffs).
Sample 0 is the reviewer's ordinary run; each further sample sees the patches in a rotated order
and samples with a temperature and its own seed. A finding is kept when at least ``needed``
samples report one at the same place (same file, lines within ``NEAR_LINES``); the kept draft
is the one from the earliest sample. Failed samples give no votes; when every sample fails the
reviewer fails with the first error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from pydantic_ai.settings import ModelSettings

from codejury.agents.runner import AgentOutcome, ChangeContext
from codejury.findings import FindingDraft, ReviewerOutput, Usage

NEAR_LINES = 2
SAMPLE_TEMPERATURE = 0.7
NO_MAJORITY = "too few votes"


def sample_context(ctx: ChangeContext, sample: int) -> ChangeContext:
    """``ctx`` with its patches rotated by ``sample`` places (sample 0 is ``ctx`` itself)."""
    if sample == 0 or len(ctx.patches) < 2:
        return ctx
    k = sample % len(ctx.patches)
    return replace(ctx, patches=[*ctx.patches[k:], *ctx.patches[:k]])


def sample_settings(sample: int) -> ModelSettings | None:
    """Sampling settings of one sample: the first is the ordinary deterministic run."""
    return None if sample == 0 else ModelSettings(temperature=SAMPLE_TEMPERATURE, seed=sample)


async def voted(
    run_sample: Callable[[int], Awaitable[AgentOutcome]], samples: int, needed: int
) -> tuple[AgentOutcome, list[FindingDraft]]:
    """Run ``samples`` samples one after another and vote; the outcome and the drafts that lost the vote."""
    outcomes = [await run_sample(i) for i in range(samples)]
    usage = sum((o.usage for o in outcomes), Usage())
    ok = [o.output for o in outcomes if o.ok and isinstance(o.output, ReviewerOutput)]
    cut = sorted({p for o in outcomes for p in o.cut})
    if not ok:
        return AgentOutcome(None, usage, error=outcomes[0].error or "no sample answered", cut=cut), []
    kept, lost = vote([o.findings for o in ok], needed)
    return AgentOutcome(ReviewerOutput(findings=kept), usage, cut=cut), lost


def vote(samples: Sequence[Sequence[FindingDraft]], needed: int) -> tuple[list[FindingDraft], list[FindingDraft]]:
    """The drafts at least ``needed`` samples agree on (one per place), and the drafts that lost."""
    kept: list[FindingDraft] = []
    lost: list[FindingDraft] = []
    for i, drafts in enumerate(samples):
        for draft in drafts:
            if any(_near(draft, k) for k in kept):
                continue
            votes = 1 + sum(any(_near(draft, other) for other in later) for later in samples[i + 1 :])
            if votes >= needed and not any(_near(draft, d) for earlier in samples[:i] for d in earlier):
                kept.append(draft)
            else:
                lost.append(draft)
    return kept, lost


def _near(a: FindingDraft, b: FindingDraft) -> bool:
    a_end, b_end = a.end_line or a.start_line, b.end_line or b.start_line
    return a.path == b.path and a.start_line <= b_end + NEAR_LINES and b.start_line <= a_end + NEAR_LINES
