"""Reading a pull request for a review: the change, the humans' comments and the bot's previous review.

``PullRequestReader.load_change`` reads the PR (full body), its files and the humans' comments; a
``break glass`` comment counts only from a collaborator with write, maintain or admin permission
who is not the bot. The base commit's config, AGENTS.md / CLAUDE.md and ``.codejury/{reviewers,rules}``
are prefetched through the contents API (``change.base``). ``read_previous`` reads the bot's summary
(an issue comment), its review threads (GraphQL, with resolution and replies) and its approval;
markers count only on comments the bot's own login wrote. ``load_change`` reads it first, so
reviewers are told what the last review found and which files changed since its head commit (the
compare API; unknown when that commit is gone or was force-pushed over).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from urllib.parse import urlsplit

from codejury.change.discussion import Discussion, DiscussionComment, DiscussionThread
from codejury.change.intent import read_linked
from codejury.change.types import BaseReader, ChangeMeta, ChangeSet, PrefetchedBase
from codejury.checkout.cache import Remote
from codejury.forges.adapter import human_comments, resolved_by_human, thread_replies
from codejury.forges.description import described_commit, without_walkthrough
from codejury.forges.errors import ForgeAuthError
from codejury.forges.github.api import GitHubRefused, IssueComment, ReviewComment, ReviewThread
from codejury.forges.github.api import Review as GitHubReview
from codejury.forges.github.pull import PullRequestState, same_login
from codejury.forges.github.target import FORK_REASON
from codejury.forges.hosts import github_instance
from codejury.forges.markers import trusted_finding, trusted_summary
from codejury.forges.plan import PreviousState, PreviousThread
from codejury.forges.publish import finding_title, previous_review
from codejury.settings_loader import prefetch_base

WRITERS = frozenset({"admin", "maintain", "write"})


class PullRequestReader:
    """Reads ``pull`` and fills in what its publisher needs (head commit, commentable lines, previous review)."""

    def __init__(self, pull: PullRequestState) -> None:
        self.pull = pull
        self._permissions: dict[str, str] = {}
        self._comments: tuple[list[IssueComment], list[ReviewComment]] | None = None
        self._all_threads: list[ReviewThread] = []
        self._all_reviews: list[GitHubReview] = []

    async def can_write(self, login: str) -> bool:
        """Whether ``login`` (not the bot) may write to the repository (asked once a login)."""
        pull = self.pull
        if same_login(login, pull.me):
            return False
        if login not in self._permissions:
            try:
                self._permissions[login] = await pull.api.permission(pull.target.repo, login)
            except (ForgeAuthError, GitHubRefused):
                self._permissions[login] = "none"
        return self._permissions[login] in WRITERS

    async def load_change(self) -> ChangeSet:
        pull = self.pull
        repo, number = pull.target.repo, pull.target.number
        pr = await pull.api.pull_request(repo, number)
        pull.opened(pr.head_sha, pr.html_url)
        pull.described_commit = described_commit(pr.body)
        fork = bool(pr.head_repo) and bool(pr.base_repo) and pr.head_repo != pr.base_repo
        if fork and pull.target.in_ci and pull.env.get("GITHUB_EVENT_NAME") == "pull_request":
            pull.read_only = pull.read_only or FORK_REASON
        pull_files = await pull.api.pull_files(repo, number)
        pull.commentable = {f.path: f.commentable_lines() for f in pull_files}
        files = tuple(f.file_change() for f in pull_files)
        issue_comments, review_comments = await self._listed_comments()
        bodies = [(c.author, c.body) for c in issue_comments] + [(c.author, c.body) for c in review_comments]
        humans = [(author, body) for author, body in bodies if not same_login(author, pull.me)]
        comments, allowed, ignored = await human_comments(humans, str, self.can_write)
        pull.break_glass_by, pull.break_glass_ignored = tuple(allowed), tuple(ignored)
        previous = await pull.load_previous()
        meta = ChangeMeta(
            title=pr.title,
            description=without_walkthrough(pr.body),
            author=pr.author,
            comments=tuple(comments),
            base_ref=pr.base_ref,
            head_ref=pr.head_ref,
            previous=previous_review(previous, await self._changed_since(previous)),
            repository=_repository(pr.html_url, repo),
            change_id=f"#{number}",
            head_sha=pr.head_sha,
            discussion=self._discussion(issue_comments, review_comments),
            labels=pr.labels,
        )
        host = urlsplit(github_instance(pull.env).web_url).hostname or ""
        issues, notes = await read_linked(meta, host, lambda ref: pull.api.issue(ref.repo or repo, ref.number))
        meta = replace(meta, linked_issues=issues, intent_notes=notes)
        remote = Remote(f"{github_instance(pull.env).web_url}/{repo}.git", "x-access-token", pull.target.token)
        side = await pull.head_side(
            pull.target.in_ci, pull.env.get("GITHUB_WORKSPACE"), pr.head_sha, files, remote,
            functools.partial(self._file_bytes, pr.head_sha),
        )  # fmt: skip
        moved = [f.old_path for f in files if f.status in ("renamed", "copied") and f.old_path and f.is_binary]
        base = await self._base(pr.base_sha, [f.path for f in files], moved)
        return ChangeSet(
            files=files, meta=meta, root=side.root, base=base, left_out=side.left_out, head=side.head,
            no_tree=side.missing or "", head_unread=side.unread or "",
        )  # fmt: skip

    async def _file_bytes(self, ref: str, path: str, max_bytes: int) -> bytes | None:
        return await self.pull.api.file_bytes(self.pull.target.repo, path, ref, max_bytes=max_bytes)

    async def _changed_since(self, previous: PreviousState) -> list[str] | None:
        """Files changed between the last reviewed head and this one; None when GitHub cannot say.

        Unknown: that commit is gone or no longer an ancestor of the head (a force-push), or the
        comparison is too large to be listed whole (``GitHubAPI.compare``).
        """
        state, head_sha = previous.state, self.pull.head_sha
        if state is None or not state.head_sha or not head_sha:
            return None
        if state.head_sha == head_sha:
            return []
        return await self.pull.api.compare(self.pull.target.repo, state.head_sha, head_sha)

    async def _listed_comments(self) -> tuple[list[IssueComment], list[ReviewComment]]:
        """The PR's issue and review comments, listed once a run (``load_change`` and ``read_previous``)."""
        if self._comments is None:
            api, repo, number = self.pull.api, self.pull.target.repo, self.pull.target.number
            self._comments = (await api.issue_comments(repo, number), await api.review_comments(repo, number))
        return self._comments

    async def _base(self, base_sha: str, changed: Sequence[str], moved: Sequence[str] = ()) -> BaseReader:
        """The base commit's config and instructions (never the PR's own), fetched up front, and the old text of
        the ``moved`` files: GitHub lists a rename that changed nothing without a patch."""
        if not base_sha:
            return PrefetchedBase({})
        api, repo = self.pull.api, self.pull.target.repo
        return await prefetch_base(
            functools.partial(api.file_text, repo, ref=base_sha),
            functools.partial(api.list_directory, repo, ref=base_sha),
            changed=changed,
            moved=moved,
        )

    async def read_previous(self) -> PreviousState:
        pull = self.pull
        repo, number = pull.target.repo, pull.target.number
        summary: tuple[int, str] | None = None
        state = None
        issue_comments, review_comments = await self._listed_comments()
        for comment in issue_comments:
            if not same_login(comment.author, pull.me):
                continue
            found = trusted_summary(comment.body, author_id=1, bot_id=1)  # the author is the bot: checked above
            if found is not None:
                summary, state = (comment.id, comment.body), found
                break
        rest = {c.id: c for c in review_comments}
        threads: list[PreviousThread] = []
        self._all_threads = await pull.api.review_threads(repo, number)
        for thread in self._all_threads:
            first = thread.comments[0] if thread.comments else None
            if first is None or not same_login(first.author, pull.me):
                continue
            key = trusted_finding(first.body, author_id=1, bot_id=1)
            if key is None:
                continue
            pull.threads[thread.id] = thread
            origin = rest.get(first.database_id)
            end = thread.line or (origin.line or origin.original_line if origin else None) or 0
            start = (origin.start_line if origin else None) or end
            threads.append(await self._thread(thread, key, start, end, finding_title(first.body)))
        self._all_reviews = await pull.api.reviews(repo, number)
        pull.active = self._active_reviews(self._all_reviews)
        pull.previous = PreviousState(
            summary_id=summary[0] if summary else None,
            summary_body=summary[1] if summary else None,
            state=state,
            threads=tuple(threads),
            bot_approved=pull.review_state() == "APPROVED",
        )
        return pull.previous

    def _discussion(
        self, issue_comments: Sequence[IssueComment], review_comments: Sequence[ReviewComment]
    ) -> Discussion:
        """The PR's discussion for the reviewers: people's comments and review bodies, and the review threads
        (people's, and codejury's findings) with their replies and resolution (GraphQL, matched by the first
        comment's id); codejury's summary and its other comments left out."""
        mine = functools.partial(same_login, self.pull.me)
        threads: list[DiscussionThread] = [
            DiscussionThread((DiscussionComment(c.author, c.body, c.created_at),))
            for c in issue_comments
            if not mine(c.author)
        ]
        threads += [
            DiscussionThread((DiscussionComment(r.author, r.body, r.submitted_at),), kind="review", state=r.state)
            for r in self._all_reviews
            if r.body.strip() and not mine(r.author)
        ]
        roots = {c.id: c for c in review_comments if c.in_reply_to_id is None}
        replies: dict[int, list[ReviewComment]] = {}
        for c in review_comments:
            if c.in_reply_to_id is not None:
                replies.setdefault(c.in_reply_to_id, []).append(c)
        resolution = {t.comments[0].database_id: t for t in self._all_threads if t.comments}
        for root in roots.values():
            finding = mine(root.author) and trusted_finding(root.body, author_id=1, bot_id=1) is not None
            if mine(root.author) and not finding:
                continue
            known = resolution.get(root.id)
            comments = [root, *sorted(replies.get(root.id, ()), key=lambda c: (c.created_at, c.id))]
            threads.append(DiscussionThread(
                tuple(DiscussionComment(c.author, c.body, c.created_at, by_bot=mine(c.author)) for c in comments),
                kind="finding" if finding else "comment", path=root.path,
                line=(known.line if known else None) or root.line or root.original_line,
                resolvable=known is not None, resolved=bool(known and known.is_resolved),
                resolved_by=(known.resolved_by or "") if known else "", outdated=bool(known and known.is_outdated),
            ))  # fmt: skip
        return Discussion("github", self.pull.noun, tuple(threads))

    def _active_reviews(self, reviews: Sequence[GitHubReview]) -> list[GitHubReview]:
        """The bot's reviews that still count: approvals and change requests not dismissed since."""
        me = self.pull.me
        mine = [r for r in reviews if same_login(r.author, me) and r.state in ("APPROVED", "CHANGES_REQUESTED")]
        return sorted(mine, key=lambda r: r.id)

    async def _thread(self, thread: ReviewThread, key: str, start: int, end: int, title: str) -> PreviousThread:
        me = self.pull.me
        replies = await thread_replies(
            [(c.author, c.body) for c in thread.comments[1:]],
            resolved=thread.is_resolved,
            is_bot=lambda login: same_login(login, me),
            name=str,
            can_write=self.can_write,
        )
        by_bot = None if thread.resolved_by is None else same_login(thread.resolved_by, me)
        by_human = resolved_by_human(thread.is_resolved, by_bot, replies)
        by_writer = thread.is_resolved and by_bot is False and await self.can_write(thread.resolved_by or "")
        return PreviousThread(
            id=thread.id,
            key=key,
            path=thread.path,
            start_line=min(start, end) if start and end else end,
            end_line=end,
            resolved=thread.is_resolved,
            resolved_by_human=by_human,
            resolved_by_writer=by_writer,
            replies=tuple(replies),
            title=title,
        )


def _repository(html_url: str, repo: str) -> str:
    """``host/owner/repo`` from the pull request's page (as a clone's ``origin`` names it), else ``owner/repo``."""
    page = html_url.split("://", 1)[-1]
    return page.split("/pull/", 1)[0] if "/pull/" in page else repo
