"""What the stages of one review share: the caller's options, and the frozen state of the run.

``ReviewOptions`` is what the composition root (``codejury.session``) assembles for a caller
(the CLI, ``codejury eval``, a review service's worker), once and frozen: settings, plugins,
environment, where events, warnings and progress lines go, who publishes and who records. ``ReviewRun`` is what
the first stages decided and every later stage reads: the assembled configuration, the files
kept and skipped, the tier, the panel and its models.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from codejury.change.types import ChangeSet, FileChange
from codejury.config import ReviewConfig, Settings
from codejury.findings import Disagreement, Plan, Review, SkippedFile, Tier
from codejury.models.pricing import PriceTable
from codejury.record.events import EventLog
from codejury.record.recorders import Recorder

if TYPE_CHECKING:
    from codejury.agents.runner import Limits
    from codejury.analyzers.junit import TestReport
    from codejury.plugins import Plugins
    from codejury.resilience import BreakerBoard


Baseline = Literal["naive"]


class Publisher(Protocol):
    """Where a finished review goes (stdout or a file, a merge request): the publish stage calls each in order."""

    async def publish(self, result: Review | Plan) -> None: ...

    async def publish_failure(self, reason: str) -> None:
        """No reviewer succeeded: say so where the review would have gone (never as an approval)."""
        ...


@dataclass(frozen=True)
class Refusal:
    """Why a review may call no model: a daily cap reached, or the kill switch."""

    reason: str
    control: str
    """``kill_switch`` or the ``[limits]`` key of the cap."""


@dataclass(frozen=True)
class ReviewOptions:
    """How to run one review: chosen by the caller, built once (``dataclasses.replace`` makes a changed copy)."""

    settings: Settings
    env: Mapping[str, str]
    events: EventLog
    warn: Callable[[str], None]
    plugins: Plugins
    """The process's plugins and their registries, loaded once (``codejury.session.Session``; a test's scripted
    models)."""
    break_glass: bool = False
    dry_run: bool = False
    forced: bool = False
    """A person with write access asked for this review: the skip rules (``[skip]``) do not apply."""
    notices: Sequence[str] = ()
    workspace_dir: Path | None = None
    board: BreakerBoard | None = None
    """Circuit breakers; None: the process's board for these breaker settings."""
    disputes: Sequence[Disagreement] = ()
    """Human replies disputing the bot's earlier findings (forge re-reviews): the coordinator judges them."""
    progress: Callable[[str], None] | None = None
    """Where a line goes as each stage starts and ends (stderr in the CLI); None: nowhere."""
    publishers: Sequence[Publisher] = ()
    recorders: Sequence[Recorder] = ()
    baseline: Baseline | None = None
    """``naive``: one plain prompt on the standard model instead of the panel (``codejury eval --baseline``)."""
    test_report: TestReport | None = None
    """The CI job's JUnit reports (``--tests``), read and checked by the composition root; None: none given."""
    admit: Callable[[ReviewRun], Awaitable[Refusal | None]] | None = None
    """The composition root's check once the run is configured and before any model is called (the kill
    switch, the daily caps): a refusal publishes and records the review as not reviewed. None: no check."""

    def say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)


@dataclass(frozen=True)
class Selection:
    """What the filter and tier stages decided: the files a model sees, the panel and each one's model."""

    kept: tuple[FileChange, ...]
    skipped: tuple[SkippedFile, ...]
    tier: Tier
    names: tuple[str, ...]
    models: Mapping[str, str | None]
    """Reviewer (and ``coordinator``) → the model it runs on; None when every model of its chain is disabled."""

    @property
    def reviewable(self) -> bool:
        return bool(self.kept and self.names)


@dataclass(frozen=True)
class ReviewRun:
    """One review's frozen state, passed to every stage instead of long parameter lists."""

    change: ChangeSet
    config: ReviewConfig
    options: ReviewOptions
    selection: Selection
    prices: PriceTable
    break_glass: bool
    started: float = field(default_factory=time.monotonic)
    withheld: list[str] = field(default_factory=list)
    """Why this review may not approve, one line each (``withhold``)."""

    @property
    def events(self) -> EventLog:
        return self.options.events

    @property
    def settings(self) -> Settings:
        return self.config.settings

    def limits_for(self, name: str) -> Limits:
        """A reviewer's budget: its own timeout when its spec sets one, else the settings'."""
        from codejury.agents.runner import Limits  # the model layer: not needed to check a review's input

        spec = self.config.reviewers.get(name)
        settings = self.settings
        timeout = spec.timeout_s if spec and spec.timeout_s else settings.reviewer_timeout_s
        return Limits(settings.max_tool_calls, settings.max_requests, settings.max_input_tokens, timeout)

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def withhold(self, reason: str) -> None:
        """Keep this review from approving, whatever its findings: a file skipped for a reason its author
        controls, a head tree that could not be read, models that all failed. The reason is one line in every
        output (the summary, the notes) and an ``approval_withheld`` event; break glass still approves."""
        if reason not in self.withheld:
            self.withheld.append(reason)
            self.events.emit("approval_withheld", reason=reason)
