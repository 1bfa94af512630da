"""The GitHub pull-request bot: find the PR, load it as a change, read back and publish reviews.

- ``GitHubTarget``: the REST and GraphQL URLs, repository, PR number and token
  (``CODEJURY_GITHUB_TOKEN``, else ``GITHUB_TOKEN``), from a PR URL (``target_from_url``;
  GitHub Enterprise: ``https://HOST/api/v3``) or a GitHub Actions ``pull_request`` /
  ``pull_request_target`` run (``target_from_env``). A ``pull_request`` run from a fork gets a
  read-only token: the target says so and nothing is posted.
- ``GitHubPullRequest`` (a ``publish.Forge``): ``load_change`` reads the PR (full body), its
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
  fixed and dismissed threads (a reply first; only a reply when the token may not resolve),
  edits or creates the summary and sets the ``codejury`` check run. Every step skips what
  is already there, so a re-run on the same head posts nothing and a run that died halfway
  is completed by the next without duplicates.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Literal
from urllib.parse import quote, urlsplit

from codejury.change.types import BaseReader, ChangeMeta, ChangeSet, FileChange, PrefetchedBase
from codejury.errors import InputError
from codejury.findings import Finding, Review
from codejury.fingerprint import unique_fingerprints
from codejury.forges.errors import ForgeAuthError, ForgeError
from codejury.forges.github_api import (
    ACTIONS_BOT_LOGIN,
    DEFAULT_API_URL,
    Annotation,
    AnnotationLevel,
    CommentableLines,
    DraftComment,
    GitHubAPI,
    GitHubRefused,
    ReviewEvent,
    ReviewThread,
)
from codejury.forges.github_api import Review as GitHubReview
from codejury.forges.markers import trusted_finding, trusted_summary
from codejury.forges.publish import (
    WONT_FIX,
    InlineComment,
    PlanOptions,
    PreviousState,
    PreviousThread,
    PublishPlan,
    Replan,
    Reply,
    checked,
    failure_note,
    finding_title,
    plan_publish,
    previous_review,
)
from codejury.forges.safety import inline_code, safe_line
from codejury.judge.verdict import should_fail
from codejury.pipeline import BREAK_GLASS_RE
from codejury.render.markdown import VERDICT_HEADLINES, render_review_markdown
from codejury.settings_loader import prefetch_base

TOKEN_ENVS = ("CODEJURY_GITHUB_TOKEN", "GITHUB_TOKEN")
TOKEN_HINT = "CODEJURY_GITHUB_TOKEN (or GITHUB_TOKEN)"
BOT_LOGIN_ENV = "CODEJURY_GITHUB_BOT_LOGIN"
CHECK_NAME = "codejury"
WRITERS = frozenset({"admin", "maintain", "write"})
PR_EVENTS = ("pull_request", "pull_request_target")
FORK_REASON = "this pull_request run comes from a fork, whose token is read-only"
_PR_PATH = re.compile(r"^(?P<repo>[^/]+/[^/]+)/pull/(?P<number>\d+)(?:/.*)?$")
_LEVELS: dict[str, AnnotationLevel] = {"critical": "failure", "warning": "warning", "suggestion": "notice"}
ReviewState = Literal["APPROVED", "CHANGES_REQUESTED"]
Warn = Callable[[str], None]


@dataclass(frozen=True)
class GitHubTarget:
    """One pull request on one GitHub, and the token to act there (never printed)."""

    api_url: str
    graphql_url: str
    repo: str
    number: int
    token: str = field(repr=False)
    in_ci: bool = False
    read_only: str | None = None
    """Why the token cannot write (a fork's ``pull_request`` run), or None."""
    bot_login: str | None = None


def github_token(env: Mapping[str, str]) -> tuple[str, str]:
    """``(token, variable)``: ``CODEJURY_GITHUB_TOKEN`` first, else the workflow's ``GITHUB_TOKEN``."""
    for name in TOKEN_ENVS:
        token = env.get(name, "").strip()
        if token:
            return token, name
    raise InputError(
        "CODEJURY_GITHUB_TOKEN and GITHUB_TOKEN are not set: pass the workflow's token "
        "(env: GITHUB_TOKEN: ${{ github.token }}) or a token with pull-requests: write"
    )


def is_pull_request_url(url: str) -> bool:
    parts = urlsplit(url.strip())
    return parts.scheme in ("http", "https") and bool(parts.netloc) and bool(_PR_PATH.match(parts.path.strip("/")))


def target_from_url(url: str, env: Mapping[str, str]) -> GitHubTarget:
    """``https://github.com/o/r/pull/7`` → ``api.github.com``; ``https://HOST/o/r/pull/7`` → ``HOST/api/v3``."""
    parts = urlsplit(url.strip())
    match = _PR_PATH.match(parts.path.strip("/"))
    if parts.scheme not in ("http", "https") or not parts.netloc or match is None:
        raise InputError(f"not a GitHub pull request URL: {url!r} (expected https://HOST/OWNER/REPO/pull/N)")
    if parts.netloc.lower() in ("github.com", "www.github.com"):
        api_url, graphql_url = DEFAULT_API_URL, DEFAULT_API_URL + "/graphql"
    else:
        api_url = f"{parts.scheme}://{parts.netloc}/api/v3"
        graphql_url = f"{parts.scheme}://{parts.netloc}/api/graphql"
    token, _ = github_token(env)
    login = env.get(BOT_LOGIN_ENV) or None
    return GitHubTarget(api_url, graphql_url, match["repo"], int(match["number"]), token, bot_login=login)


def target_from_env(env: Mapping[str, str]) -> GitHubTarget | None:
    """The PR of a GitHub Actions ``pull_request`` / ``pull_request_target`` run, or None when this is not one."""
    event_name = env.get("GITHUB_EVENT_NAME", "")
    if env.get("GITHUB_ACTIONS") != "true" or event_name not in PR_EVENTS:
        return None
    event = _event(env.get("GITHUB_EVENT_PATH", ""))
    found = event.get("pull_request")
    pull: dict[str, object] = found if isinstance(found, dict) else {}
    number = pull.get("number") or event.get("number")
    base_repo = _full_name(pull.get("base")) or env.get("GITHUB_REPOSITORY", "")
    head_repo = _full_name(pull.get("head")) or base_repo
    if not isinstance(number, int) or "/" not in base_repo:
        raise InputError(f"a {event_name} run whose event file (GITHUB_EVENT_PATH) names no pull request")
    api_url = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    graphql_url = env.get("GITHUB_GRAPHQL_URL") or api_url + "/graphql"
    token, variable = github_token(env)
    read_only = FORK_REASON if event_name == "pull_request" and head_repo != base_repo else None
    login = env.get(BOT_LOGIN_ENV) or (ACTIONS_BOT_LOGIN if variable == "GITHUB_TOKEN" else None)
    return GitHubTarget(api_url, graphql_url, base_repo, number, token, True, read_only, login)


def _event(path: str) -> dict[str, object]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the GitHub event file GITHUB_EVENT_PATH={path}: {exc}") from exc
    return data if isinstance(data, dict) else {}


def _full_name(side: object) -> str:
    repo = side.get("repo") if isinstance(side, dict) else None
    return str(repo.get("full_name") or "") if isinstance(repo, dict) else ""


def same_login(a: str | None, b: str | None) -> bool:
    """GraphQL names the Actions bot ``github-actions``, REST ``github-actions[bot]``: the same user."""
    return bool(a) and bool(b) and (a or "").removesuffix("[bot]").lower() == (b or "").removesuffix("[bot]").lower()


def _checkout_root(env: Mapping[str, str], head_sha: str) -> Path | None:
    directory = env.get("GITHUB_WORKSPACE")
    if not directory or not head_sha:
        return None
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True, check=False, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(directory) if result.returncode == 0 and result.stdout.strip() == head_sha else None


@dataclass(frozen=True)
class Outcome:
    """What the check run and the approval event need from the review."""

    review: Review
    fail_on: str = "requested_changes"
    approve: bool = True


def check_conclusion(outcome: Outcome) -> tuple[str, str]:
    """``(conclusion, title)``: never success for a review that did not complete."""
    review = outcome.review
    counts = {s: sum(1 for f in review.findings if f.severity == s) for s in ("critical", "warning", "suggestion")}
    tally = ", ".join(f"{n} {s}{'' if n == 1 else 's'}" for s, n in counts.items() if n) or "no findings"
    headline = VERDICT_HEADLINES.get(review.verdict, review.verdict)
    if not any(r.status == "ok" for r in review.reviewers):
        return "failure", "not reviewed"
    if should_fail(review, outcome.fail_on):  # type: ignore[arg-type]
        return "failure", f"{headline}: {tally}"
    if not review.judged:
        return "neutral", f"not fully reviewed (unjudged): {tally}"
    if review.break_glass or review.verdict in ("approved", "approved_with_comments"):
        return "success", f"{headline}: {tally}"
    return "neutral", f"{headline}: {tally}"


def _is_not_accessible(exc: ForgeError) -> bool:
    return isinstance(exc, ForgeAuthError) and exc.status == 403 and "not accessible by integration" in str(exc)


def _approval_refused(exc: GitHubRefused) -> bool:
    text = " ".join([str(exc), *exc.errors]).lower()
    return "approve" in text or "your own pull request" in text or "request changes" in text


def _off_diff(exc: GitHubRefused) -> bool:
    text = " ".join([str(exc), *exc.errors]).lower()
    return "diff" in text or "could not be resolved" in text or "line" in text


class GitHubPullRequest:
    """The bot on one pull request; use ``async with`` (it asks GitHub who the token is first)."""

    def __init__(
        self,
        target: GitHubTarget,
        *,
        env: Mapping[str, str] | None = None,
        warn: Warn = lambda _: None,
        api: GitHubAPI | None = None,
    ) -> None:
        self.target = target
        self.env = dict(env or {})
        self.warn = warn
        self.api = api or GitHubAPI(
            target.token,
            api_url=target.api_url,
            graphql_url=target.graphql_url,
            bot_login=target.bot_login,
            token_hint=TOKEN_HINT,
        )
        self.posted: list[str] = []
        self.break_glass_by: tuple[str, ...] = ()
        self.break_glass_ignored: tuple[str, ...] = ()
        self.read_only: str | None = target.read_only
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
        self._refused_event = False
        self._previous_read: PreviousState | None = None

    async def __aenter__(self) -> GitHubPullRequest:
        try:
            self._me = await self.api.current_login()
        except BaseException:
            await self.api.close()
            raise
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
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
        bodies = [(c.author, c.body) for c in await self.api.issue_comments(repo, number)]
        bodies += [(c.author, c.body) for c in await self.api.review_comments(repo, number)]
        comments, allowed, ignored = await self._human_comments(bodies)
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
        )
        root = _checkout_root(self.env, pull.head_sha) if self.target.in_ci else None
        return ChangeSet(files=files, meta=meta, root=root, base=await self._base(pull.base_sha))

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

    async def _human_comments(self, bodies: Sequence[tuple[str, str]]) -> tuple[list[str], list[str], list[str]]:
        comments: list[str] = []
        allowed: list[str] = []
        ignored: list[str] = []
        for author, body in bodies:
            if same_login(author, self.me):
                continue
            if BREAK_GLASS_RE.search(body):
                names = allowed if await self._can_write(author) else ignored
                if author not in names:
                    names.append(author)
                if names is ignored:
                    continue
            comments.append(body)
        return comments, allowed, ignored

    async def _base(self, base_sha: str) -> BaseReader:
        """The base commit's config and instructions (never the PR's own), fetched up front."""
        if not base_sha:
            return PrefetchedBase({})
        return await prefetch_base(
            functools.partial(self.api.file_text, self.target.repo, ref=base_sha),
            functools.partial(self.api.list_directory, self.target.repo, ref=base_sha),
        )

    async def load_previous(self) -> PreviousState:
        """The bot's summary, threads and approval (read once: ``load_change`` already reads them)."""
        if self._previous_read is None:
            self._previous_read = await self._read_previous()
        return self._previous_read

    async def _read_previous(self) -> PreviousState:
        repo, number = self.target.repo, self.target.number
        summary: tuple[int, str] | None = None
        state = None
        for comment in await self.api.issue_comments(repo, number):
            if not same_login(comment.author, self.me):
                continue
            found = trusted_summary(comment.body, author_id=1, bot_id=1)  # the author is the bot: checked above
            if found is not None:
                summary, state = (comment.id, comment.body), found
                break
        rest = {c.id: c for c in await self.api.review_comments(repo, number)}
        threads: list[PreviousThread] = []
        for thread in await self.api.review_threads(repo, number):
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
        self._active = self._active_reviews(await self.api.reviews(repo, number))
        self._previous = PreviousState(
            summary_id=summary[0] if summary else None,
            summary_body=summary[1] if summary else None,
            state=state,
            threads=tuple(threads),
            bot_approved=self._state() == "APPROVED",
        )
        return self._previous

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
        replies = []
        last = len(thread.comments) - 1
        for index, comment in enumerate(thread.comments[1:], 1):
            is_bot = same_login(comment.author, self.me)
            # Access matters for a won't-fix, and for the last reply of an open thread (a dispute).
            asks = bool(WONT_FIX.match(comment.body)) or (index == last and not thread.is_resolved)
            can_write = not is_bot and asks and await self._can_write(comment.author)
            replies.append(Reply(comment.author, comment.body, is_bot=is_bot, can_write=can_write))
        if thread.resolved_by is not None:
            by_human = thread.is_resolved and not same_login(thread.resolved_by, self.me)
        else:
            by_human = thread.is_resolved and not any(r.is_bot for r in replies)
        return PreviousThread(
            id=thread.id,
            key=key,
            path=thread.path,
            start_line=min(start, end) if start and end else end,
            end_line=end,
            resolved=thread.is_resolved,
            resolved_by_human=by_human,
            replies=tuple(replies),
            title=title,
        )

    # -- planning ----------------------------------------------------------------------------------
    def plan_options(self, *, max_inline: int, approve: bool) -> PlanOptions:
        """GitHub's options: its ```suggestion replaces start_line..line, so no line offsets."""
        return PlanOptions(
            head_sha=self.head_sha,
            max_inline=max_inline,
            approve=approve,
            break_glass_by=self.break_glass_by,
            break_glass_ignored=self.break_glass_ignored,
            line_url=self.line_url,
            suggestion_offsets=False,
        )

    async def publish_review(
        self, review: Review, files: Sequence[FileChange], previous: PreviousState, *, fail_on: str,
        approve: bool, max_inline: int,
    ) -> PublishPlan:  # fmt: skip
        """Plan ``review`` against ``previous`` and publish it; the plan is returned."""
        self.outcome = Outcome(review, fail_on, approve)
        options = self.plan_options(max_inline=max_inline, approve=approve)
        plan = plan_publish(review, files, previous, options)

        def replan(refused: frozenset[str], notices: tuple[str, ...]) -> PublishPlan:
            return plan_publish(review, files, previous, replace(options, refused=refused, notices=notices))

        await self.publish(plan, replan)
        return plan

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
        """Reply (once) and resolve each fixed or dismissed thread, one at a time (GitHub asks for serial writes)."""
        previous = {t.id: t for t in self._previous.threads}
        for update in plan.resolve:
            thread = previous.get(update.thread_id)
            if thread is None or not thread.bot_said(update.note):
                await self.api.reply_to_thread(update.thread_id, update.note)
                self.posted.append(f"reply in a thread ({update.reason})")
            if not update.resolve:
                continue
            known = self._threads.get(update.thread_id)
            if (known is not None and not known.viewer_can_resolve) or "resolve" in self._warned:
                self._cannot_resolve()
                continue
            try:
                await self.api.resolve_thread(update.thread_id)
            except ForgeAuthError:
                self._cannot_resolve()
                continue
            self.posted.append(f"resolved a thread ({update.reason})")

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
            conclusion, title = "failure", "not reviewed"
            summary = checked(f"No reviewer succeeded: {safe_line(failed)}. Nothing was approved.")
            annotations: list[Annotation] = []
        elif self.outcome is None or plan is None:
            return
        else:
            conclusion, title = check_conclusion(self.outcome)
            open_findings = self._open_findings(plan)
            summary = checked(
                f"**{safe_line(title)}** for commit {inline_code(self.head_sha[:12])}: "
                f"{len(open_findings)} open finding(s). The summary comment on the pull request has the whole review."
            )
            annotations = [_annotation(f) for f in open_findings]
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

    def _open_findings(self, plan: PublishPlan) -> list[Finding]:
        if self.outcome is None:
            return []
        findings = self.outcome.review.findings
        fps = unique_fingerprints(findings)
        return [f for fp, f in zip(fps, findings, strict=True) if plan.state.findings.get(fp) == "open"]

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


def _annotation(finding: Finding) -> Annotation:
    return Annotation(
        path=finding.path,
        start_line=max(1, finding.start_line),
        end_line=max(finding.start_line, finding.end_line, 1),
        level=_LEVELS.get(finding.severity, "notice"),
        message=safe_line(finding.body or finding.title)[:4000],
        title=safe_line(finding.title)[:255],
    )
