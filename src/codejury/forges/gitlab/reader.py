"""Reading a merge request for a review: the change, the humans' comments and the bot's previous review.

``MergeRequestReader.load_change`` reads the MR (full description), its diff and the humans'
comments; a ``break glass`` comment counts only from a member with Developer access or more who is
not the bot (the others are dropped and named in the summary). Repository config, instructions,
repository reviewers and rules come from the target branch: the MR's base commit, read ahead
through the API (``prefetch_base``), never from the MR's head (with the old text of a moved file
whose diff GitLab collapsed, so it is diffed against it). The head checkout is used as the tools'
root only in CI when its HEAD is the MR's head commit. ``read_previous`` reads the bot's summary
and threads (once a run; ``load_change`` does it first, so reviewers are told what the last review
found and which files changed since its head commit); markers are trusted only on notes the
token's own user wrote, and a thread counts as resolved by a human from GitLab's ``resolved_by``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from urllib.parse import urlsplit

from codejury.change.discussion import Discussion as ChangeDiscussion
from codejury.change.discussion import DiscussionComment, DiscussionThread
from codejury.change.intent import read_linked
from codejury.change.types import ChangeMeta, ChangeSet, FileChange, PrefetchedBase
from codejury.checkout.cache import Remote
from codejury.errors import InputError
from codejury.forges.adapter import human_comments, resolved_by_human, thread_replies
from codejury.forges.description import described_commit, without_walkthrough
from codejury.forges.errors import ForgeError
from codejury.forges.gitlab.merge_request import CONCURRENCY, MergeRequestState
from codejury.forges.gitlab.types import Discussion, GitLabUser, MRDiff
from codejury.forges.hosts import gitlab_instance
from codejury.forges.markers import trusted_finding, trusted_summary
from codejury.forges.plan import PreviousState, PreviousThread
from codejury.forges.publish import finding_title, previous_review
from codejury.settings_loader import prefetch_base

DEVELOPER = 30


@asynccontextmanager
async def _first_error() -> AsyncIterator[asyncio.TaskGroup]:
    """A task group whose failure raises its first error (a ``ForgeError``), not an exception group."""
    try:
        async with asyncio.TaskGroup() as group:
            yield group
    except BaseExceptionGroup as errors:
        first = errors.exceptions[0]
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from errors


def _username(user: GitLabUser) -> str:
    return user.username


def _file_change(diff: MRDiff) -> FileChange:
    try:
        return diff.file_change()
    except (IndexError, ValueError, ForgeError, InputError):
        status = "added" if diff.new_file else "deleted" if diff.deleted_file else "modified"
        path = diff.old_path if diff.deleted_file else diff.new_path
        return FileChange(path=path, old_path=diff.old_path, status=status, is_binary=diff.text_left_out)  # type: ignore[arg-type]


def _moved_unshown(files: Sequence[FileChange]) -> list[str]:
    """The old paths of the moved files GitLab listed without their diff's text (collapsed or too large):
    read from the base so that ``change.noise.settled`` diffs such a file against its old text."""
    return [f.old_path for f in files if f.status in ("renamed", "copied") and f.old_path and f.is_binary]


class MergeRequestReader:
    """Reads ``pull`` and fills in what its publisher needs (diff version, changed files, previous review)."""

    def __init__(self, pull: MergeRequestState) -> None:
        self.pull = pull
        self._levels: dict[int, int | None] = {}
        self._discussions: list[Discussion] = []

    async def _level(self, user: GitLabUser) -> int | None:
        if user.id not in self._levels:
            self._levels[user.id] = await self.pull.api.member_access_level(self.pull.target.project, user.id)
        return self._levels[user.id]

    async def can_write(self, user: GitLabUser) -> bool:
        """Whether ``user`` (not the bot) has Developer access or more (asked once a user)."""
        return user.id != self.pull.me.id and (await self._level(user) or 0) >= DEVELOPER

    async def load_change(self) -> ChangeSet:
        """The MR as a change set; the bot's previous state is read here too (once a run)."""
        pull = self.pull
        project, iid = pull.target.project, pull.target.iid
        pull.mr = mr = await pull.api.merge_request(project, iid)
        pull.described_commit = described_commit(mr.description)
        pull.refs = await pull.api.latest_version(project, iid)
        base_sha = pull.refs.base_sha
        async with _first_error() as tg:
            diffs = tg.create_task(pull.api.diffs(project, iid))
            notes = tg.create_task(pull.api.notes(project, iid))

            async def read_base() -> PrefetchedBase:  # the instructions governing the changed files too
                listed = [_file_change(d) for d in await diffs]
                return await prefetch_base(
                    functools.partial(pull.api.file_text, project, ref=base_sha),
                    functools.partial(pull.api.tree, project, ref=base_sha),
                    concurrency=CONCURRENCY,
                    changed=[f.path for f in listed],
                    moved=_moved_unshown(listed),
                )

            base = tg.create_task(read_base())
            previous = tg.create_task(pull.load_previous())
            changed = tg.create_task(self._changed_since(previous))
        files = tuple(_file_change(d) for d in diffs.result())
        pull.files = {f.path: f for f in files}
        humans = [(n.author, n.body) for n in notes.result() if not n.system and n.author.id != pull.me.id]
        comments, allowed, ignored = await human_comments(humans, _username, self.can_write)
        pull.break_glass_by, pull.break_glass_ignored = tuple(allowed), tuple(ignored)
        side = await pull.head_side(
            pull.target.in_ci, pull.env.get("CI_PROJECT_DIR"), pull.head_sha, files, self._remote(),
            functools.partial(self._file_bytes, pull.head_sha),
        )  # fmt: skip
        meta = ChangeMeta(
            title=mr.title,
            description=without_walkthrough(mr.description),
            author=mr.author.username,
            comments=tuple(comments),
            base_ref=mr.target_branch,
            head_ref=mr.source_branch,
            previous=previous_review(previous.result(), changed.result()),
            repository=mr.web_url.split("://", 1)[-1].split("/-/merge_requests/", 1)[0] or str(project),
            change_id=f"!{iid}",
            head_sha=pull.head_sha,
            discussion=self._discussion(),
            labels=mr.labels,
        )
        host = urlsplit(gitlab_instance(pull.env).web_url).hostname or ""
        issues, unread = await read_linked(meta, host, lambda ref: pull.api.issue(ref.repo or project, ref.number))
        meta = replace(meta, linked_issues=issues, intent_notes=unread)
        return ChangeSet(
            files=files, meta=meta, root=side.root, base=base.result(), left_out=side.left_out, head=side.head,
            no_tree=side.missing or "", head_unread=side.unread or "",
        )  # fmt: skip

    def _remote(self) -> Remote | None:
        """The project's clone URL on the configured GitLab, with the token; None when the project's path is unknown.

        A merge request named by its path (``--url``, the service) has it; a CI job names the project by id, and
        its path is read from the merge request's web URL, below the configured instance only."""
        web = gitlab_instance(self.pull.env).web_url.rstrip("/")
        project = self.pull.target.project
        if not isinstance(project, str):
            mr_url = self.pull.mr.web_url if self.pull.mr is not None else ""
            below, _, rest = mr_url.partition(web + "/")
            project = rest.split("/-/merge_requests/", 1)[0] if not below and "/-/merge_requests/" in rest else ""
        if not project:
            return None
        return Remote(f"{web}/{project}.git", "oauth2", self.pull.target.token)

    async def _file_bytes(self, ref: str, path: str, max_bytes: int) -> bytes | None:
        return await self.pull.api.file_bytes(self.pull.target.project, path, ref, max_bytes=max_bytes)

    async def _changed_since(self, previous: asyncio.Task[PreviousState]) -> list[str] | None:
        """Files changed between the last reviewed head and this one; None when that commit is unknown."""
        state = (await previous).state
        if state is None or not self.pull.head_sha:
            return None
        if state.head_sha == self.pull.head_sha:
            return []
        return await self.pull.api.compare(self.pull.target.project, state.head_sha, self.pull.head_sha)

    async def read_previous(self) -> PreviousState:
        project, iid = self.pull.target.project, self.pull.target.iid
        summary: tuple[int, str] | None = None
        state = None
        threads: list[PreviousThread] = []
        self._discussions = await self.pull.api.discussions(project, iid)
        for discussion in self._discussions:
            first = discussion.notes[0] if discussion.notes else None
            if first is None or first.author.id != self.pull.me.id:
                continue
            found = trusted_summary(first.body, author_id=first.author.id, bot_id=self.pull.me.id)
            if found is not None and summary is None:
                summary, state = (first.id, first.body), found
                continue
            key = trusted_finding(first.body, author_id=first.author.id, bot_id=self.pull.me.id)
            if key is not None and first.position:
                threads.append(await self._thread(discussion, key))
        approvals = await self.pull.api.approval_state(project, iid)
        self.pull.previous = PreviousState(
            summary_id=summary[0] if summary else None,
            summary_body=summary[1] if summary else None,
            state=state,
            threads=tuple(threads),
            bot_approved=any(u.id == self.pull.me.id for u in approvals.approved_by),
        )
        return self.pull.previous

    def _discussion(self) -> ChangeDiscussion:
        """The MR's discussion for the reviewers: people's threads and codejury's findings with their replies
        (system notes, codejury's summary and its other notes left out)."""
        threads: list[DiscussionThread] = []
        for discussion in self._discussions:
            notes = [n for n in discussion.notes if not n.system]
            if not notes:
                continue
            first, mine = notes[0], notes[0].author.id == self.pull.me.id
            finding = (
                mine and trusted_finding(first.body, author_id=first.author.id, bot_id=self.pull.me.id) is not None
            )
            if mine and not finding:
                continue
            position = first.position or {}
            line = position.get("new_line") or position.get("old_line")
            by = discussion.resolved_by
            comments = tuple(
                DiscussionComment(n.author.username, n.body, n.created_at, by_bot=n.author.id == self.pull.me.id)
                for n in notes
            )
            threads.append(DiscussionThread(
                comments, kind="finding" if finding else "comment",
                path=str(position.get("new_path") or position.get("old_path") or ""),
                line=int(line) if line else None, resolvable=discussion.resolvable, resolved=discussion.resolved,
                resolved_by=by.username if by else "",
            ))  # fmt: skip
        return ChangeDiscussion("gitlab", self.pull.noun, tuple(threads))

    async def _thread(self, discussion: Discussion, key: str) -> PreviousThread:
        first = discussion.notes[0]
        position = first.position or {}
        end = int(position.get("new_line") or 0)
        start_info = (position.get("line_range") or {}).get("start") or {}
        start = int(start_info.get("new_line") or end)
        replies = await thread_replies(
            [(n.author, n.body) for n in discussion.notes[1:]],
            resolved=discussion.resolved,
            is_bot=lambda user: user.id == self.pull.me.id,
            name=_username,
            can_write=self.can_write,
        )
        by = discussion.resolved_by
        by_bot = None if by is None else by.id == self.pull.me.id
        by_writer = discussion.resolved and by is not None and not by_bot and await self.can_write(by)
        return PreviousThread(
            id=discussion.id,
            key=key,
            path=str(position.get("new_path") or position.get("old_path") or ""),
            start_line=start,
            end_line=end,
            resolved=discussion.resolved,
            resolved_by_human=resolved_by_human(discussion.resolved, by_bot, replies),
            resolved_by_writer=by_writer,
            replies=tuple(replies),
            title=finding_title(first.body),
        )
