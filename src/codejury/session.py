"""The composition root: the one place a review is set up, run and torn down.

``codejury review`` (a local change, or ``--url`` / ``--publish`` on a forge), the review
service's workers and chat jobs, ``/codejury ask`` and ``codejury eval`` (each case with the flags
of ``codejury review``, in the eval's process) all come here, each process through one ``Session``:
its plugins loaded once, its models cached and closed by it. The caller says what to review
(``ReviewFlags``); for each review the session loads the settings once, opens the event log,
tracing, the recorders, the publishers and the forge, runs ``pipeline.review()``, and closes them
all however the review ends. Nothing else calls the pipeline (docs/architecture.md draws the layers).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from codejury.change.skip import skipped_by
from codejury.change.types import ChangeSet
from codejury.cli_io import piped_stdin_has_data, shown_path, visible_text
from codejury.config import Settings
from codejury.errors import CodejuryError, InputError, OutputError
from codejury.findings import Disagreement, Plan, Review
from codejury.flags import ReviewFlags
from codejury.judge.verdict import should_fail
from codejury.plugins import Plugins, load_plugins
from codejury.publish import OutputPublisher, default_format
from codejury.record.events import EventLog
from codejury.runstate import Refusal, ReviewOptions, ReviewRun

if TYPE_CHECKING:
    from codejury.agents.walkthrough import Written
    from codejury.analyzers.junit import TestReport
    from codejury.config import ReviewConfig
    from codejury.forges.publish import Forge, PreviousState
    from codejury.models.selection import ReviewModels
    from codejury.record.limits import CapCheck

Say = Callable[[str], None]

__all__ = [
    "HeadAlreadyReviewed",
    "Outcome",
    "Plugins",
    "ReviewFlags",
    "Session",
    "check_format",
    "load_plugins",
    "open_event_log",
    "review_settings",
]


@dataclass(frozen=True)
class Outcome:
    """A finished review (or a ``--dry-run`` plan) and the ``fail_on`` level its settings chose."""

    result: Review | Plan
    fail_on: str

    @property
    def blocks(self) -> bool:
        """Whether the review reaches ``fail_on`` (``codejury review`` exits 1; a forge sees a block)."""
        return isinstance(self.result, Review) and should_fail(self.result, self.fail_on)  # type: ignore[arg-type]


def warn_on_stderr(msg: str) -> None:
    """A warning line on stderr, known secrets of the environment scrubbed (it may quote a provider's reply)."""
    from codejury.secrets import redact_env

    click.echo(f"codejury: {visible_text(redact_env(msg))}", err=True)


def progress_on_stderr(msg: str) -> None:
    """A stage of the review starting or ending: stderr, so stdout stays the review alone."""
    click.echo(f"codejury: {visible_text(msg)}", err=True)


class Session:
    """What lives as long as the process, and the one way it reviews.

    One per process (``codejury review``, a service's or worker's job runner, ``codejury eval``): the plugins and
    their registries, loaded once; the models each review resolves, cached in the process and closed by
    ``close()`` alone (one embedded-model server for every review of an eval); the circuit breakers that the
    reviews of the process share (``models.selection.board_for``). Each review opens and closes its own event log,
    tracing, recorders, publishers and, on a forge, the forge's adapter.
    """

    def __init__(self, plugins: Plugins, *, warn: Say = warn_on_stderr, progress: Say | None = progress_on_stderr):
        self.plugins = plugins
        self.warn = warn
        self.progress = progress

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the SDK clients of the models this process's reviews resolved (none imported: none opened)."""
        import sys

        registry = sys.modules.get("codejury.models.registry")
        if registry is not None:
            await registry.close_cached_models()

    def open_forge(
        self, url: str | None, env: Mapping[str, str], warn: Say | None = None
    ) -> Callable[[], AbstractAsyncContextManager[Forge]]:
        """How to open the adapter for the change at ``url`` (None: this CI run's), from the registered forges:
        the target is found now, the adapter (and its HTTP client) made when the caller enters it."""
        from codejury.forges.registry import forge_opener

        opener: Callable[[], AbstractAsyncContextManager[Forge]] = forge_opener(
            self.plugins.forges, url, env, warn or self.warn
        )
        return opener

    async def review(self, env: dict[str, str], flags: ReviewFlags, *, recorders: Sequence[Any] = ()) -> Outcome:
        """Review what ``flags`` name: a local change, or the forge's change with ``--url`` / ``--publish`` (and
        with ``--publish``, post it or the failure note). ``recorders`` are the caller's (it closes them); every
        other resource is opened and closed here."""
        tests = _test_reports(flags)  # read and checked before anything else: a bad report is bad input (exit 2)
        on_forge = flags.url is not None or flags.publish
        opener = self.open_forge(flags.url, env) if on_forge else None  # the forge's target is found now
        check_format(flags, self.plugins.renderers)
        target = self._forge_target(opener, flags) if opener is not None else self._local_target(flags)
        async with target as (change, disputes, forge_publishers):
            with ExitStack() as stack:
                settings, notice, events = self._opened(stack, change, env, flags)
                output = OutputPublisher(self.plugins.renderers, default_format(flags.fmt, flags.output), flags.output)
                ours = [*_recorders(self.plugins, settings, env), *_metrics_recorders(flags, self.warn)]
                opts = ReviewOptions(
                    settings=settings,
                    env=env,
                    events=events,
                    warn=self.warn,
                    plugins=self.plugins,
                    break_glass=flags.break_glass,
                    dry_run=flags.dry_run,
                    forced=flags.forced,
                    notices=(notice,) if notice else (),
                    disputes=disputes,
                    progress=self.progress,
                    publishers=[output, *forge_publishers(settings, events, self.warn)],
                    recorders=[*_closed_with(stack, ours, self.warn), *recorders],
                    baseline="naive" if flags.baseline == "naive" else None,
                    admit=_admission,
                    test_report=tests,
                )
                from codejury import pipeline  # the model layer, once the input has been read and checked

                result = await pipeline.review(change, opts)
        if output.unwritten is not None:  # published all the same: the review was printed on stdout
            raise output.unwritten
        _check_event_log(opts, flags)
        return Outcome(result, settings.fail_on)

    async def describe(self, env: dict[str, str], flags: ReviewFlags) -> Written:
        """The walkthrough of what ``flags`` name (a local change, or the forge's with ``--url``), written as a
        review writes it: the same settings, event log, kill switch and daily caps (counted, not reserved: this
        is not a review) and models. Nothing is published or recorded."""
        opener = self.open_forge(flags.url, env) if flags.url is not None else None
        target = self._forge_target(opener, flags) if opener is not None else self._local_target(flags)
        async with target as (change, _, _):
            with ExitStack() as stack:
                settings, _, events = self._opened(stack, change, env, flags)
                opts = ReviewOptions(
                    settings=settings, env=env, events=events, warn=self.warn, plugins=self.plugins,
                    progress=self.progress, admit=_caps_counted,
                )  # fmt: skip
                from codejury import pipeline

                return await pipeline.describe(change, opts)

    def _opened(
        self, stack: ExitStack, change: ChangeSet, env: dict[str, str], flags: ReviewFlags
    ) -> tuple[Settings, str | None, EventLog]:
        """The settings for ``change`` (their notice said), the event log and tracing, closed with ``stack``."""
        settings, notice = review_settings(change, env, flags)
        if notice:
            self.warn(notice)
        events = stack.enter_context(open_event_log(flags.events_file, env))
        _start_tracing(stack, env, settings, events, self.warn)
        return settings, notice, events

    async def configured(
        self, env: dict[str, str], flags: ReviewFlags, change: ChangeSet, *, run_id: str, warn: Say
    ) -> Configured:
        """A review's settings, event log (in memory, as ``run_id``) and assembled configuration for ``change``, with
        no review run: what ``/codejury ask`` answers with, under a review's kill switch and models."""
        settings, _ = review_settings(change, env, flags)
        events = open_event_log(None, env, run_id=run_id)
        opts = ReviewOptions(settings=settings, env=env, events=events, warn=warn, plugins=self.plugins)
        from codejury import pipeline
        from codejury.secrets import provider_key_values

        config = await pipeline.configure(change, opts)
        events.redactor.add(provider_key_values(config.providers, env))
        return Configured(opts, config)

    @asynccontextmanager
    async def _local_target(self, flags: ReviewFlags) -> AsyncIterator[Target]:
        """The local change ``flags`` choose (git, a diff file or stdin), published on stdout or ``--output`` only."""
        from codejury.change.select import open_source

        with ExitStack() as stack:
            source: Any = open_source(self.plugins.sources, flags)
            if hasattr(source, "__enter__"):
                source = stack.enter_context(source)
            yield _with_stdin_hint(flags, source.load, self.warn), (), _no_publishers

    @asynccontextmanager
    async def _forge_target(
        self, opener: Callable[[], AbstractAsyncContextManager[Forge]], flags: ReviewFlags
    ) -> AsyncIterator[Target]:
        """The forge's change, its earlier review's disputes and, with ``--publish``, the forge's publisher; a
        forge error says what was already posted."""
        from codejury.forges.errors import ForgeError
        from codejury.forges.publish import PreviousState, disputes
        from codejury.forges.publisher import ForgePublisher

        async with opener() as forge:
            try:
                change = await forge.load_change()
                if not change.files:
                    raise InputError(f"the {forge.noun} has no changes: there is nothing to review")
                previous = await forge.load_previous() if flags.publish else PreviousState()
                if flags.publish and flags.skip_reviewed_head and _reviewed_at(previous, forge.head_sha):
                    raise HeadAlreadyReviewed(f"{forge.noun} head {forge.head_sha[:12]} is already reviewed")

                def publishers(settings: Settings, events: EventLog, warn: Say) -> list[Any]:
                    if not flags.publish:
                        return []
                    return [
                        ForgePublisher(
                            forge, previous, change.files, fail_on=settings.fail_on, approve=settings.approve,
                            max_inline=flags.max_inline, events=events, say=warn,
                            describe_in=settings.describe_in,
                        )
                    ]  # fmt: skip

                yield change, disputes(previous), publishers
            except ForgeError as exc:
                done = f"; already posted: {', '.join(forge.posted)}" if forge.posted else "; nothing was posted"
                message = f"{exc}{done} (a re-run completes it without duplicates)" if forge.posted else f"{exc}{done}"
                raise type(exc)(message, status=exc.status) from exc


@dataclass(frozen=True)
class Configured:
    """A change's settings, event log and configuration, as a review would have them (``Session.configured``)."""

    options: ReviewOptions
    config: ReviewConfig

    @property
    def stopped(self) -> str | None:
        """Why the routing document's kill switch (or a plugin) stops every model call here; None: it does not."""
        return self.config.stopped

    def models(self, specs: Sequence[str]) -> ReviewModels:
        """The chains of ``specs`` as a review builds them: the process's breakers, requests scrubbed, events logged."""
        from codejury import pipeline

        return pipeline.review_models(self.config, specs, self.options)


Target = tuple[ChangeSet, Sequence[Disagreement], Callable[[Settings, EventLog, Say], list[Any]]]
"""What a review is of: the change, the human replies disputing earlier findings, and the target's own publishers
(for the settings and event log of the review)."""


def _no_publishers(settings: Settings, events: EventLog, warn: Say) -> list[Any]:
    return []


class HeadAlreadyReviewed(CodejuryError):
    """The bot's summary already records a finished review of this head commit (``skip_reviewed_head``)."""


def _reviewed_at(previous: PreviousState, head_sha: str) -> bool:
    """Whether the bot's summary records a finished review (a verdict, not "not reviewed") of ``head_sha``."""
    state = previous.state
    if state is None or state.verdict in (None, "not_reviewed") or not head_sha:
        return False
    return head_sha.lower().startswith(state.head_sha) or state.head_sha.startswith(head_sha.lower())


def _test_reports(flags: ReviewFlags) -> TestReport | None:
    """The ``--tests`` JUnit reports, each read (capped, no DTD or entity expanded) and checked now."""
    if not flags.tests:
        return None
    from codejury.analyzers.junit import read_test_reports

    return read_test_reports(flags.tests)


def review_settings(change: ChangeSet, env: Mapping[str, str], flags: ReviewFlags) -> tuple[Settings, str | None]:
    """The layered settings of ``change`` (defaults, repository, ``--config``, environment, flags) and the
    notice to show, if any."""
    from codejury.settings_loader import load_review_settings

    return load_review_settings(change, env, flags)


def open_event_log(path: Path | None, env: Mapping[str, str], run_id: str | None = None) -> EventLog:
    """The review's JSONL event log (to ``path``, or kept in memory), scrubbing the environment's secrets."""
    from codejury.secrets import secret_values

    try:
        return EventLog(path, run_id=run_id or uuid.uuid4().hex[:12], secrets=secret_values(env))
    except OSError as exc:
        raise OutputError(f"cannot write --events {shown_path(path or '')}: {exc.strerror or exc}") from exc


def _start_tracing(stack: ExitStack, env: Mapping[str, str], settings: Settings, events: EventLog, warn: Say) -> None:
    """Tracing for one review when the environment names an OTLP endpoint (``OTEL_*``), flushed within 2 s as
    ``stack`` unwinds; spans scrubbed by the review's event log."""
    from codejury.telemetry.tracing import start_tracing

    tracing = start_tracing(env, include_content=settings.record_prompts, redact=events.redact)
    if tracing is not None:
        stack.callback(tracing.close, warn)


CAP_CHECK_WAIT_S = 5.0
"""The most a review waits for the store to count today's reviews (connect and query are bounded below it)."""
CAP_SLOT_AFTER_TIMEOUT_S = 300.0
"""An admitted review's slot is held for its settings' ``overall_timeout_s`` plus this (the judge, publishing
and recording come after the reviewers): past it, a review that never got recorded no longer counts."""


async def _admission(run: ReviewRun) -> Refusal | None:
    """The check every review passes before any model is called (``ReviewOptions.admit``): the skip rules
    (``[skip]``; not for a review a writer asked for), the routing document's kill switch, then the daily caps of
    ``[limits]`` counted in the review store, where an admitted review reserves its slot in the same transaction
    (``codejury.record.limits``). A store that cannot be counted lets the review run, with one warning line and a
    ``caps_unchecked`` event (recording never blocks a review)."""
    if not run.options.forced and (skipped := skipped_by(run.settings.skip, run.change.meta, run.change.files)):
        return Refusal(skipped, "skip")  # published as not reviewed, with the rule (a writer's review overrides it)
    if run.config.stopped is not None:
        return Refusal(run.config.stopped, "kill_switch")
    if not run.settings.limits.capped:
        return None
    hold_s = run.settings.overall_timeout_s + CAP_SLOT_AFTER_TIMEOUT_S
    checked = await count_caps(run.settings, run.change.meta.repository, slot_hold_s=hold_s)
    if checked.unchecked is not None:
        run.options.warn(f"daily caps not checked, the review runs: {checked.unchecked}")
        run.events.emit("caps_unchecked", error=checked.unchecked[:300])
        return None
    if checked.refusal is not None and checked.cap is not None:
        return Refusal(checked.refusal, checked.cap)
    if checked.slot is not None:  # the review's record replaces the slot (``ReviewRecord.slot``)
        run.events.emit("caps_reserved", slot=checked.slot, hold_s=hold_s)
    return None


async def _caps_counted(run: ReviewRun) -> Refusal | None:
    """The kill switch and the daily caps, counted without reserving a slot (a walkthrough is not a review)."""
    if run.config.stopped is not None:
        return Refusal(run.config.stopped, "kill_switch")
    if not run.settings.limits.capped:
        return None
    checked = await count_caps(run.settings, run.change.meta.repository)
    if checked.unchecked is not None:
        run.options.warn(f"daily caps not checked: {checked.unchecked}")
    return None if checked.refusal is None else Refusal(checked.refusal, checked.cap or "limits")


async def count_caps(settings: Settings, repository: str, *, slot_hold_s: float | None = None) -> CapCheck:
    """Today's reviews in the review store against ``settings.limits`` (``codejury.record.limits.check_caps``, in a
    thread), within ``CAP_CHECK_WAIT_S``: a store that does not answer in time is ``unchecked``."""
    import asyncio
    from datetime import UTC, datetime

    from codejury.record.limits import CapCheck, check_caps

    counting = asyncio.to_thread(
        check_caps, settings.limits, settings.record_url, repository, datetime.now(UTC), slot_hold_s=slot_hold_s
    )
    try:
        return await asyncio.wait_for(counting, CAP_CHECK_WAIT_S)
    except TimeoutError:
        return CapCheck(unchecked=f"the review store did not answer within {CAP_CHECK_WAIT_S:g} s")


def _recorders(plugins: Plugins, settings: Settings, env: Mapping[str, str]) -> list[Any]:
    """The registered recorders the settings turn on (a ``[plugins.NAME]`` table for recorder NAME), then
    the store recorder, on unless ``record.url`` is ``none``."""
    from codejury.record.store_recorder import store_recorder

    found = [factory(settings.plugins[name]) for name, factory in plugins.recorders.items() if name in settings.plugins]
    store = store_recorder(settings.record_url, env)
    return found if store is None else [*found, store]


def _metrics_recorders(flags: ReviewFlags, warn: Say) -> list[Any]:
    """The metrics exporter that ``--metrics-push`` / ``--metrics-textfile`` ask for (a recorder), if any."""
    from codejury.telemetry.options import metrics_recorders

    return list(metrics_recorders(flags.metrics_push, flags.metrics_textfile, warn))


def _closed_with(stack: ExitStack, recorders: list[Any], warn: Say) -> list[Any]:
    """``recorders``, closed when ``stack`` unwinds however the review ends: each writes what it still holds
    (bounded; nothing is waited for on a store that already did not answer) before the process exits."""
    from codejury.record.recorders import close_recorders

    stack.callback(close_recorders, recorders, warn)
    return recorders


def _check_event_log(opts: ReviewOptions, flags: ReviewFlags) -> None:
    """After the review was printed or written: an event log that could not be written is an ``OutputError``."""
    failed = opts.events.write_error
    if failed is not None:
        raise OutputError(f"cannot write --events {shown_path(flags.events_file or Path())}: {failed}")


def _with_stdin_hint(flags: ReviewFlags, load: Callable[[], ChangeSet], warn: Say) -> ChangeSet:
    """``load()``'s change; when git finds nothing to review but a diff waits on stdin, say how to read it.
    A branch with no change against its base is no error: one line says so, and the review is
    ``not_reviewed``; an empty diff (``--diff``) is bad input."""
    hint = "; to review a diff from stdin, use --diff -"
    try:
        change = load()
    except InputError as exc:
        if flags.diff_file is None and piped_stdin_has_data():
            raise InputError(f"{exc}{hint}") from exc
        raise
    if not change.files:
        empty = "the change is empty: there is nothing to review"
        if flags.diff_file is not None:  # an empty diff: the command that wrote it likely failed
            raise InputError(empty)
        if piped_stdin_has_data():  # a diff meant for --diff -: a usage error
            raise InputError(empty + hint)
        warn(f"nothing to review: {empty_change(change)}")  # git found no change: a not_reviewed review
    return change


def empty_change(change: ChangeSet) -> str:
    """Why ``change`` has nothing to review, in a few words."""
    meta = change.meta
    if meta.base_ref and meta.base_ref == meta.head_ref:
        return f"{meta.head_ref} is the base branch itself, and nothing differs from it"
    if meta.base_ref and meta.head_ref:
        return f"{meta.head_ref} has no changes against {meta.base_ref}"
    return "the change is empty"


def check_format(flags: ReviewFlags, renderers: Mapping[str, Any]) -> None:
    """``--format`` names a registered renderer (for a plan too, with ``--dry-run``), else InputError."""
    fmt = default_format(flags.fmt, flags.output)
    if fmt not in renderers:
        formats = ", ".join(sorted(n for n in renderers if not n.endswith("-plan")))
        raise InputError(f"--format {fmt}: no such format; formats: {formats} (a plugin's format needs --plugin)")
    if flags.dry_run and f"{fmt}-plan" not in renderers:
        plans = ", ".join(sorted(n.removesuffix("-plan") for n in renderers if n.endswith("-plan")))
        raise InputError(f"--format {fmt} renders a review, not a plan: use {plans} with --dry-run")
