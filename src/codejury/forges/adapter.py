"""What the forge adapters share (``GitLabMergeRequest``, ``GitHubPullRequest``).

- ``ForgeAdapter``: the ``async with`` lifetime (ask the forge who the token is, close the
  client however it ends), the previous state read once a run, the ``PlanOptions`` of the
  forge and ``publish_review`` (plan, publish, plan again when the forge refuses a comment);
  reading is its ``reader``'s (``AdapterReader``), publishing its ``publisher``'s (``AdapterPublisher``).
- ``human_comments``: the humans' comments, a ``break glass`` one kept only from a writer.
- ``thread_replies`` / ``resolved_by_human``: a bot thread's replies and who resolved it.
- ``ForgeAdapter.head_side``: the reviewed head commit's tree from the CI job's checkout or the
  repository cache (``checkout.head``), else its changed files through the forge's API, or why
  the review has none.
- ``forge_redactor``: the secrets every body is scrubbed of before it is posted (``safety.scrub_payload``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import ClassVar, Generic, Protocol, Self, TypeVar

from codejury.change.break_glass import BREAK_GLASS_RE
from codejury.change.types import ChangeSet, FileChange
from codejury.checkout import HeadSide
from codejury.checkout.fetch import Remote
from codejury.checkout.head import ReadFile, find_head_side, read_through_api
from codejury.findings import Review
from codejury.forges.plan import WONT_FIX, PlanOptions, PreviousState, PublishPlan, Replan, Reply
from codejury.forges.publish import plan_publish
from codejury.secrets import Redactor, secret_values

Author = TypeVar("Author")
Warn = Callable[[str], None]


def forge_redactor(env: Mapping[str, str], token: str) -> Redactor:
    """The run's credentials (``secrets.secret_values``) and the forge token, scrubbed from every body posted."""
    return Redactor([*secret_values(env), token])


class ForgeClient(Protocol):
    async def close(self) -> None: ...


TargetT = TypeVar("TargetT")
ClientT = TypeVar("ClientT", bound=ForgeClient)


class AdapterReader(Protocol):
    """Reads one merge or pull request for a review."""

    async def load_change(self) -> ChangeSet: ...

    async def read_previous(self) -> PreviousState: ...


class AdapterPublisher(Protocol):
    """Publishes a review (or the failure note) on one merge or pull request."""

    async def publish(self, plan: PublishPlan, replan: Replan) -> list[str]: ...

    async def publish_failure(self, previous: PreviousState, message: str, head_sha: str) -> list[str]: ...

    async def place_walkthrough(self, block: str) -> str | None: ...


class ForgeAdapter(Generic[TargetT, ClientT]):
    """The base of a ``plan.Forge`` on one merge or pull request (``target``): subclasses make the client
    (``_client``, unless one is given), their own state (``_start``), reader and publisher (``_parts``),
    and say who the token is (``_identify``)."""

    forge_name: ClassVar[str]
    """The forge, as the ``published`` event names it."""
    noun: ClassVar[str]
    """What is reviewed there, in messages: "merge request", "pull request"."""
    suggestion_offsets: ClassVar[bool] = True

    def __init__(
        self,
        target: TargetT,
        *,
        env: Mapping[str, str] | None = None,
        warn: Warn = lambda _: None,
        api: ClientT | None = None,
    ) -> None:
        self.target = target
        self.env = dict(env or {})
        self.warn = warn
        self.posted: list[str] = []
        self.break_glass_by: tuple[str, ...] = ()
        self.break_glass_ignored: tuple[str, ...] = ()
        self.read_only: str | None = None
        """Why nothing can be posted (the review stays in the job's log), or None."""
        self.described_commit = ""
        """The commit codejury's walkthrough block in the description names, as ``load_change`` read it ("": none)."""
        self._previous_read: PreviousState | None = None
        self._head_side: HeadSide | None = None
        self.api: ClientT = api if api is not None else self._client()
        self._start()
        self.reader, self.publisher = self._parts()

    def _client(self) -> ClientT:
        """The forge's client for ``target``, with the token."""
        raise NotImplementedError

    def _start(self) -> None:
        """The subclass's own state, set before its reader and publisher are made."""

    def _parts(self) -> tuple[AdapterReader, AdapterPublisher]:
        """The reader and the publisher, working on this adapter's state."""
        raise NotImplementedError

    async def head_side(
        self,
        in_ci: bool,
        checkout: str | None,
        head_sha: str,
        files: Sequence[FileChange],
        remote: Remote | None = None,
        read_file: ReadFile | None = None,
    ) -> HeadSide:
        """The head commit's tree for the tools and analyzers: from the CI job's checkout when this
        is a CI run (fetched into it when absent), else from the repository cache (``remote``
        fetched into it); when neither has it, the changed files through ``read_file`` (the forge's
        API) unless the operator turned the cache off; else none, with the reason. Removed on exit."""
        paths = [f.path for f in files if f.status != "deleted"]
        side = await asyncio.to_thread(
            find_head_side, in_ci=in_ci, checkout=checkout, head_sha=head_sha, paths=paths, remote=remote,
            env=self.env,
        )  # fmt: skip
        if side.root is None and not side.by_choice and read_file is not None and paths:
            side = await read_through_api(read_file, paths, side.missing or "the head commit could not be had")
        self._release_head_side()
        self._head_side = side
        return side

    def _release_head_side(self) -> None:
        if self._head_side is not None:
            self._head_side.close()
            self._head_side = None

    async def _identify(self) -> None:
        """Ask the forge who the token is."""
        raise NotImplementedError

    async def _close(self) -> None:
        await self.api.close()

    async def __aenter__(self) -> Self:
        try:
            await self._identify()
        except BaseException:
            await self._close()
            raise
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._release_head_side()
        await self._close()

    @property
    def head_sha(self) -> str:
        raise NotImplementedError

    def line_url(self, path: str, start: int, end: int) -> str | None:
        raise NotImplementedError

    async def load_previous(self) -> PreviousState:
        """The bot's summary, threads and approval (read once: ``load_change`` already reads them)."""
        if self._previous_read is None:
            self._previous_read = await self._read_previous()
        return self._previous_read

    async def load_change(self) -> ChangeSet:
        """The change to review; the previous state is read here too (once a run)."""
        return await self.reader.load_change()

    async def _read_previous(self) -> PreviousState:
        return await self.reader.read_previous()

    async def publish(self, plan: PublishPlan, replan: Replan) -> list[str]:
        return await self.publisher.publish(plan, replan)

    async def publish_failure(self, previous: PreviousState, message: str, head_sha: str) -> list[str]:
        """The short failure note in place of the summary, and no approval."""
        return await self.publisher.publish_failure(previous, message, head_sha)

    async def place_walkthrough(self, block: str) -> str | None:
        """Put ``block`` in the description (``forges.description``); None when it is there, else why not."""
        return await self.publisher.place_walkthrough(block)

    def plan_options(self, *, max_inline: int, approve: bool) -> PlanOptions:
        return PlanOptions(
            head_sha=self.head_sha,
            max_inline=max_inline,
            approve=approve,
            break_glass_by=self.break_glass_by,
            break_glass_ignored=self.break_glass_ignored,
            line_url=self.line_url,
            suggestion_offsets=self.suggestion_offsets,
        )

    async def publish_review(
        self, review: Review, files: Sequence[FileChange], previous: PreviousState, *, fail_on: str,
        approve: bool, max_inline: int, notices: tuple[str, ...] = (),
    ) -> PublishPlan:  # fmt: skip
        """Plan ``review`` against ``previous`` and publish it (``notices``: lines for the summary); the plan is
        returned."""
        options = replace(self.plan_options(max_inline=max_inline, approve=approve), notices=notices)
        plan = plan_publish(review, files, previous, options)

        def replan(refused: frozenset[str], more: tuple[str, ...]) -> PublishPlan:
            return plan_publish(review, files, previous, replace(options, refused=refused, notices=notices + more))

        await self.publish(plan, replan)
        return plan


async def human_comments(
    comments: Sequence[tuple[Author, str]],
    name: Callable[[Author], str],
    can_write: Callable[[Author], Awaitable[bool]],
) -> tuple[list[str], list[str], list[str]]:
    """``(bodies, break glass by, break glass ignored)`` of the humans' comments (the bot's left out
    by the caller): a ``break glass`` comment counts, and is kept, only from someone who can write."""
    bodies: list[str] = []
    allowed: list[str] = []
    ignored: list[str] = []
    for author, body in comments:
        if BREAK_GLASS_RE.search(body):
            names = allowed if await can_write(author) else ignored
            if name(author) not in names:
                names.append(name(author))
            if names is ignored:
                continue
        bodies.append(body)
    return bodies, allowed, ignored


async def thread_replies(
    replies: Sequence[tuple[Author, str]],
    *,
    resolved: bool,
    is_bot: Callable[[Author], bool],
    name: Callable[[Author], str],
    can_write: Callable[[Author], Awaitable[bool]],
) -> list[Reply]:
    """The replies after a thread's first comment; access is asked only where it matters."""
    out: list[Reply] = []
    for index, (author, body) in enumerate(replies, 1):
        bot = is_bot(author)
        # Access matters for a won't-fix, and for the last reply of an open thread (a dispute).
        asks = bool(WONT_FIX.match(body)) or (index == len(replies) and not resolved)
        writer = not bot and asks and await can_write(author)
        out.append(Reply(name(author), body, is_bot=bot, can_write=writer))
    return out


def resolved_by_human(resolved: bool, by_bot: bool | None, replies: Sequence[Reply]) -> bool:
    """Who resolved the thread, when the forge says (``by_bot``); else "no bot reply" stands in for it."""
    if not resolved:
        return False
    if by_bot is not None:
        return not by_bot
    return not any(r.is_bot for r in replies)
