"""The forge plan types: what a forge says about earlier runs, what to publish, and the ``Forge`` contract.

Plain data shared by the planner (``publish``), the summary's wording (``summary``), the check
run (``github.checks``) and the adapters (``gitlab``, ``github``), in a module of its own so none
of them imports another to name a type:

- ``Reply``, ``PreviousThread``, ``PreviousState``: what the bot published on a merge request
  before, read back by an adapter (``Forge.load_previous``);
- ``PlanOptions``: the forge's part of planning (head commit, break glass, line links, what the
  forge refused);
- ``InlineComment``, ``ThreadUpdate``, ``PublishPlan``: the plan ``publish.plan_publish`` makes;
- ``Forge``: the adapter protocol the CLI drives;
- thread keys (``thread_key``, ``split_thread_key``): ``<fingerprint>:<severity>:<code digest>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import ClassVar, Literal, Protocol, Self

from codejury.change.types import ChangeSet, FileChange
from codejury.findings import Finding, Review, Severity
from codejury.forges.markers import SummaryState

ApprovalAction = Literal["approve", "unapprove", "none"]
LineUrl = Callable[[str, int, int], str | None]
Replan = Callable[[frozenset[str], tuple[str, ...]], "PublishPlan"]
"""Plan again with these fingerprints refused by the forge and these notices for the summary."""
WONT_FIX = re.compile(r"^\s*(?:won['’]?t\s*fix|wontfix|acknowledged|ack)\b", re.IGNORECASE)
_SEVERITIES: tuple[Severity, ...] = ("critical", "warning", "suggestion")


# -- what a forge tells us about the previous runs -----------------------------------------------------
@dataclass(frozen=True)
class Reply:
    """A reply in one of the bot's threads."""

    author: str
    body: str
    is_bot: bool = False
    can_write: bool = False
    """The author has write (Developer) access: only then can a reply dismiss a finding."""


@dataclass(frozen=True)
class PreviousThread:
    """One inline thread the bot opened (its marker trusted: the note is the bot's own)."""

    id: str
    key: str
    path: str
    start_line: int
    end_line: int
    resolved: bool = False
    resolved_by_human: bool = False
    resolved_by_writer: bool = False
    """Resolved by a person the forge names, who has write access: a dismissal, as a ``won't fix`` reply is."""
    replies: tuple[Reply, ...] = ()
    title: str = ""
    """The finding's title as the bot's comment shows it (``finding_title``), for re-review context."""

    @property
    def fingerprint(self) -> str:
        return split_thread_key(self.key)[0]

    @property
    def severity(self) -> Severity | None:
        return split_thread_key(self.key)[1]

    @property
    def digest(self) -> str | None:
        return split_thread_key(self.key)[2]

    def dismissed_by(self) -> str | None:
        """The human (with write access) whose reply dismissed this finding, or None."""
        for reply in self.replies:
            if not reply.is_bot and reply.can_write and WONT_FIX.match(reply.body):
                return reply.author
        return None

    def bot_said(self, note: str) -> bool:
        return any(r.is_bot and r.body == note for r in self.replies)

    def dispute(self) -> Reply | None:
        """The reply awaiting the coordinator: an open thread the bot never answered, whose last reply
        comes from someone with write access and is not a won't-fix (that one dismisses on its own)."""
        if self.resolved or not self.replies or any(r.is_bot for r in self.replies):
            return None
        last = self.replies[-1]
        if not last.can_write or WONT_FIX.match(last.body) or not last.body.strip():
            return None
        return last


@dataclass(frozen=True)
class PreviousState:
    """What the bot published on this merge request before (all empty on a first review)."""

    summary_id: int | str | None = None
    summary_body: str | None = None
    state: SummaryState | None = None
    threads: tuple[PreviousThread, ...] = ()
    bot_approved: bool = False


@dataclass(frozen=True)
class PlanOptions:
    head_sha: str
    max_inline: int = 20
    approve: bool = True
    """False: comments only, never approve or withdraw an approval (config ``approve = false``)."""
    break_glass_by: tuple[str, ...] = ()
    break_glass_ignored: tuple[str, ...] = ()
    line_url: LineUrl | None = None
    suggestion_offsets: bool = True
    """GitLab: a multi-line suggestion names the lines above the commented one (``suggestion:-N+0``)."""
    refused: frozenset[str] = frozenset()
    """Fingerprints whose inline comment the forge refused: listed in the summary instead."""
    notices: tuple[str, ...] = ()
    """Lines the adapter wants stated in the summary (its own text, e.g. 'could not approve')."""


# -- the plan -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InlineComment:
    fingerprint: str
    key: str
    finding: Finding
    start_line: int
    end_line: int
    body: str


@dataclass(frozen=True)
class ThreadUpdate:
    """Reply ``note`` in a thread (unless the bot already said it), then resolve it unless ``resolve`` is False."""

    thread_id: str
    note: str
    reason: Literal["fixed", "dismissed", "answered"]
    resolve: bool = True


@dataclass(frozen=True)
class PublishPlan:
    summary: str
    state: SummaryState
    inline: tuple[InlineComment, ...]
    resolve: tuple[ThreadUpdate, ...]
    kept: tuple[str, ...]
    summary_only: tuple[tuple[Finding, str], ...]
    approval: ApprovalAction
    fixed: int
    still_open: int
    new: int
    summary_changed: bool
    """False when the previous summary already carries this exact state: nothing to edit."""


class Forge(Protocol):
    """A forge adapter: reads the change and the bot's previous state, publishes a plan.

    Used as ``async with`` (it learns who the token is first, and closes its client at the end).
    """

    forge_name: ClassVar[str]
    """The forge, as events name it: "gitlab", "github"."""
    noun: ClassVar[str]
    """What is reviewed there, in messages: "merge request", "pull request"."""
    posted: list[str]
    """What was posted so far, one line each (named when a later step fails)."""
    break_glass_by: tuple[str, ...]
    """Who invoked break glass in a comment (with write access), read by ``load_change``."""
    break_glass_ignored: tuple[str, ...]
    """Who asked for break glass without the access to."""
    read_only: str | None
    """Why nothing is posted (the token cannot write), or None."""
    described_commit: str
    """The commit codejury's walkthrough block in the description names, read by ``load_change`` ("": none)."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    @property
    def head_sha(self) -> str:
        """The head commit reviewed (known after ``load_change``)."""
        ...

    @property
    def web_url(self) -> str:
        """The merge request's page, for messages."""
        ...

    def line_url(self, path: str, start: int, end: int) -> str | None:
        """A link to these lines at the head commit (``PlanOptions.line_url``), or None."""
        ...

    def plan_options(self, *, max_inline: int, approve: bool) -> PlanOptions:
        """This forge's ``PlanOptions`` (head, break glass, line links, suggestion offsets)."""
        ...

    async def load_change(self) -> ChangeSet:
        """The merge request as a change set (diff, metadata, human comments; ``base`` read from the
        target branch; ``meta.previous`` from the bot's earlier review, see ``previous_review``)."""
        ...

    async def load_previous(self) -> PreviousState:
        """The bot's own summary and threads, trusted only on notes written by the bot."""
        ...

    async def publish(self, plan: PublishPlan, replan: Replan) -> list[str]:
        """Post ``plan`` (inline first, summary last); returns what was posted, one line each."""
        ...

    async def publish_failure(self, previous: PreviousState, message: str, head_sha: str) -> list[str]:
        """Post the short failure note of a review in which no reviewer succeeded."""
        ...

    async def publish_review(
        self, review: Review, files: Sequence[FileChange], previous: PreviousState, *, fail_on: str,
        approve: bool, max_inline: int, notices: tuple[str, ...] = (),
    ) -> PublishPlan:  # fmt: skip
        """Plan ``review`` (``plan_options``, ``plan_publish``) and ``publish`` it, planning again with
        what the forge refused; ``notices`` are lines for the summary; the first plan is returned."""
        ...

    async def place_walkthrough(self, block: str) -> str | None:
        """Put the walkthrough ``block`` in the description between codejury's markers, read right before it is
        written (``forges.description``); None when it is there, else why the token may not."""
        ...


def thread_key(fingerprint: str, severity: Severity, digest: str) -> str:
    return f"{fingerprint}:{severity}:{digest}"


def split_thread_key(key: str) -> tuple[str, Severity | None, str | None]:
    """``(fingerprint, severity, digest)``; a bare fingerprint gives ``(key, None, None)``."""
    parts = key.split(":")
    if len(parts) == 3 and parts[1] in _SEVERITIES:
        severity = next(s for s in _SEVERITIES if s == parts[1])
        return parts[0], severity, parts[2]
    return key, None, None
