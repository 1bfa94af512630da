"""The walkthrough stage: the coordinator's model explains the change while the reviewers review it.

``walkthrough_started`` starts it (an asyncio task that, for a trivial change or with ``describe = false``,
only says on stderr why there is none): beside the panel on a model that serves requests in parallel, after
the judge on one that does not (``beside_the_panel``); the pipeline awaits it before the verdict, or cancels
it when the review fails first. On a weak model (the embedded one) no model writes it: codejury lists
it from the diff (``stages.outline``). The review carries the walkthrough
(``Review.walkthrough``), its cost in the review's usage, and one note when its model could not write one.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from codejury.agents.walkthrough import Written, skip_reason, write_walkthrough
from codejury.findings import Review, Usage
from codejury.models.selection import ReviewModels, is_weak_spec
from codejury.resilience import AgentWatch
from codejury.runstate import ReviewRun
from codejury.stages.criteria import run_criteria
from codejury.stages.outline import outlined

AGENT = "walkthrough"


def walkthrough_started(run: ReviewRun, models: ReviewModels) -> asyncio.Task[Written]:
    """The walkthrough of ``run``'s kept files, being written (or the line why none is)."""
    return asyncio.create_task(_written(run, models))


def beside_the_panel(run: ReviewRun, models: ReviewModels) -> bool:
    """Whether the walkthrough runs while the reviewers do: only on a model that serves requests in parallel.
    On one that serves one at a time (the embedded model) it runs after the judge, so it neither waits in
    the reviewers' queue nor replaces the prompt prefix they share in the model's cache."""
    spec = run.selection.models.get("coordinator")
    profile = models.profiles.get(spec) if spec is not None else None
    return profile is None or profile.parallel_requests > 1


def with_walkthrough(review: Review, written: Written) -> Review:
    """``review`` carrying the walkthrough and its cost (its note is among the review's notes already)."""
    usage = review.usage + written.usage
    return review.model_copy(
        update={
            "walkthrough": written.walkthrough,
            "usage": usage.model_copy(update={"duration_s": review.usage.duration_s}),
        }
    )


def from_the_diff(run: ReviewRun) -> bool:
    """Whether the walkthrough is listed from the diff (``stages.outline``): the coordinator's model is weak."""
    return is_weak_spec(run.config, run.selection.models.get("coordinator"))


async def describe_stage(run: ReviewRun, models: ReviewModels | None) -> Written:
    """The walkthrough alone (``codejury describe``): asked for, so written whatever the tier or ``describe``.
    ``models`` may be None when it is listed from the diff (``from_the_diff``): no model is loaded then."""
    if not run.selection.kept:
        return Written(None, "walkthrough: not written, every changed file was skipped", Usage())
    return replace(await _written(run, models, asked=True), placed_in=run.settings.describe_in)


async def _written(run: ReviewRun, models: ReviewModels | None, *, asked: bool = False) -> Written:
    skipped = None if asked else skip_reason(run.selection.tier, run.settings.describe)
    spec = run.selection.models.get("coordinator")
    if skipped is not None:  # by design: one progress line, not a note on what the review could not do
        run.options.say(skipped)
        run.events.emit("walkthrough", status="skipped", reason=skipped)
        return Written(None, None, Usage())
    if from_the_diff(run):  # a weak model's summary is not trusted: listed from the diff
        run.options.say(f"walkthrough: listed from the diff, without a model ({spec} is weak)")
        started = time.monotonic()
        walkthrough = outlined(run.change, run.selection.kept)
        usage = Usage(duration_s=round(time.monotonic() - started, 3))  # no tokens: its time is codejury's own
        run.events.emit("walkthrough", status="ok", model="", source="diff", unsupported=0, reason=None)
        return Written(walkthrough.model_copy(update={"usage": usage}), None, usage)
    if spec is None or models is None or spec not in models.chains:
        note = "walkthrough: not written, the coordinator has no model to write it"
        run.events.emit("walkthrough", status="failed", reason=note)
        return Written(None, note, Usage())
    limits = run.limits_for("coordinator")
    watch = AgentWatch(deadline=time.monotonic() + limits.timeout_s)
    run.options.say(f"walkthrough started ({spec})")
    written = await write_walkthrough(
        run.change.meta, run.selection.kept, models.for_agent(spec, watch), run.prices, timeout_s=limits.timeout_s,
        criteria=[text for _, text in run_criteria(run)],
    )  # fmt: skip
    model = watch.last_answered or spec
    if written.walkthrough is not None:  # named after the model that answered, along its failback chain
        written = replace(written, walkthrough=written.walkthrough.model_copy(update={"model": model}))
    status = "ok" if written.walkthrough is not None else "failed"
    unsupported = written.walkthrough.unsupported if written.walkthrough is not None else None
    run.events.emit("walkthrough", status=status, model=model, unsupported=unsupported, reason=written.note)
    run.events.emit("agent_finished", agent=AGENT, model=model, status=status, **written.usage.model_dump())
    return written
