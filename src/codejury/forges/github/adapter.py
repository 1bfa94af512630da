"""The GitHub pull-request bot: load the PR as a change, read back and publish reviews.

- ``GitHubTarget`` (``github.target``): which PR, from its URL or the Actions run.
- ``GitHubPullRequest`` (a ``plan.Forge``): ``load_change`` reads the PR (full body), its
  files and the humans' comments; a ``break glass`` comment counts only from a collaborator
  with write, maintain or admin permission who is not the bot. The base commit's config,
  AGENTS.md / CLAUDE.md and ``.codejury/{reviewers,rules}`` are prefetched through the
  contents API (``change.base``). ``load_previous`` reads the bot's summary (an issue
  comment), its review threads (GraphQL, with resolution and replies) and its approval;
  markers count only on comments the bot's own login wrote. ``load_change`` reads it first, so
  reviewers are told what the last review found and which files changed since its head commit
  (the compare API; unknown when that commit is gone or was force-pushed over).
- ``publish`` posts ONE review carrying every new inline comment and the approval event
  (APPROVE / REQUEST_CHANGES / COMMENT), each line checked against the patch first; a 422
  for a line off the diff moves the refused comments to the summary and retries once; a
  refused approval (Actions not allowed to approve, self-approval) is one warning and the
  review is re-posted as a comment. Then it withdraws a stale approval (dismissal), resolves
  fixed and dismissed threads (a reply first; only a reply when the token may not resolve;
  batched, a GraphQL request per ten threads),
  edits or creates the summary and sets the ``codejury`` check run. Every step skips what
  is already there, so a re-run on the same head posts nothing and a run that died halfway
  is completed by the next without duplicates.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Literal
from urllib.parse import quote

from codejury.change.discussion import Discussion, DiscussionComment, DiscussionThread
from codejury.change.types import BaseReader, ChangeMeta, ChangeSet, FileChange, PrefetchedBase
from codejury.checkout.cache import Remote
from codejury.findings import Review
from codejury.forges.adapter import (
    ForgeAdapter,
    forge_redactor,
    human_comments,
    resolved_by_human,
    thread_replies,
)
from codejury.forges.errors import ForgeAuthError, ForgeError
from codejury.forges.github.api import (
    THREADS_PER_REQUEST,
    CommentableLines,
    DraftComment,
    GitHubAPI,
    GitHubRefused,
    IssueComment,
    ReviewComment,
    ReviewEvent,
    ReviewThread,
    ThreadUpdate,
)
from codejury.forges.github.api import Review as GitHubReview
from codejury.forges.github.checks import CHECK_NAME, Outcome, check_conclusion, check_report, failed_report
from codejury.forges.github.target import (
    FORK_REASON,
    TOKEN_HINT,
    GitHubTarget,
    github_token,
    is_pull_request_url,
    target_from_env,
    target_from_url,
)
from codejury.forges.hosts import github_instance
from codejury.forges.markers import trusted_finding, trusted_summary
from codejury.forges.plan import InlineComment, PreviousState, PreviousThread, PublishPlan, Replan
from codejury.forges.plan import ThreadUpdate as ThreadChange
from codejury.forges.publish import finding_title, previous_review
from codejury.forges.safety import checked, inline_code, safe_line
from codejury.forges.summary import failure_note
from codejury.render.markdown import VERDICT_HEADLINES, render_review_markdown
from codejury.settings_loader import prefetch_base

WRITERS = frozenset({"admin", "maintain", "write"})
ReviewState = Literal["APPROVED", "CHANGES_REQUESTED"]
Warn = Callable[[str], None]
__all__ = [
    "GitHubPullRequest",
    "GitHubTarget",
    "Outcome",
    "check_conclusion",
    "github_token",
    "is_pull_request_url",
    "same_login",
    "target_from_env",
    "target_from_url",
]


def same_login(a: str | None, b: str | None) -> bool:
    """GraphQL names the Actions bot ``github-actions``, REST ``github-actions[bot]``: the same user."""
    return bool(a) and bool(b) and (a or "").removesuffix("[bot]").lower() == (b or "").removesuffix("[bot]").lower()


def _is_not_accessible(exc: ForgeError) -> bool:
    return isinstance(exc, ForgeAuthError) and exc.status == 403 and "not accessible by integration" in str(exc)


def _approval_refused(exc: GitHubRefused) -> bool:
    text = " ".join([str(exc), *exc.errors]).lower()
    return "approve" in text or "your own pull request" in text or "request changes" in text


def _off_diff(exc: GitHubRefused) -> bool:
    text = " ".join([str(exc), *exc.errors]).lower()
    return "diff" in text or "could not be resolved" in text or "line" in text


class GitHubPullRequest(ForgeAdapter):
    """The bot on one pull request; use ``async with`` (it asks GitHub who the token is first)."""

    forge_name = "github"
    noun = "pull request"
    suggestion_offsets = False
    """GitHub's ```suggestion replaces start_line..line, so no line offsets."""

    def __init__(
        self,
        target: GitHubTarget,
        *,
        env: Mapping[str, str] | None = None,
        warn: Warn = lambda _: None,
        api: GitHubAPI | None = None,
    ) -> None:
        super().__init__()
        self.target = target
        self.env = dict(env or {})
        self.warn = warn
        self.api = api or GitHubAPI(
            target.token,
            api_url=target.api_url,
            graphql_url=target.graphql_url,
            bot_login=target.bot_login,
            token_hint=TOKEN_HINT,
            redactor=forge_redactor(self.env, target.token),
        )
        self.read_only = target.read_only
        self.outcome: Outcome | None = None
        self._me = ""
        self._head_sha = ""
        self._html_url = ""
        self._commentable: dict[str, CommentableLines] = {}
        self._previous = PreviousState()
        self._threads: dict[str, ReviewThread] = {}
        self._active: list[GitHubReview] = []
        self._permissions: dict[str, str] = {}
        self._warned: set[str] = set()
        self._comments: tuple[list[IssueComment], list[ReviewComment]] | None = None
        self._all_threads: list[ReviewThread] = []
        self._all_reviews: list[GitHubReview] = []
        self._refused_event = False

    async def _identify(self) -> None:
        self._me = await self.api.current_login()

    async def _close(self) -> None:
        await self.api.close()

    @property
    def me(self) -> str:
        return self._me

    @property
    def head_sha(self) -> str:
        return self._head_sha

    @property
    def web_url(self) -> str:
        return self._html_url or f"{self.target.repo}#{self.target.number}"

    def line_url(self, path: str, start: int, end: int) -> str | None:
        if "/pull/" not in self._html_url or not self._head_sha:
            return None
        repo_url = self._html_url.rsplit("/pull/", 1)[0]
        lines = f"L{start}" if end <= start else f"L{start}-L{end}"
        return f"{repo_url}/blob/{self._head_sha}/{quote(path)}#{lines}"

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.warn(message)

    async def _can_write(self, login: str) -> bool:
        if same_login(login, self.me):
            return False
        if login not in self._permissions:
            try:
                self._permissions[login] = await self.api.permission(self.target.repo, login)
            except (ForgeAuthError, GitHubRefused):
                self._permissions[login] = "none"
        return self._permissions[login] in WRITERS

    # -- reading ---------------------------------------------------------------------------------
    async def load_change(self) -> ChangeSet:
        repo, number = self.target.repo, self.target.number
        pull = await self.api.pull_request(repo, number)
        self._head_sha, self._html_url = pull.head_sha, pull.html_url
        fork = bool(pull.head_repo) and bool(pull.base_repo) and pull.head_repo != pull.base_repo
        if fork and self.target.in_ci and self.env.get("GITHUB_EVENT_NAME") == "pull_request":
            self.read_only = self.read_only or FORK_REASON
        pull_files = await self.api.pull_files(repo, number)
        self._commentable = {f.path: f.commentable_lines() for f in pull_files}
        files = tuple(f.file_change() for f in pull_files)
        issue_comments, review_comments = await self._listed_comments()
        bodies = [(c.author, c.body) for c in issue_comments] + [(c.author, c.body) for c in review_comments]
        humans = [(author, body) for author, body in bodies if not same_login(author, self.me)]
        comments, allowed, ignored = await human_comments(humans, str, self._can_write)
        self.break_glass_by, self.break_glass_ignored = tuple(allowed), tuple(ignored)
        previous = await self.load_previous()
        meta = ChangeMeta(
            title=pull.title,
            description=pull.body,
            author=pull.author,
            comments=tuple(comments),
            base_ref=pull.base_ref,
            head_ref=pull.head_ref,
            previous=previous_review(previous, await self._changed_since(previous)),
            repository=_repository(pull.html_url, repo),
            change_id=f"#{number}",
            head_sha=pull.head_sha,
            discussion=self._discussion(issue_comments, review_comments),
        )
        remote = Remote(f"{github_instance(self.env).web_url}/{repo}.git", "x-access-token", self.target.token)
        side = await self.head_side(
            self.target.in_ci, self.env.get("GITHUB_WORKSPACE"), pull.head_sha, files, remote,
            functools.partial(self._file_bytes, pull.head_sha),
        )  # fmt: skip
        moved = [f.old_path for f in files if f.status in ("renamed", "copied") and f.old_path and f.is_binary]
        base = await self._base(pull.base_sha, [f.path for f in files], moved)
        return ChangeSet(
            files=files, meta=meta, root=side.root, base=base, left_out=side.left_out, head=side.head,
            no_tree=side.missing or "", head_unread=side.unread or "",
        )  # fmt: skip

    async def _file_bytes(self, ref: str, path: str, max_bytes: int) -> bytes | None:
        return await self.api.file_bytes(self.target.repo, path, ref, max_bytes=max_bytes)

    async def _changed_since(self, previous: PreviousState) -> list[str] | None:
        """Files changed between the last reviewed head and this one; None when GitHub cannot say.

        Unknown: that commit is gone or no longer an ancestor of the head (a force-push), or the
        comparison is too large to be listed whole (``GitHubAPI.compare``).
        """
        state = previous.state
        if state is None or not state.head_sha or not self.head_sha:
            return None
        if state.head_sha == self.head_sha:
            return []
        return await self.api.compare(self.target.repo, state.head_sha, self.head_sha)

    async def _listed_comments(self) -> tuple[list[IssueComment], list[ReviewComment]]:
        """The PR's issue and review comments, listed once a run (``load_change`` and ``_read_previous``)."""
        if self._comments is None:
            repo, number = self.target.repo, self.target.number
            self._comments = (await self.api.issue_comments(repo, number), await self.api.review_comments(repo, number))
        return self._comments

    async def _base(self, base_sha: str, changed: Sequence[str], moved: Sequence[str] = ()) -> BaseReader:
        """The base commit's config and instructions (never the PR's own), fetched up front, and the old text of
        the ``moved`` files: GitHub lists a rename that changed nothing without a patch."""
        if not base_sha:
            return PrefetchedBase({})
        return await prefetch_base(
            functools.partial(self.api.file_text, self.target.repo, ref=base_sha),
            functools.partial(self.api.list_directory, self.target.repo, ref=base_sha),
            changed=changed,
            moved=moved,
        )

    async def _read_previous(self) -> PreviousState:
        repo, number = self.target.repo, self.target.number
        summary: tuple[int, str] | None = None
        state = None
        issue_comments, review_comments = await self._listed_comments()
        for comment in issue_comments:
            if not same_login(comment.author, self.me):
                continue
            found = trusted_summary(comment.body, author_id=1, bot_id=1)  # the author is the bot: checked above
            if found is not None:
                summary, state = (comment.id, comment.body), found
                break
        rest = {c.id: c for c in review_comments}
        threads: list[PreviousThread] = []
        self._all_threads = await self.api.review_threads(repo, number)
        for thread in self._all_threads:
            first = thread.comments[0] if thread.comments else None
            if first is None or not same_login(first.author, self.me):
                continue
            key = trusted_finding(first.body, author_id=1, bot_id=1)
            if key is None:
                continue
            self._threads[thread.id] = thread
            origin = rest.get(first.database_id)
            end = thread.line or (origin.line or origin.original_line if origin else None) or 0
            start = (origin.start_line if origin else None) or end
            threads.append(await self._thread(thread, key, start, end, finding_title(first.body)))
        self._all_reviews = await self.api.reviews(repo, number)
        self._active = self._active_reviews(self._all_reviews)
        self._previous = PreviousState(
            summary_id=summary[0] if summary else None,
            summary_body=summary[1] if summary else None,
            state=state,
            threads=tuple(threads),
            bot_approved=self._state() == "APPROVED",
        )
        return self._previous

    def _discussion(
        self, issue_comments: Sequence[IssueComment], review_comments: Sequence[ReviewComment]
    ) -> Discussion:
        """The PR's discussion for the reviewers: people's comments and review bodies, and the review threads
        (people's, and codejury's findings) with their replies and resolution (GraphQL, matched by the first
        comment's id); codejury's summary and its other comments left out."""
        mine = functools.partial(same_login, self.me)
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
        return Discussion("github", self.noun, tuple(threads))

    def _active_reviews(self, reviews: Sequence[GitHubReview]) -> list[GitHubReview]:
        """The bot's reviews that still count: approvals and change requests not dismissed since."""
        mine = [r for r in reviews if same_login(r.author, self.me) and r.state in ("APPROVED", "CHANGES_REQUESTED")]
        return sorted(mine, key=lambda r: r.id)

    def _state(self) -> ReviewState | None:
        if not self._active:
            return None
        state = self._active[-1].state
        return "APPROVED" if state == "APPROVED" else "CHANGES_REQUESTED"

    async def _thread(self, thread: ReviewThread, key: str, start: int, end: int, title: str) -> PreviousThread:
        replies = await thread_replies(
            [(c.author, c.body) for c in thread.comments[1:]],
            resolved=thread.is_resolved,
            is_bot=lambda login: same_login(login, self.me),
            name=str,
            can_write=self._can_write,
        )
        by_bot = None if thread.resolved_by is None else same_login(thread.resolved_by, self.me)
        by_human = resolved_by_human(thread.is_resolved, by_bot, replies)
        by_writer = thread.is_resolved and by_bot is False and await self._can_write(thread.resolved_by or "")
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

    async def publish_review(
        self, review: Review, files: Sequence[FileChange], previous: PreviousState, *, fail_on: str,
        approve: bool, max_inline: int,
    ) -> PublishPlan:  # fmt: skip
        """Plan ``review`` against ``previous`` and publish it; the plan is returned."""
        self.outcome = Outcome(review, fail_on, approve)
        return await super().publish_review(
            review, files, previous, fail_on=fail_on, approve=approve, max_inline=max_inline
        )

    # -- publishing ------------------------------------------------------------------------------
    async def publish(self, plan: PublishPlan, replan: Replan) -> list[str]:
        """The review (inline + event), dismissals, resolutions, the summary, the check run."""
        if self.read_only:
            return self._keep_local(self._local_markdown(plan.summary))
        try:
            return await self._publish(plan, replan)
        except ForgeError as exc:
            if self.target.in_ci and not self.posted and _is_not_accessible(exc):
                self.read_only = f"the token cannot write here ({exc.status}: a fork's pull_request token is read-only)"
                return self._keep_local(self._local_markdown(plan.summary))
            raise

    async def _publish(self, plan: PublishPlan, replan: Replan) -> list[str]:
        refused: set[str] = set()
        notices: list[str] = []
        await self._post_review(plan, refused, notices)
        await self._withdraw(plan)
        await self._settle(plan)
        if refused or notices:
            plan = replan(frozenset(refused), tuple(notices))
        await self._summary(plan.summary, plan.summary_changed, notices)
        await self._check_run(plan)
        return list(self.posted)

    def _desired(self, plan: PublishPlan) -> ReviewState | None:
        outcome = self.outcome
        if outcome is not None and not outcome.approve:
            return self._state()  # comments only: leave the bot's approval state as it is
        if plan.approval == "approve" or (plan.approval == "none" and self._previous.bot_approved):
            return "APPROVED"
        review = outcome.review if outcome else None
        if (
            review is not None
            and review.verdict == "requested_changes"
            and review.judged
            and not review.break_glass
            and any(r.status == "ok" for r in review.reviewers)
        ):
            return "CHANGES_REQUESTED"
        return None

    async def _post_review(self, plan: PublishPlan, refused: set[str], notices: list[str]) -> None:
        desired = self._desired(plan)
        event: ReviewEvent = "COMMENT"
        if desired is not None and desired != self._state():
            event = "APPROVE" if desired == "APPROVED" else "REQUEST_CHANGES"
        comments: list[InlineComment] = []
        for comment in plan.inline:
            if self._allows(comment):
                comments.append(comment)
            else:
                refused.add(comment.fingerprint)
        for attempt in range(3):
            if not comments and event == "COMMENT":
                return
            drafts = [
                DraftComment(c.finding.path, c.end_line, c.body, start_line=c.start_line if c.start_line < c.end_line
                             else None)
                for c in comments
            ]  # fmt: skip
            try:
                await self.api.create_review(
                    self.target.repo, self.target.number, commit_id=self.head_sha, body=self._review_body(plan, event),
                    event=event, comments=drafts,
                )  # fmt: skip
            except GitHubRefused as exc:
                if exc.status != 422 or attempt == 2:
                    raise
                if event != "COMMENT" and _approval_refused(exc):
                    what = "approve" if event == "APPROVE" else "request changes on"
                    reason = safe_line(
                        exc.errors[0] if exc.errors else re.sub(r"^GitHub refused \S+ \S+: ", "", str(exc))
                    )
                    self.warn(
                        f"warning: GitHub refused to let codejury {what} this pull request ({reason}); the review "
                        "is posted as a comment. A workflow GITHUB_TOKEN may approve only when the repository allows "
                        "GitHub Actions to approve pull requests; nobody may approve their own pull request."
                    )
                    notices.append(f"codejury could not {what} this pull request: GitHub refused ({reason}).")
                    self._refused_event = True
                    event = "COMMENT"
                    continue
                if comments and _off_diff(exc):
                    offenders = await self._offenders(comments)
                    refused.update(offenders)
                    comments = [c for c in comments if c.fingerprint not in offenders]
                    self.warn(
                        f"warning: GitHub refused {len(offenders)} inline comment(s) as outside the diff: "
                        "moved to the summary"
                    )
                    continue
                raise
            self._record_review(event, len(comments))
            return

    def _record_review(self, event: ReviewEvent, count: int) -> None:
        if count:
            self.posted.append(f"review with {count} inline comment(s)")
        if event == "APPROVE":
            self.posted.append("approval")
            self._active.append(GitHubReview(0, "APPROVED", "", self.head_sha, self.me))
        elif event == "REQUEST_CHANGES":
            self.posted.append("changes requested")
            self._active.append(GitHubReview(0, "CHANGES_REQUESTED", "", self.head_sha, self.me))

    def _allows(self, comment: InlineComment) -> bool:
        lines = self._commentable.get(comment.finding.path)
        start = comment.start_line if comment.start_line < comment.end_line else None
        return lines is not None and lines.allows(comment.end_line, start_line=start)

    async def _offenders(self, comments: Sequence[InlineComment]) -> set[str]:
        """The comments GitHub refused: those off the diff as GitHub shows it now, else all (it does not say)."""
        fresh = {f.path: f.commentable_lines() for f in await self.api.pull_files(self.target.repo, self.target.number)}
        self._commentable = fresh
        offenders = {c.fingerprint for c in comments if not self._allows(c)}
        return offenders or {c.fingerprint for c in comments}

    def _review_body(self, plan: PublishPlan, event: ReviewEvent) -> str:
        verdict = plan.state.verdict
        headline = VERDICT_HEADLINES.get(verdict, verdict) if verdict else "review"
        lead = {"APPROVE": "Approved", "REQUEST_CHANGES": "Changes requested", "COMMENT": "Comments"}[event]
        text = (
            f"**codejury** · {lead} · verdict: {safe_line(headline)} · commit {inline_code(self.head_sha[:12])}\n\n"
            "The summary comment on this pull request has the whole review."
        )
        return checked(text)

    async def _withdraw(self, plan: PublishPlan) -> None:
        """Dismiss the bot's reviews that no longer say what the verdict says (an approval, a block)."""
        if self.outcome is not None and not self.outcome.approve:
            return
        desired = self._desired(plan)
        if not self._refused_event and desired == self._state():
            return
        stale = [r for r in self._active if r.id and r.state != desired]
        for review in stale:
            await self._dismiss(review)

    async def _dismiss(self, review: GitHubReview) -> None:
        message = f"Withdrawn by codejury: the review of {self.head_sha[:12]} does not stand by it any more."
        try:
            await self.api.dismiss_review(self.target.repo, self.target.number, review.id, message)
        except (ForgeAuthError, GitHubRefused) as exc:
            self._warn_once("dismiss", f"warning: could not withdraw codejury's earlier review: {exc}")
            return
        self._active = [r for r in self._active if r.id != review.id]
        self.posted.append("approval withdrawn" if review.state == "APPROVED" else "change request withdrawn")

    async def _settle(self, plan: PublishPlan) -> None:
        """Reply (once) in each fixed, dismissed or answered thread and resolve the first two, a GraphQL
        request per ``THREADS_PER_REQUEST`` threads; a token that may not resolve: replies only, one warning."""
        for first in range(0, len(plan.resolve), THREADS_PER_REQUEST):
            await self._settle_some(plan.resolve[first : first + THREADS_PER_REQUEST])

    async def _settle_some(self, some: Sequence[ThreadChange]) -> None:
        previous = {t.id: t for t in self._previous.threads}
        updates = []
        for update in some:
            thread = previous.get(update.thread_id)
            reply = update.note if thread is None or not thread.bot_said(update.note) else None
            known = self._threads.get(update.thread_id)
            resolve = update.resolve and (known is None or known.viewer_can_resolve) and "resolve" not in self._warned
            if update.resolve and not resolve:
                self._cannot_resolve()
            updates.append(ThreadUpdate(update.thread_id, reply, resolve))
        failure: ForgeError | None = None
        for change, outcome in zip(some, await self.api.settle_threads(updates), strict=True):
            if outcome.replied:
                self.posted.append(f"reply in a thread ({change.reason})")
            if outcome.resolved:
                self.posted.append(f"resolved a thread ({change.reason})")
            elif isinstance(outcome.resolve_error, ForgeAuthError):
                self._cannot_resolve()
            elif outcome.resolve_error is not None:
                failure = failure or outcome.resolve_error
            failure = failure or outcome.reply_error
        if failure is not None:
            raise failure

    def _cannot_resolve(self) -> None:
        self._warn_once(
            "resolve",
            "warning: the token may not resolve review threads (a workflow GITHUB_TOKEN needs `contents: write` "
            "besides `pull-requests: write`): replied in them instead",
        )

    async def _summary(self, body: str, changed: bool, notices: Sequence[str]) -> None:
        repo, number, previous = self.target.repo, self.target.number, self._previous
        unchanged = not changed and all(n in (previous.summary_body or "") for n in notices)
        if previous.summary_id is not None and not unchanged and body != previous.summary_body:
            await self.api.edit_issue_comment(repo, int(previous.summary_id), body)
            self.posted.append("summary comment (edited)")
        elif previous.summary_id is None:
            await self.api.create_issue_comment(repo, number, body)
            self.posted.append("summary comment")

    # -- the check run -----------------------------------------------------------------------------
    async def _check_run(self, plan: PublishPlan | None, *, failed: str | None = None) -> None:
        if failed is not None:
            conclusion, title, summary, annotations = failed_report(failed)
        elif self.outcome is None or plan is None:
            return
        else:
            conclusion, title, summary, annotations = check_report(self.outcome, plan, self.head_sha)
        try:
            wanted = ("completed", conclusion, title, summary)
            for run in await self.api.check_runs_for(self.target.repo, self.head_sha, CHECK_NAME):
                if (run.status, run.conclusion, run.title, run.summary) == wanted:
                    return
            await self.api.create_check_run(
                self.target.repo, name=CHECK_NAME, head_sha=self.head_sha, title=title, summary=summary,
                conclusion=conclusion, annotations=annotations,
            )  # fmt: skip
        except (ForgeAuthError, GitHubRefused) as exc:
            self._warn_once(
                "checks",
                f"warning: no check run: GitHub refused it ({exc.status}); a workflow token needs `checks: write`, "
                "and a personal token cannot create check runs",
            )
            return
        self.posted.append(f"check run ({conclusion})")

    # -- failure and read-only runs ----------------------------------------------------------------
    async def publish_failure(self, previous: PreviousState, message: str, head_sha: str) -> list[str]:
        """The short failure note in place of the summary, no approval, and a "not reviewed" check run."""
        body, _ = failure_note(previous, message, head_sha or self.head_sha)
        if self.read_only:
            return self._keep_local(body)
        try:
            for review in [r for r in self._active if r.state == "APPROVED"]:
                await self._dismiss(review)
            await self._summary(body, True, ())
            await self._check_run(None, failed=message)
        except ForgeError as exc:
            if self.target.in_ci and not self.posted and _is_not_accessible(exc):
                self.read_only = f"the token cannot write here ({exc.status})"
                return self._keep_local(body)
            raise
        return list(self.posted)

    def _local_markdown(self, summary: str) -> str:
        return render_review_markdown(self.outcome.review) if self.outcome else summary

    def _keep_local(self, markdown: str) -> list[str]:
        """Post nothing: the review goes to the job summary (the job log has it already)."""
        where = "the job log"
        path = self.env.get("GITHUB_STEP_SUMMARY")
        if path:
            try:
                with open(path, "a", encoding="utf-8") as out:
                    out.write(markdown if markdown.endswith("\n") else markdown + "\n")
                where = "the job log and the job summary"
            except OSError as exc:
                self.warn(f"warning: cannot write the job summary {path}: {exc}")
        self.warn(f"nothing was posted on GitHub: {self.read_only}; the review is in {where}")
        return []


def _repository(html_url: str, repo: str) -> str:
    """``host/owner/repo`` from the pull request's page (as a clone's ``origin`` names it), else ``owner/repo``."""
    page = html_url.split("://", 1)[-1]
    return page.split("/pull/", 1)[0] if "/pull/" in page else repo
