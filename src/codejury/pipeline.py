"""review(): source → filter → tier → workspace → reviewers → evidence → judge → verdict → publish → record.

This is the one place where the stages are called in order; each stage is a function of the run in
``codejury.stages``, and what the stages share travels in one frozen ``ReviewRun``. Every entry
point (the CLI, ``codejury eval``, a review service's workers) reaches ``review`` through the
composition root, ``codejury.session``: they differ only in the change they load, and the
publishers (stdout, a file, a merge request) and recorders they pass (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from codejury.agents.context_watch import context_notes
from codejury.agents.discussion import tests_context
from codejury.agents.prompts import shared_context
from codejury.change.break_glass import break_glass_requested
from codejury.change.intent import with_tracker_issues
from codejury.change.noise import filter_stage, unread_code_note
from codejury.change.types import ChangeSet
from codejury.config import ReviewConfig, Settings
from codejury.errors import ModelSetupError, ReviewFailed, ReviewRefused
from codejury.findings import Plan, Review, Tier
from codejury.guardrails.screen import Screen, screen_change, suspected_injections
from codejury.lifecycle import assemble, run_bootstrap, run_configure, run_post_configure
from codejury.models.budget import say_unpriced
from codejury.models.selection import (
    ReviewModels,
    board_for,
    build_review_models,
    choose_model,
    default_resolver,
    is_weak_spec,
)
from codejury.models.selection import price_table as price_table
from codejury.resilience import BreakerState
from codejury.runstate import Refusal, ReviewOptions, ReviewRun, Selection
from codejury.secrets import Redactor, provider_key_values
from codejury.stages.criteria import run_criteria, with_criteria
from codejury.stages.evidence import evidence_stage
from codejury.stages.judge import evidence_judgement, judge_stage
from codejury.stages.memory import memory_stage
from codejury.stages.naive import naive_stage
from codejury.stages.panel import run_panel
from codejury.stages.plan import plan_stage
from codejury.stages.publish import publish_failure_stage, publish_stage
from codejury.stages.record import record_stage
from codejury.stages.tier import tier_stage
from codejury.stages.verdict import not_reviewed_stage, refused_stage, verdict_stage
from codejury.stages.walkthrough import (
    beside_the_panel,
    describe_stage,
    from_the_diff,
    walkthrough_started,
    with_walkthrough,
)
from codejury.stages.workspace import workspace_stage
from codejury.telemetry.tracing import span, traced, traced_review

CHARS_PER_TOKEN = 4
"""Characters a token budget of the shared context stands for (``intent_tokens``)."""

if TYPE_CHECKING:
    from codejury.agents.walkthrough import Written
    from codejury.analyzers.junit import TestCoverage, TestReport
    from codejury.remote_config import Routing


@traced_review
async def review(change: ChangeSet, opts: ReviewOptions) -> Review | Plan:
    """Review ``change`` (or plan it, with ``dry_run``), publish and record the result, and return it.

    Every known secret is scrubbed from what leaves: each request the models send, every warning
    and progress line, the finished review (before anything renders, publishes or records it) and
    the message of a failed review (a forge posts it as the failure note).

    When no reviewer succeeded it raises ``ReviewFailed`` (``codejury review`` exits 3) after publishing
    what the review has: the analyzers' hits as a partial review that is never an approval (its
    ``partial``), or the failure note when there are none.
    """
    redactor = opts.events.redactor
    opts = replace(opts, warn=_scrubbing(opts.warn, redactor), progress=_maybe_scrubbing(opts.progress, redactor))
    run = await start(change, opts)  # configure → filter → tier (and the models each reviewer runs on)
    refusal = await _admitted(run)  # the kill switch and the daily caps, before any model is called
    if opts.dry_run:
        plan = redactor.scrub(plan_stage(run).model_copy(update={"refusal": refusal and refusal.reason}))
        await publish_stage(run, plan)
        return plan
    if refusal is not None:
        refused = redactor.scrub(refused_stage(run, refusal))
        await traced("publish", publish_stage(run, refused))
        await traced("record", record_stage(run, refused))  # recorded, so the day's reviews are all there
        return refused
    try:
        result = redactor.scrub(await _reviewed(run))  # workspace → reviewers → judge → verdict
    except ReviewFailed as exc:
        failed = ReviewFailed(redactor.redact(str(exc)), None if exc.partial is None else redactor.scrub(exc.partial))
        if failed.partial is None:
            await publish_failure_stage(run, str(failed))
        else:  # the deterministic evidence, published and recorded as a partial review
            await traced("publish", publish_stage(run, failed.partial))
            await traced("record", record_stage(run, failed.partial))
        raise failed from None  # the unscrubbed original must not ride along as the cause
    await traced("publish", publish_stage(run, result))
    await traced("record", record_stage(run, result))
    return result


async def describe(change: ChangeSet, opts: ReviewOptions) -> Written:
    """The walkthrough of ``change`` alone (``codejury describe``, ``/codejury describe``): the review's
    configuration, filter, tier, models and admission (the kill switch, the daily caps), then the coordinator's
    model writes it, checked against the diff. Nothing is published or recorded; a refusal raises
    ``ReviewRefused``."""
    redactor = opts.events.redactor
    opts = replace(opts, warn=_scrubbing(opts.warn, redactor), progress=_maybe_scrubbing(opts.progress, redactor))
    run = await start(change, opts)
    refusal = await _admitted(run)
    if refusal is not None:
        raise ReviewRefused(refusal.reason)
    if from_the_diff(run):  # no model writes it: none is loaded
        written = await traced("walkthrough", describe_stage(run, None))
    else:
        models = _models(run)
        with _breaker_events(run, models):
            written = await traced("walkthrough", describe_stage(run, models))
    if written.walkthrough is None:
        return written
    return replace(written, walkthrough=redactor.scrub(written.walkthrough))


async def _admitted(run: ReviewRun) -> Refusal | None:
    """The caller's check (``ReviewOptions.admit``); a refusal is one line on stderr and a ``review_refused``
    event (with ``--dry-run``: what a review run now would get, and nothing is refused)."""
    opts = run.options
    refusal = await opts.admit(run) if opts.admit is not None else None
    if refusal is not None:
        run.events.emit("review_refused", control=refusal.control, reason=refusal.reason, dry_run=opts.dry_run)
        opts.warn(
            f"dry run: a review now would be refused: {refusal.reason}"
            if opts.dry_run
            else f"not reviewed: {refusal.reason}"
        )
    return refusal


async def _reviewed(run: ReviewRun) -> Review:
    if not run.selection.reviewable:
        return not_reviewed_stage(run)
    screen = Screen(run.events)  # instruction-shaped text is logged and shown, never removed (guardrails)
    with span("screen"):
        screen_change(screen, run.change, run.selection.kept, instructions=_instructions(run))
        _screen_tests(screen, run.options.test_report)
    try:
        result = await _panel_reviewed(run, screen)
    except ReviewFailed as exc:
        if exc.partial is not None:
            exc.partial = exc.partial.model_copy(
                update={"suspected_injections": suspected_injections(run.events.events)}
            )
        raise
    return result.model_copy(update={"suspected_injections": suspected_injections(run.events.events)})


async def _panel_reviewed(run: ReviewRun, screen: Screen) -> Review:
    models = _models(run)
    # A model with no known price counts as $0: said in the notes, warned once per process, and no spend cap counts it.
    unpriced = say_unpriced(run.prices, models.callable_specs, run.settings, run.options.warn, run.events.emit)
    known = len(run.change.left_out)  # start() warned about these; the tools add what they cannot read
    with _breaker_events(run, models):
        async with _routing_refreshed(run, models) as routing_notes:
            if run.options.baseline == "naive":
                return await naive_stage(run, models)
            _say_discussion(run)
            _say_intent(run)
            tests = _tests(run)  # --tests: the failing tests, matched to the changed functions
            # The change explained: beside the reviewers, or after the judge on a model serving one request at a time.
            walking = walkthrough_started(run, models) if beside_the_panel(run, models) else None
            try:
                with workspace_stage(run, _context_text(run, tests), on_tool_result=screen.tool_result) as ctx:
                    panel = await traced("reviewers", run_panel(run, ctx, models))
                    evidence = await traced("evidence", evidence_stage(run))
                    if panel.failure is not None and not evidence.evidence:
                        raise ReviewFailed(panel.failure)  # nothing deterministic to publish: the failure note
                    if panel.failure is not None:
                        run.withhold(panel.failure)  # the analyzers' hits alone: partial, never an approval
                        judgement = evidence_judgement(run, models, panel, evidence.evidence)
                    else:
                        judged = judge_stage(run, ctx, models, panel, evidence.evidence, tests)
                        judgement = await traced("judge", judged)
                written = await (walking or walkthrough_started(run, models))
            finally:
                if walking is not None:
                    walking.cancel()  # the review failed first: nobody reads the walkthrough
    judgement, remembered = await traced("memory", memory_stage(run, judgement))  # writers' earlier dismissals
    notes = [*_left_out(run, known), *run.config.instruction_notes, *evidence.skipped, *evidence.failed]
    notes += routing_notes  # a re-read of the routing document that failed: the last good one was used
    notes += [unpriced] if unpriced is not None else []
    notes += context_notes(run.events.events)  # prompts past half a model's context window
    notes += [written.note] if written.note is not None else []
    notes += list(run.change.meta.intent_notes)  # linked issues the forge's token could not read
    stopped = models.budget.reason() if models.budget is not None else None
    with span("verdict"):
        # Every format names the failing tests, apart from what the review could not do.
        review = verdict_stage(
            run, panel, judgement, notes=notes, stopped=stopped, tests=None if tests is None else tests.note()
        )
    review = with_walkthrough(review, written)
    review = with_criteria(review, run_criteria(run))  # the linked issues' criteria: unmet, met or not judged
    review = review.model_copy(update={"remembered": remembered})  # the findings that match earlier dismissals
    if panel.failure is not None:
        partial = "the analyzers' hits are published as a partial review, never an approval"
        raise ReviewFailed(f"{panel.failure}; {partial}", review)
    return review


@asynccontextmanager
async def _routing_refreshed(run: ReviewRun, models: ReviewModels) -> AsyncIterator[list[str]]:
    """While the models are called, the routing document is kept current (``remote_config``: re-read before
    each model request): a provider or model it now disables gets no new request, and a kill switch now
    covering the review stops every model call (the review is published as partial, as when the cost
    ceiling is reached). Yields the review's notes about it, filled when the block ends."""
    notes: list[str] = []
    url = run.config.settings.remote_config
    if url is None:
        yield notes
        return
    from codejury.remote_config import RoutingWatch, watch_routing

    def apply(routing: Routing) -> None:
        models.routing.disabled_providers = frozenset(p.strip().lower() for p in routing.disabled_providers)
        models.routing.disabled_models = routing.disabled_models
        if routing.stops(run.change.meta.repository) and models.budget is not None and not models.budget.reached:
            reason = f"the kill switch is on ({routing.reason})" if routing.reason else "the kill switch is on"
            run.events.emit("kill_switch", reason=reason, during_review=True)
            run.options.warn(f"stopping the review: {reason}")
            models.budget.halt(reason)
            models.routing.stopped = reason

    watch = RoutingWatch(url, warn=run.options.warn, on_event=run.events.emit)
    models.routing.freshen = watch.sync  # every model request waits for a document no older than itself
    try:
        async with watch_routing(watch, apply):
            yield notes
    finally:
        models.routing.freshen = None
        if (note := watch.note()) is not None:
            notes.append(note)


async def start(change: ChangeSet, opts: ReviewOptions) -> ReviewRun:
    """The run's configuration and selection: plugins (built once), noise filter, tier, panel and models."""
    meta = change.meta
    changed_since = meta.previous.changed_since if meta.previous else None
    opts.events.emit(
        "change", repository=meta.repository, change_id=meta.change_id, head_sha=meta.head_sha,
        changed_since=changed_since, disputed=sorted({d.fingerprint for d in opts.disputes}),
    )  # fmt: skip
    break_glass = opts.break_glass or break_glass_requested(change)
    if break_glass:
        opts.events.emit("break_glass", source="flag" if opts.break_glass else "comment")
    config = await traced("configure", configure(change, opts))
    change = await _with_tracker_issues(change, config.settings, opts.env)
    if (left_out := change.left_out_notice()) is not None:  # unreadable files outside the change: never fatal
        opts.warn(left_out)
        opts.events.emit("left_out", files=sorted(change.left_out))
    with span("filter"):
        kept, skipped = filter_stage(change, config.settings.exclude)
    with span("tier"):
        tier, names = tier_stage(kept, config)
    opts.events.emit("plan", tier=tier, reviewers=names, files=len(kept), skipped=len(skipped))
    models = {n: choose_model(config, n, tier=tier) for n in [*names, "coordinator"]}
    names, models = fold_for_weak_model(config, tier, names, models, opts)
    selection = Selection(tuple(kept), tuple(skipped), tier, tuple(names), models)
    opts.events.redactor.add(provider_key_values(config.providers, opts.env))
    run = ReviewRun(change, config, opts, selection, price_table(config.settings), break_glass)
    # A file of code skipped for a reason the change's author controls (binary or too large, a new minified
    # file): the review did not read it whole, so it cannot pass it (change.noise).
    if (unread := unread_code_note(selection.skipped)) is not None:
        run.withhold(unread)
    if change.head_unread:  # the analyzers could not read what they were to check: never approved around
        run.withhold(change.head_unread)
    return run


async def _with_tracker_issues(change: ChangeSet, settings: Settings, env: Mapping[str, str]) -> ChangeSet:
    """The issues of ``issue_tracker_url`` the change names by key, beside its forge's (``change.intent``)."""
    if settings.issue_tracker_url is None:
        return change
    token_env = settings.issue_tracker_token_env
    token = env.get(token_env) if token_env else None
    return await with_tracker_issues(change, str(settings.issue_tracker_url), token, token_env=token_env)


async def configure(change: ChangeSet, opts: ReviewOptions) -> ReviewConfig:
    """Run the plugin lifecycle and return the assembled configuration (the registries read once, by ``Plugins``)."""
    plugins = opts.plugins
    pm = plugins.manager
    await run_bootstrap(pm, opts.settings, opts.warn)
    contributions = run_configure(pm, opts.settings, change, (plugins.model_kinds, plugins.embeddings))
    config = assemble(opts.settings, contributions, opts.notices)
    return await run_post_configure(pm, config, opts.warn, change)


FOLDABLE: frozenset[str] = frozenset({"security", "performance", "code_quality", "documentation", "release"})
"""Built-in specialists a weak model runs as one generalist call (``weak_panel = "single"``)."""


def fold_for_weak_model(
    config: ReviewConfig, tier: Tier, names: Sequence[str], models: dict[str, str | None], opts: ReviewOptions
) -> tuple[list[str], dict[str, str | None]]:
    """The panel with the built-in specialists that run on the generalist's weak model replaced by one generalist call.

    Measured on the embedded model (golden set): each specialist call costs 10 to 28 s, and the model's
    own claims rarely name an engineer's problem whichever prompt asked for them; what it finds that
    holds comes from the analyzers, which run either way. ``weak_panel = "panel"`` keeps one call per
    reviewer. Reviewers a team wrote or changed, the AGENTS.md and compliance reviewers still run.
    """
    generalist = "generalist"
    if config.settings.weak_panel != "single" or generalist not in config.reviewers:
        return list(names), models
    spec = choose_model(config, generalist, tier=tier)
    if not is_weak_spec(config, spec):
        return list(names), models
    folded = [n for n in names if n in FOLDABLE and config.reviewers[n].source == "builtin" and models.get(n) == spec]
    if len(folded) < 2:
        return list(names), models
    opts.say(f'{", ".join(folded)} on the weak model {spec}: one generalist call instead (weak_panel = "panel": each)')
    opts.events.emit("panel_folded", reviewers=folded, into=generalist, model=spec)
    kept = [generalist, *(n for n in names if n not in folded and n != generalist)]
    return kept, {**models, generalist: spec}  # the folded ones keep theirs: analyzer hits in their domain use it


def _models(run: ReviewRun) -> ReviewModels:
    return review_models(run.config, sorted({m for m in run.selection.models.values() if m}), run.options)


def review_models(config: ReviewConfig, specs: Sequence[str], opts: ReviewOptions) -> ReviewModels:
    """The chains of ``specs`` as a review runs them: the process's breakers (or ``opts.board``), requests scrubbed
    of known secrets, model events in the review's log."""
    return build_review_models(
        config,
        list(specs),
        resolver=default_resolver(opts.env),
        board=opts.board or board_for(config.settings),
        redactor=opts.events.redactor,
        on_event=opts.events.emit,
    )


@contextmanager
def _breaker_events(run: ReviewRun, models: ReviewModels) -> Iterator[None]:
    """While this review runs, its board's breaker transitions go to its event log."""
    boards = {id(chain.board): chain.board for chain in models.chains.values()}

    def moved(model: str, old: BreakerState, new: BreakerState) -> None:
        run.events.emit("breaker", model=model, from_state=old, to_state=new)

    for board in boards.values():
        board.add_listener(moved)
    try:
        yield
    finally:
        for board in boards.values():
            board.remove_listener(moved)


def _left_out(run: ReviewRun, known: int) -> list[str]:
    """The review's note on files it could not read; a warning too when the tools found new ones."""
    notice = run.change.left_out_notice()
    if notice is not None and len(run.change.left_out) > known:
        run.options.warn(notice)
        run.events.emit("left_out", files=sorted(run.change.left_out))
    return [notice] if notice is not None else []


def _context_text(run: ReviewRun, tests: TestCoverage | None = None) -> str:
    config = run.config
    text = shared_context(
        run.change,
        run.selection.kept,
        repo_instructions=config.repo_instructions,
        custom_rules=config.custom_rules,
        org_instructions=config.org_instructions,
        intent_chars=run.settings.intent_tokens * CHARS_PER_TOKEN,
    )
    return text + tests_context(tests, run.settings.test_failures_tokens)


def _tests(run: ReviewRun) -> TestCoverage | None:
    """The ``--tests`` reports' failures matched to the changed functions of the kept files (an event says how)."""
    report = run.options.test_report
    if report is None:
        return None
    from codejury.analyzers.junit import coverage

    with span("tests"):
        found = coverage(report, run.change, run.selection.kept)
    covering = sorted(test for test, functions in found.covers.items() if functions)
    run.events.emit(
        "tests", reports=list(report.files), total=report.total, failed=len(report.failures), covering=covering
    )
    return found


def _screen_tests(screen: Screen, report: TestReport | None) -> None:
    """The failing tests' names and messages are the change's own text: screened like the change."""
    for test in report.failures if report is not None else ():
        screen.text("test_report", f"test {test.id[:200]}", f"{test.name}\n{test.message}")


def _say_discussion(run: ReviewRun) -> None:
    """Whether the reviewers get the forge's discussion (``get_pr_discussion``), said in the events (a local review
    has none to expect, so its progress does not mention it)."""
    discussion = run.change.meta.discussion
    if discussion is None:
        run.events.emit("discussion", available=False, reason="not reviewed on a forge")
        return
    opened = sum(1 for t in discussion.threads if t.open)
    given = run.settings.discussion_tokens > 0  # 0 turns it off
    run.events.emit(
        "discussion", available=given, forge=discussion.forge, threads=len(discussion.threads), open=opened,
        **({} if given else {"reason": "discussion_tokens is 0"}),
    )  # fmt: skip


def _say_intent(run: ReviewRun) -> None:
    """Which issues the change says it resolves reached the reviewers, in the events and one progress line."""
    meta = run.change.meta
    read = [issue.ref for issue in meta.linked_issues]
    run.events.emit(
        "intent", linked=read, unread=list(meta.intent_notes), shown=bool(read) and run.settings.intent_tokens > 0
    )
    if meta.discussion is None:
        return  # not on a forge: no issue is read
    if not read and not meta.intent_notes:
        run.options.say("intent: the change links no issue (Fixes #N, Closes #N): nothing was fetched")
    elif read:
        run.options.say(
            f"intent: the reviewers read the linked {'issue' if len(read) == 1 else 'issues'} {', '.join(read)}"
        )


def _instructions(run: ReviewRun) -> list[tuple[str, str | None]]:
    """The instructions the models read besides the change, by source (screened like the change)."""
    config = run.config
    return [
        ("repo_instructions", config.repo_instructions),
        ("org_instructions", config.org_instructions),
        ("custom_rules", config.custom_rules),
    ]


def _scrubbing(say: Callable[[str], None], redactor: Redactor) -> Callable[[str], None]:
    """``say``, with known secrets scrubbed from each line first."""
    return lambda line: say(redactor.redact(line))


def _maybe_scrubbing(say: Callable[[str], None] | None, redactor: Redactor) -> Callable[[str], None] | None:
    return None if say is None else _scrubbing(say, redactor)


__all__ = [
    "ModelSetupError",
    "ReviewOptions",
    "configure",
    "review",
    "review_models",
    "start",
]
