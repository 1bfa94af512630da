"""The GitLab merge-request bot: load the MR as a change, read back and publish reviews.

- ``GitLabTarget`` (``gitlab.target``): which MR, from its URL or the merge request pipeline.
- ``GitLabMergeRequest`` (a ``plan.Forge``): ``load_change`` reads the MR (full description),
  its diff and the humans' comments; a ``break glass`` comment counts only from a member with
  Developer access or more who is not the bot (the others are dropped and named in the
  summary). Repository config, instructions, repository reviewers and rules come from the
  target branch: the MR's base commit, read ahead through the API (``prefetch_base``), never
  from the MR's head (with the old text of a moved file whose diff GitLab collapsed, so it is
  diffed against it). The head checkout is used as the tools' root only in CI when its HEAD is
  the MR's head commit. ``load_previous`` reads the bot's summary and threads (once a run;
  ``load_change`` does it first, so reviewers are told what the last review found and which
  files changed since its head commit); markers are trusted only on notes the token's own user
  wrote, and a thread counts as resolved by a human from GitLab's ``resolved_by``.
  ``publish`` posts inline threads first (4 at a time), resolves the fixed and dismissed
  threads, sets the approval, and edits or creates the summary last, so a run that dies
  halfway is completed by the next: everything already there is found by its marker and
  skipped.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from urllib.parse import quote

from codejury.change.discussion import Discussion as ChangeDiscussion
from codejury.change.discussion import DiscussionComment, DiscussionThread
from codejury.change.types import ChangeMeta, ChangeSet, FileChange, PrefetchedBase
from codejury.checkout.cache import Remote
from codejury.errors import InputError
from codejury.forges.adapter import (
    ForgeAdapter,
    forge_redactor,
    human_comments,
    resolved_by_human,
    thread_replies,
)
from codejury.forges.errors import ForgeError, ForgeRefused
from codejury.forges.gitlab.api import GitLabAPI
from codejury.forges.gitlab.target import GitLabTarget
from codejury.forges.gitlab.types import DiffRefs, Discussion, GitLabUser, MergeRequest, MRDiff, position_for
from codejury.forges.hosts import gitlab_instance
from codejury.forges.markers import trusted_finding, trusted_summary
from codejury.forges.plan import PreviousState, PreviousThread, PublishPlan, Replan
from codejury.forges.publish import finding_title, previous_review
from codejury.forges.summary import failure_note
from codejury.settings_loader import prefetch_base

DEVELOPER = 30
CONCURRENCY = 4
Warn = Callable[[str], None]


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


class GitLabMergeRequest(ForgeAdapter):
    """The bot on one merge request; use ``async with`` (it asks GitLab who the token is first)."""

    forge_name = "gitlab"
    noun = "merge request"

    def __init__(
        self,
        target: GitLabTarget,
        *,
        env: Mapping[str, str] | None = None,
        warn: Warn = lambda _: None,
        api: GitLabAPI | None = None,
    ) -> None:
        super().__init__()
        self.target = target
        self.env = dict(env or {})
        self.warn = warn
        self.api = api or GitLabAPI(target.api_url, target.token, redactor=forge_redactor(self.env, target.token))
        self._me: GitLabUser | None = None
        self._mr: MergeRequest | None = None
        self._refs: DiffRefs | None = None
        self._files: dict[str, FileChange] = {}
        self._previous = PreviousState()
        self._levels: dict[int, int | None] = {}
        self._discussions: list[Discussion] = []

    async def _identify(self) -> None:
        self._me = await self.api.current_user()

    async def _close(self) -> None:
        await self.api.close()

    @property
    def me(self) -> GitLabUser:
        if self._me is None:
            raise RuntimeError("use GitLabMergeRequest with async with")
        return self._me

    @property
    def head_sha(self) -> str:
        return self._refs.head_sha if self._refs else ""

    @property
    def web_url(self) -> str:
        return self._mr.web_url if self._mr else ""

    def line_url(self, path: str, start: int, end: int) -> str | None:
        if self._mr is None or "/-/merge_requests/" not in self._mr.web_url:
            return None
        project = self._mr.web_url.split("/-/merge_requests/", 1)[0]
        lines = f"L{start}" if end <= start else f"L{start}-{end}"
        return f"{project}/-/blob/{self.head_sha}/{quote(path)}#{lines}"

    async def _level(self, user: GitLabUser) -> int | None:
        if user.id not in self._levels:
            self._levels[user.id] = await self.api.member_access_level(self.target.project, user.id)
        return self._levels[user.id]

    async def _can_write(self, user: GitLabUser) -> bool:
        return user.id != self.me.id and (await self._level(user) or 0) >= DEVELOPER

    # -- reading ---------------------------------------------------------------------------------
    async def load_change(self) -> ChangeSet:
        """The MR as a change set; the bot's previous state is read here too (once a run)."""
        project, iid = self.target.project, self.target.iid
        self._mr = await self.api.merge_request(project, iid)
        self._refs = await self.api.latest_version(project, iid)
        base_sha = self._refs.base_sha
        async with _first_error() as tg:
            diffs = tg.create_task(self.api.diffs(project, iid))
            notes = tg.create_task(self.api.notes(project, iid))

            async def read_base() -> PrefetchedBase:  # the instructions governing the changed files too
                listed = [_file_change(d) for d in await diffs]
                return await prefetch_base(
                    functools.partial(self.api.file_text, project, ref=base_sha),
                    functools.partial(self.api.tree, project, ref=base_sha),
                    concurrency=CONCURRENCY,
                    changed=[f.path for f in listed],
                    moved=_moved_unshown(listed),
                )

            base = tg.create_task(read_base())
            previous = tg.create_task(self.load_previous())
            changed = tg.create_task(self._changed_since(previous))
        files = tuple(_file_change(d) for d in diffs.result())
        self._files = {f.path: f for f in files}
        humans = [(n.author, n.body) for n in notes.result() if not n.system and n.author.id != self.me.id]
        comments, allowed, ignored = await human_comments(humans, _username, self._can_write)
        self.break_glass_by, self.break_glass_ignored = tuple(allowed), tuple(ignored)
        side = await self.head_side(
            self.target.in_ci, self.env.get("CI_PROJECT_DIR"), self.head_sha, files, self._remote(),
            functools.partial(self._file_bytes, self.head_sha),
        )  # fmt: skip
        meta = ChangeMeta(
            title=self._mr.title,
            description=self._mr.description,
            author=self._mr.author.username,
            comments=tuple(comments),
            base_ref=self._mr.target_branch,
            head_ref=self._mr.source_branch,
            previous=previous_review(previous.result(), changed.result()),
            repository=self._mr.web_url.split("://", 1)[-1].split("/-/merge_requests/", 1)[0] or str(project),
            change_id=f"!{iid}",
            head_sha=self.head_sha,
            discussion=self._discussion(),
        )
        return ChangeSet(
            files=files, meta=meta, root=side.root, base=base.result(), left_out=side.left_out, head=side.head,
            no_tree=side.missing or "", head_unread=side.unread or "",
        )  # fmt: skip

    def _remote(self) -> Remote | None:
        """The project's clone URL on the configured GitLab, with the token; None when the project's path is unknown.

        A merge request named by its path (``--url``, the service) has it; a CI job names the project by id, and
        its path is read from the merge request's web URL, below the configured instance only."""
        web = gitlab_instance(self.env).web_url.rstrip("/")
        project = self.target.project
        if not isinstance(project, str):
            mr_url = self._mr.web_url if self._mr is not None else ""
            below, _, rest = mr_url.partition(web + "/")
            project = rest.split("/-/merge_requests/", 1)[0] if not below and "/-/merge_requests/" in rest else ""
        if not project:
            return None
        return Remote(f"{web}/{project}.git", "oauth2", self.target.token)

    async def _file_bytes(self, ref: str, path: str, max_bytes: int) -> bytes | None:
        return await self.api.file_bytes(self.target.project, path, ref, max_bytes=max_bytes)

    async def _changed_since(self, previous: asyncio.Task[PreviousState]) -> list[str] | None:
        """Files changed between the last reviewed head and this one; None when that commit is unknown."""
        state = (await previous).state
        if state is None or not self.head_sha:
            return None
        if state.head_sha == self.head_sha:
            return []
        return await self.api.compare(self.target.project, state.head_sha, self.head_sha)

    async def _read_previous(self) -> PreviousState:
        project, iid = self.target.project, self.target.iid
        summary: tuple[int, str] | None = None
        state = None
        threads: list[PreviousThread] = []
        self._discussions = await self.api.discussions(project, iid)
        for discussion in self._discussions:
            first = discussion.notes[0] if discussion.notes else None
            if first is None or first.author.id != self.me.id:
                continue
            found = trusted_summary(first.body, author_id=first.author.id, bot_id=self.me.id)
            if found is not None and summary is None:
                summary, state = (first.id, first.body), found
                continue
            key = trusted_finding(first.body, author_id=first.author.id, bot_id=self.me.id)
            if key is not None and first.position:
                threads.append(await self._thread(discussion, key))
        approvals = await self.api.approval_state(project, iid)
        self._previous = PreviousState(
            summary_id=summary[0] if summary else None,
            summary_body=summary[1] if summary else None,
            state=state,
            threads=tuple(threads),
            bot_approved=any(u.id == self.me.id for u in approvals.approved_by),
        )
        return self._previous

    def _discussion(self) -> ChangeDiscussion:
        """The MR's discussion for the reviewers: people's threads and codejury's findings with their replies
        (system notes, codejury's summary and its other notes left out)."""
        threads: list[DiscussionThread] = []
        for discussion in self._discussions:
            notes = [n for n in discussion.notes if not n.system]
            if not notes:
                continue
            first, mine = notes[0], notes[0].author.id == self.me.id
            finding = mine and trusted_finding(first.body, author_id=first.author.id, bot_id=self.me.id) is not None
            if mine and not finding:
                continue
            position = first.position or {}
            line = position.get("new_line") or position.get("old_line")
            by = discussion.resolved_by
            comments = tuple(
                DiscussionComment(n.author.username, n.body, n.created_at, by_bot=n.author.id == self.me.id)
                for n in notes
            )
            threads.append(DiscussionThread(
                comments, kind="finding" if finding else "comment",
                path=str(position.get("new_path") or position.get("old_path") or ""),
                line=int(line) if line else None, resolvable=discussion.resolvable, resolved=discussion.resolved,
                resolved_by=by.username if by else "",
            ))  # fmt: skip
        return ChangeDiscussion("gitlab", self.noun, tuple(threads))

    async def _thread(self, discussion: Discussion, key: str) -> PreviousThread:
        first = discussion.notes[0]
        position = first.position or {}
        end = int(position.get("new_line") or 0)
        start_info = (position.get("line_range") or {}).get("start") or {}
        start = int(start_info.get("new_line") or end)
        replies = await thread_replies(
            [(n.author, n.body) for n in discussion.notes[1:]],
            resolved=discussion.resolved,
            is_bot=lambda user: user.id == self.me.id,
            name=_username,
            can_write=self._can_write,
        )
        by = discussion.resolved_by
        by_bot = None if by is None else by.id == self.me.id
        by_writer = discussion.resolved and by is not None and not by_bot and await self._can_write(by)
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

    # -- publishing ------------------------------------------------------------------------------
    async def _bounded(self, jobs: list[Callable[[], Awaitable[None]]]) -> None:
        """Run ``jobs`` at most CONCURRENCY at a time; all run to the end, then the first error is raised."""
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(job: Callable[[], Awaitable[None]]) -> None:
            async with gate:
                await job()

        results = await asyncio.gather(*(one(j) for j in jobs), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def publish(self, plan: PublishPlan, replan: Replan) -> list[str]:
        """Inline threads, then resolutions, then approval, then the summary (see the module docstring)."""
        project, iid = self.target.project, self.target.iid
        refused: set[str] = set()
        notices: list[str] = []

        def post(comment_index: int) -> Callable[[], Awaitable[None]]:
            comment = plan.inline[comment_index]

            async def run() -> None:
                change = self._files.get(comment.finding.path)
                refs = self._refs
                position = position_for(refs, change, comment.start_line, comment.end_line) if change and refs else None
                if position is None:
                    refused.add(comment.fingerprint)
                    return
                try:
                    await self.api.create_discussion(project, iid, comment.body, position)
                except ForgeRefused as exc:
                    if exc.status != 400:
                        raise
                    refused.add(comment.fingerprint)
                    where = f"{comment.finding.path}:{comment.end_line}"
                    self.warn(f"GitLab refused the inline comment on {where}: moved to the summary")
                    return
                self.posted.append(f"inline comment on {comment.finding.path}:{comment.end_line}")

            return run

        await self._bounded([post(i) for i in range(len(plan.inline))])
        threads = {t.id: t for t in self._previous.threads}

        def settle(index: int) -> Callable[[], Awaitable[None]]:
            update = plan.resolve[index]

            async def run() -> None:
                thread = threads.get(update.thread_id)
                if thread is None or not thread.bot_said(update.note):
                    await self.api.reply(project, iid, update.thread_id, update.note)
                if not update.resolve:
                    self.posted.append("answered a reply")
                    return
                await self.api.resolve_discussion(project, iid, update.thread_id)
                self.posted.append(f"resolved a thread ({update.reason})")

            return run

        await self._bounded([settle(i) for i in range(len(plan.resolve))])
        notices += await self._approval(plan)
        if refused or notices:
            plan = replan(frozenset(refused), tuple(notices))
        previous = self._previous
        unchanged = not plan.summary_changed and all(n in (previous.summary_body or "") for n in notices)
        if previous.summary_id is not None and not unchanged and plan.summary != previous.summary_body:
            await self.api.edit_note(project, iid, int(previous.summary_id), plan.summary)
            self.posted.append("summary comment (edited)")
        elif previous.summary_id is None:
            await self.api.create_note(project, iid, plan.summary)
            self.posted.append("summary comment")
        return list(self.posted)

    async def _approval(self, plan: PublishPlan) -> list[str]:
        project, iid = self.target.project, self.target.iid
        if plan.approval == "approve":
            try:
                await self.api.approve(project, iid, sha=self.head_sha or None)
            except ForgeRefused as exc:
                if exc.status not in (401, 409):
                    raise
                self.warn(f"warning: could not approve: {exc}")
                why = "a newer commit was pushed" if exc.status == 409 else "GitLab refused the approval (401)"
                return [f"codejury could not approve this merge request: {why}."]
            self.posted.append("approval")
        elif plan.approval == "unapprove":
            try:
                await self.api.unapprove(project, iid)
            except ForgeRefused as exc:
                if exc.status != 404:
                    raise
            else:
                self.posted.append("approval withdrawn")
        return []

    async def publish_failure(self, previous: PreviousState, message: str, head_sha: str) -> list[str]:
        """The short failure note in place of the summary; withdraw an earlier approval."""
        project, iid = self.target.project, self.target.iid
        body, _ = failure_note(previous, message, head_sha or self.head_sha)
        if previous.bot_approved:
            try:
                await self.api.unapprove(project, iid)
                self.posted.append("approval withdrawn")
            except ForgeRefused as exc:
                if exc.status != 404:
                    raise
        if previous.summary_id is None:
            await self.api.create_note(project, iid, body)
            self.posted.append("failure note")
        elif previous.summary_body != body:
            await self.api.edit_note(project, iid, int(previous.summary_id), body)
            self.posted.append("failure note (summary edited)")
        return list(self.posted)
