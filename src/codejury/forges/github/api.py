"""The GitHub REST and GraphQL calls codejury makes to read a pull request and publish a review.

One async client, typed records in and out, and every failure translated into the forge
error tree (``codejury.forges.errors``) so the publisher decides by class:

- retries are decided by ``forges.retry.RetryingTransport``, the one policy of both forges: a
  rate limit (429, or a 403 that is one) waits as GitHub says (``Retry-After``, else
  ``x-ratelimit-reset``, else a minute for a secondary limit), a wait longer than
  ``max_wait_s`` fails at once; 5xx and network errors are retried for reads, ``PUT``s, GraphQL
  queries and comment edits, never for a ``POST`` that creates something (a review, a comment,
  a check run: GitHub may have stored it; the next run finds it by its marker). What is left is
  ``ForgeUnavailable``.
- 401 and other 403s: ``ForgeAuthError`` naming the variable that holds the token.
- other 4xx: ``GitHubRefused`` (a ``ForgeRefused``) carrying GitHub's ``errors`` list: a 422
  on a review names the comments GitHub refused, so the caller can move those findings to
  the summary and retry.

Messages never contain the token or a request header. Threads and their resolution exist
only in GraphQL (documents and batching in ``github.graphql``); everything else is REST. The
records read and sent (``PullRequest``, ``ReviewThread``, ``CommentableLines``, ...) live in
``github.types`` and are re-exported here, so callers import the client and its types from one place.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx2

from codejury.bounded_io import read_async
from codejury.errors import InputError
from codejury.forges.errors import ForgeAuthError, ForgeError, ForgeRefused, ForgeUnavailable
from codejury.forges.github.graphql import (
    REPLY,
    RESOLVE,
    THREADS_PER_REQUEST,
    THREADS_QUERY,
    UNRESOLVE,
    ThreadOutcome,
    ThreadUpdate,
    settle_document,
)
from codejury.forges.github.types import (
    Annotation,
    AnnotationLevel,
    CheckRun,
    CommentableLines,
    DraftComment,
    IssueComment,
    PullFile,
    PullRequest,
    Review,
    ReviewComment,
    ReviewEvent,
    ReviewThread,
    Side,
    ThreadComment,
    user_login,
)
from codejury.forges.retry import (
    RETRY_LOG,
    SAFE_TO_RETRY,
    RetryingTransport,
    RetryLog,
    RetryPolicy,
    rate_limited,
    unavailable_reason,
)
from codejury.forges.safety import scrub_payload
from codejury.secrets import Redactor

DEFAULT_API_URL = "https://api.github.com"
ACTIONS_BOT_LOGIN = "github-actions[bot]"
TOKEN_HINT = "GITHUB_TOKEN or CODEJURY_GITHUB_TOKEN"
MAX_ANNOTATIONS_PER_REQUEST = 50
COMPARE_MAX_FILES = 300  # GitHub lists at most 300 files of a comparison, on its first page only
SECONDARY_LIMIT_WAIT_S = 60.0  # GitHub: "wait at least one minute" when it gives no hint
_MAX_PAGES = 500
__all__ = [
    "ACTIONS_BOT_LOGIN",
    "COMPARE_MAX_FILES",
    "DEFAULT_API_URL",
    "MAX_ANNOTATIONS_PER_REQUEST",
    "SECONDARY_LIMIT_WAIT_S",
    "THREADS_PER_REQUEST",
    "TOKEN_HINT",
    "Annotation",
    "AnnotationLevel",
    "CheckRun",
    "CommentableLines",
    "DraftComment",
    "GitHubAPI",
    "GitHubRefused",
    "IssueComment",
    "PullFile",
    "PullRequest",
    "Review",
    "ReviewComment",
    "ReviewEvent",
    "ReviewThread",
    "Side",
    "ThreadComment",
    "ThreadOutcome",
    "ThreadUpdate",
]


class GitHubRefused(ForgeRefused):
    """GitHub understood the request and said no; ``errors`` is its own list of reasons."""

    def __init__(self, message: str, *, status: int | None = None, errors: Sequence[str] = ()) -> None:
        super().__init__(message, status=status)
        self.errors = tuple(errors)


# -- the client ---------------------------------------------------------------------------------
class GitHubAPI:
    """Async GitHub client for one token. ``repo`` arguments are ``"owner/name"``.

    ``bot_login`` names the token's user when GitHub cannot tell (a GitHub App installation
    token); a workflow ``GITHUB_TOKEN`` is ``github-actions[bot]``. ``sleep`` and ``clock`` are
    injectable so tests do not wait.
    """

    def __init__(
        self,
        token: str,
        *,
        api_url: str = DEFAULT_API_URL,
        graphql_url: str | None = None,
        bot_login: str | None = None,
        token_hint: str = TOKEN_HINT,
        page_size: int = 100,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        max_wait_s: float = 60.0,
        timeout_s: float = 30.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        transport: httpx2.AsyncBaseTransport | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self._api_url = api_url.rstrip("/")
        self._graphql_url = graphql_url or self._api_url + "/graphql"
        self._token = token
        self._login = bot_login
        self._token_hint = token_hint
        self._page_size = max(1, min(100, page_size))
        self._redactor = redactor
        policy = RetryPolicy(
            max_retries=max_retries,
            backoff_s=backoff_s,
            max_wait_s=max_wait_s,
            unhinted_limit_wait_s=SECONDARY_LIMIT_WAIT_S,
        )
        headers = {
            "authorization": f"Bearer {token}",
            "accept": "application/vnd.github+json",
            "x-github-api-version": "2022-11-28",
            "user-agent": "codejury",
        }
        self._client = httpx2.AsyncClient(
            base_url=self._api_url,
            headers=headers,
            timeout=timeout_s,
            transport=RetryingTransport(transport, policy, sleep=sleep, clock=clock),
        )

    async def close(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> GitHubAPI:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- identity and the pull request --------------------------------------------------------------
    async def current_login(self) -> str:
        """The token's login; a workflow token may not read ``/user`` (403), so it is the Actions bot."""
        if self._login is None:
            try:
                self._login = user_login({"user": await self._json("GET", "/user")})
            except ForgeAuthError as exc:
                if exc.status != 403:
                    raise
                self._login = ACTIONS_BOT_LOGIN
        return self._login

    async def pull_request(self, repo: str, number: int) -> PullRequest:
        return PullRequest.from_json(await self._json("GET", f"/repos/{repo}/pulls/{number}"))

    async def update_pull_body(self, repo: str, number: int, body: str) -> PullRequest:
        """Write the pull request's description (``PATCH /repos/{repo}/pulls/{n}`` with ``body``)."""
        return PullRequest.from_json(await self._json("PATCH", f"/repos/{repo}/pulls/{number}", payload={"body": body}))

    async def pull_files(self, repo: str, number: int) -> list[PullFile]:
        return [PullFile.from_json(d) for d in await self._all_pages(f"/repos/{repo}/pulls/{number}/files")]

    async def permission(self, repo: str, login: str) -> str:
        """``admin``, ``write``, ``read`` or ``none``: whose comments and approvals count."""
        data = await self._json("GET", f"/repos/{repo}/collaborators/{quote(login, safe='')}/permission")
        return str(data.get("permission") or "none")

    async def compare(self, repo: str, base: str, head: str) -> list[str] | None:
        """Paths that differ between commit ``base`` and its descendant ``head``; None when unknown.

        ``GET /repos/{repo}/compare/{base}...{head}`` diffs the merge base against ``head``, which is
        ``base`` itself only when ``head`` descends from it (status ``ahead`` or ``identical``).
        Unknown: a commit GitHub does not have (404, e.g. garbage-collected after a force-push;
        422), histories that diverged or went back (a rebase, a force-push: the merge base is not
        ``base``), and a list at GitHub's cap of 300 files, which may be cut: the files come on the
        first page only and are never paginated (``per_page``/``page`` page the commits), so one
        page of one commit is asked for. A renamed file gives both its paths.
        """
        path = f"/repos/{repo}/compare/{quote(base, safe='')}...{quote(head, safe='')}"
        try:
            response = await self._request("GET", path, params={"per_page": 1})
        except GitHubRefused as exc:
            if exc.status in (404, 422):
                return None
            raise
        data = _decode(response)
        if not isinstance(data, dict) or data.get("status") not in ("ahead", "identical"):
            return None
        files = [f for f in data.get("files") or [] if isinstance(f, dict)]
        if len(files) >= COMPARE_MAX_FILES:
            return None
        paths: list[str] = []
        for item in files:
            for found in (item.get("filename"), item.get("previous_filename")):
                if isinstance(found, str) and found and found not in paths:
                    paths.append(found)
        return paths

    # -- repository files at one commit (the base side: config and instructions) -------------------
    async def _contents(self, repo: str, path: str, ref: str) -> dict[str, Any] | None:
        """The contents API's answer for ``path`` at ``ref`` (an object), or None when it is absent there."""
        try:
            data = await self._request("GET", f"/repos/{repo}/contents/{quote(path, safe='/')}", params={"ref": ref})
        except GitHubRefused as exc:
            if exc.status == 404:
                return None
            raise
        item = _decode(data)
        return item if isinstance(item, dict) else None

    async def issue(self, repo: str, number: int) -> tuple[str, str, str] | None:
        """An issue's title, body and page (``GET /repos/{repo}/issues/{n}``); None when the token cannot see it,
        it does not exist, or it is a pull request."""
        try:
            data = _decode(await self._request("GET", f"/repos/{repo}/issues/{int(number)}"))
        except GitHubRefused as exc:
            if exc.status in (404, 410):
                return None
            raise
        if not isinstance(data, dict) or "pull_request" in data:
            return None
        return str(data.get("title") or ""), str(data.get("body") or ""), str(data.get("html_url") or "")

    async def file_text(self, repo: str, path: str, ref: str) -> str | None:
        """The text of ``path`` at ``ref``, or None when it is absent there (or is not a file)."""
        item = await self._contents(repo, path, ref)
        if item is None or item.get("type") != "file":
            return None
        content = item.get("content")
        if item.get("encoding") != "base64" or not isinstance(content, str):
            return None
        try:
            return base64.b64decode(content).decode("utf-8", errors="replace")
        except ValueError:
            return None

    async def default_branch(self, repo: str) -> str:
        return str((await self._json("GET", f"/repos/{repo}")).get("default_branch") or "main")

    async def file_version(self, repo: str, path: str, ref: str) -> tuple[str, str] | None:
        """The text of file ``path`` at ``ref`` and its blob ``sha`` (what a write over it names), None when absent."""
        item = await self._contents(repo, path, ref)
        content, sha = (item.get("content"), item.get("sha")) if item is not None else (None, None)
        if not isinstance(content, str) or not isinstance(sha, str):
            return None
        return base64.b64decode(content).decode("utf-8", errors="replace"), sha

    async def create_branch(self, repo: str, branch: str, from_branch: str) -> None:
        """Branch ``branch`` at the head of ``from_branch``."""
        ref = await self._json("GET", f"/repos/{repo}/git/ref/heads/{quote(from_branch, safe='/')}")
        sha = (ref.get("object") or {}).get("sha")
        await self._json("POST", f"/repos/{repo}/git/refs", {"ref": f"refs/heads/{branch}", "sha": sha})

    async def put_file(self, repo: str, path: str, branch: str, message: str, text: str, sha: str | None) -> None:
        """Commit ``text`` as ``path`` on ``branch``; ``sha``: the blob it replaces (None: a new file)."""
        body: dict[str, Any] = {
            "message": message,
            "content": base64.b64encode(text.encode()).decode(),
            "branch": branch,
        }
        if sha is not None:
            body["sha"] = sha
        await self._json("PUT", f"/repos/{repo}/contents/{quote(path, safe='/')}", body)

    async def create_pull(self, repo: str, head: str, base: str, title: str, body: str) -> tuple[int, str]:
        """A pull request from ``head`` into ``base``: its number and page."""
        data = await self._json(
            "POST", f"/repos/{repo}/pulls", {"title": title, "head": head, "base": base, "body": body}
        )
        return int(data["number"]), str(data.get("html_url") or "")

    async def file_bytes(self, repo: str, path: str, ref: str, *, max_bytes: int) -> bytes | None:
        """The bytes of file ``path`` at ``ref`` (the contents API as raw), None when it is larger than ``max_bytes``:
        the download stops there. An absent file, a refusal or a redirect (never followed) raises a ``ForgeError``."""
        url = f"/repos/{repo}/contents/{quote(path, safe='/')}"
        what = f"GET {url}"
        log = RetryLog()
        extensions: dict[str, Any] = {RETRY_LOG: log, SAFE_TO_RETRY: True}
        headers = {"accept": "application/vnd.github.raw+json"}
        try:
            async with self._client.stream(
                "GET", url, params={"ref": ref}, headers=headers, extensions=extensions
            ) as response:
                if not response.is_success:
                    await response.aread()
                    raise self._failure(what, response, log)
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    return None
                try:
                    return await read_async(response.aiter_bytes(), max_bytes, what)
                except InputError:  # past max_bytes
                    return None
        except httpx2.TransportError as exc:
            reason = unavailable_reason(log, error=exc)
            raise ForgeUnavailable(f"GitHub {what} failed: {type(exc).__name__} ({reason})") from exc

    async def list_directory(self, repo: str, path: str, ref: str) -> list[str]:
        """The repository paths of the files directly inside ``path`` at ``ref`` ([] when there is none)."""
        try:
            data = await self._request("GET", f"/repos/{repo}/contents/{quote(path, safe='/')}", params={"ref": ref})
        except GitHubRefused as exc:
            if exc.status == 404:
                return []
            raise
        items = _decode(data)
        if not isinstance(items, list):
            return []
        return [str(i["path"]) for i in items if isinstance(i, dict) and i.get("type") == "file" and i.get("path")]

    # -- the conversation (summary comment) -------------------------------------------------------
    async def issue_comments(self, repo: str, number: int) -> list[IssueComment]:
        return [IssueComment.from_json(d) for d in await self._all_pages(f"/repos/{repo}/issues/{number}/comments")]

    async def create_issue_comment(self, repo: str, number: int, body: str) -> IssueComment:
        data = await self._json("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})
        return IssueComment.from_json(data)

    async def edit_issue_comment(self, repo: str, comment_id: int, body: str) -> IssueComment:
        # The whole body is replaced: sending it twice leaves the same comment.
        data = await self._json("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", {"body": body}, safe=True)
        return IssueComment.from_json(data)

    # -- reviews and inline comments ----------------------------------------------------------------
    async def create_review(
        self, repo: str, number: int, *, commit_id: str, body: str, event: ReviewEvent,
        comments: Sequence[DraftComment] = (),
    ) -> Review:  # fmt: skip
        """Post a review with its inline comments in one call; GitHub stores all of it or none.

        A 422 raises ``GitHubRefused`` whose ``errors`` say why (e.g. a line outside the diff).
        """
        payload = {"commit_id": commit_id, "body": body, "event": event, "comments": [c.to_json() for c in comments]}
        return Review.from_json(await self._json("POST", f"/repos/{repo}/pulls/{number}/reviews", payload))

    async def reviews(self, repo: str, number: int) -> list[Review]:
        return [Review.from_json(d) for d in await self._all_pages(f"/repos/{repo}/pulls/{number}/reviews")]

    async def dismiss_review(self, repo: str, number: int, review_id: int, message: str) -> Review:
        """Withdraw an approval or a change request (GitHub refuses to dismiss a plain comment review)."""
        path = f"/repos/{repo}/pulls/{number}/reviews/{review_id}/dismissals"
        return Review.from_json(await self._json("PUT", path, {"message": message, "event": "DISMISS"}))

    async def review_comments(self, repo: str, number: int) -> list[ReviewComment]:
        return [ReviewComment.from_json(d) for d in await self._all_pages(f"/repos/{repo}/pulls/{number}/comments")]

    async def reply_to_comment(self, repo: str, number: int, comment_id: int, body: str) -> ReviewComment:
        path = f"/repos/{repo}/pulls/{number}/comments/{comment_id}/replies"
        return ReviewComment.from_json(await self._json("POST", path, {"body": body}))

    # -- threads (GraphQL only) ---------------------------------------------------------------------
    async def review_threads(self, repo: str, number: int) -> list[ReviewThread]:
        """Every review thread of the pull request, all pages (up to 100 comments each)."""
        owner, _, name = repo.partition("/")
        variables: dict[str, Any] = {"owner": owner, "name": name, "number": number, "first": self._page_size}
        threads: list[ReviewThread] = []
        for _ in range(_MAX_PAGES):
            data = await self._graphql("reviewThreads", THREADS_QUERY, variables)
            connection = _dig(data, "repository", "pullRequest", "reviewThreads")
            threads.extend(ReviewThread.from_json(node) for node in connection.get("nodes") or [])
            info = connection.get("pageInfo") or {}
            if not info.get("hasNextPage"):
                break
            variables = {**variables, "after": info.get("endCursor")}
        return threads

    async def resolve_thread(self, thread_id: str) -> None:
        await self._graphql("resolveReviewThread", RESOLVE, {"threadId": thread_id})

    async def unresolve_thread(self, thread_id: str) -> None:
        await self._graphql("unresolveReviewThread", UNRESOLVE, {"threadId": thread_id})

    async def reply_to_thread(self, thread_id: str, body: str) -> ThreadComment:
        data = await self._graphql("addPullRequestReviewThreadReply", REPLY, {"threadId": thread_id, "body": body})
        return ThreadComment.from_json(_dig(data, "addPullRequestReviewThreadReply", "comment"))

    async def settle_threads(self, updates: Sequence[ThreadUpdate]) -> list[ThreadOutcome]:
        """Reply in and resolve threads, ``THREADS_PER_REQUEST`` a GraphQL request (mutations run in order:
        each reply before its resolution). A step GitHub refuses is reported in its outcome, not raised;
        a request that fails as a whole raises (the outcomes of earlier requests are lost with it)."""
        done: dict[int, ThreadOutcome] = {}
        asked = [(n, u) for n, u in enumerate(updates) if u.reply is not None or u.resolve]
        for first in range(0, len(asked), THREADS_PER_REQUEST):
            chunk = [u for _, u in asked[first : first + THREADS_PER_REQUEST]]
            query, variables = settle_document(chunk)
            data, errors = await self._graphql_answer("settleThreads", query, variables)
            failed: dict[str, list[dict[str, Any]]] = {}
            for error in errors:
                path = error.get("path")
                failed.setdefault(str(path[0]) if isinstance(path, list) and path else "", []).append(error)
            if "" in failed or not data:
                raise self._graphql_error("settleThreads", errors)
            for i, (n, update) in enumerate(asked[first : first + THREADS_PER_REQUEST]):
                reply_errors, resolve_errors = failed.get(f"r{i}"), failed.get(f"s{i}")
                done[n] = ThreadOutcome(
                    update,
                    replied=update.reply is not None and not reply_errors and data.get(f"r{i}") is not None,
                    resolved=update.resolve and not resolve_errors and data.get(f"s{i}") is not None,
                    reply_error=self._graphql_error("addPullRequestReviewThreadReply", reply_errors)
                    if reply_errors else None,
                    resolve_error=self._graphql_error("resolveReviewThread", resolve_errors)
                    if resolve_errors else None,
                )  # fmt: skip
        return [done.get(n) or ThreadOutcome(u) for n, u in enumerate(updates)]

    # -- check runs -------------------------------------------------------------------------------
    async def create_check_run(
        self, repo: str, *, name: str, head_sha: str, title: str, summary: str, conclusion: str | None = None,
        text: str | None = None, annotations: Sequence[Annotation] = (), details_url: str | None = None,
    ) -> CheckRun:  # fmt: skip
        """Create a check run; with ``conclusion`` it ends completed.

        GitHub takes 50 annotations a request: the rest follow in PATCHes, and the run is only
        completed by the last one, so nobody sees a finished check with half its annotations.
        """
        batches = _batches(annotations)
        payload: dict[str, Any] = {
            "name": name,
            "head_sha": head_sha,
            "output": _output(title, summary, text, batches[0]),
        }
        if details_url:
            payload["details_url"] = details_url
        if conclusion is not None and len(batches) == 1:
            payload.update(status="completed", conclusion=conclusion)
        else:
            payload["status"] = "in_progress"
        run = CheckRun.from_json(await self._json("POST", f"/repos/{repo}/check-runs", payload))
        if len(batches) > 1:
            rest = annotations[MAX_ANNOTATIONS_PER_REQUEST:]
            run = await self.update_check_run(
                repo, run.id, title=title, summary=summary, text=text, annotations=rest, conclusion=conclusion
            )
        return run

    async def check_runs_for(self, repo: str, ref: str, name: str) -> list[CheckRun]:
        """The check runs called ``name`` on commit ``ref`` (the newest first, as GitHub lists them)."""
        path = f"/repos/{repo}/commits/{quote(ref, safe='')}/check-runs"
        data = _decode(await self._request("GET", path, params={"check_name": name, "per_page": 100}))
        runs = data.get("check_runs") if isinstance(data, dict) else None
        return [CheckRun.from_json(r) for r in runs or [] if isinstance(r, dict)]

    async def update_check_run(
        self, repo: str, check_run_id: int, *, title: str, summary: str, text: str | None = None,
        annotations: Sequence[Annotation] = (), conclusion: str | None = None,
    ) -> CheckRun:  # fmt: skip
        """Replace the output text and append ``annotations`` (50 a request); ``conclusion`` completes it."""
        batches = _batches(annotations)
        data: dict[str, Any] = {}
        for index, batch in enumerate(batches):
            payload: dict[str, Any] = {"output": _output(title, summary, text, batch)}
            if conclusion is not None and index == len(batches) - 1:
                payload.update(status="completed", conclusion=conclusion)
            data = await self._json("PATCH", f"/repos/{repo}/check-runs/{check_run_id}", payload)
        return CheckRun.from_json(data)

    # -- transport: pages, retries, errors ----------------------------------------------------------
    async def _json(
        self, method: str, path: str, payload: dict[str, Any] | None = None, *, safe: bool = False
    ) -> dict[str, Any]:
        response = await self._request(method, path, payload=payload, safe=safe)
        data = _decode(response)
        if not isinstance(data, dict):
            raise ForgeError(f"GitHub {method} {path}: expected a JSON object", status=response.status_code)
        return data

    async def _all_pages(self, path: str) -> list[dict[str, Any]]:
        """GET every page, following ``Link: rel="next"`` only while it stays on the API host."""
        items: list[dict[str, Any]] = []
        url: str | None = path
        params: dict[str, Any] | None = {"per_page": self._page_size}
        for _ in range(_MAX_PAGES):
            if url is None:
                break
            response = await self._request("GET", url, params=params)
            page = _decode(response)
            if not isinstance(page, list):
                raise ForgeError(f"GitHub GET {path}: expected a JSON list", status=response.status_code)
            items.extend(item for item in page if isinstance(item, dict))
            url, params = response.links.get("next", {}).get("url"), None
            if url is not None and not url.startswith(self._api_url + "/"):
                raise ForgeError(f"GitHub GET {path}: the next page is outside {self._api_url}; not sending the token")
        return items

    async def _graphql(self, field: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        data, errors = await self._graphql_answer(field, query, variables)
        if errors:
            raise self._graphql_error(field, errors)
        if data is None:
            raise ForgeError(f"GitHub GraphQL {field}: the answer has no data", status=200)
        return data

    async def _graphql_answer(
        self, field: str, query: str, variables: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """``(data, errors)`` of a GraphQL request; an answer with neither raises. A query (no mutation)
        may be sent twice."""
        payload = {"query": query, "variables": variables}
        safe = not query.lstrip().startswith("mutation")
        response = await self._request("POST", self._graphql_url, payload=payload, safe=safe)
        body = _decode(response)
        body = body if isinstance(body, dict) else {}
        errors = [e for e in body.get("errors") or [] if isinstance(e, dict)]
        data = body.get("data")
        if not isinstance(data, dict) and not errors:
            raise ForgeError(f"GitHub GraphQL {field}: the answer has no data", status=response.status_code)
        return (data if isinstance(data, dict) else None), errors

    def _graphql_error(self, field: str, errors: Sequence[dict[str, Any]]) -> ForgeError:
        """GraphQL ``errors`` as the forge error tree: FORBIDDEN → ``ForgeAuthError`` (403), RATE_LIMITED →
        ``ForgeUnavailable``, anything else → ``GitHubRefused``."""
        messages = [self._scrub(str(e.get("message") or "unknown error")) for e in errors] or ["unknown error"]
        kind = errors[0].get("type") if errors else None
        text = f"GitHub GraphQL {field} failed: {'; '.join(messages)}"
        if kind == "FORBIDDEN":
            return ForgeAuthError(
                f"{text}. A workflow GITHUB_TOKEN needs `pull-requests: write`, and `contents: write` to "
                f"resolve threads; otherwise check {self._token_hint}",
                status=403,
            )
        if kind == "RATE_LIMITED":
            return ForgeUnavailable(text)
        return GitHubRefused(text, errors=messages)

    async def _request(
        self, method: str, url: str, *, params: dict[str, Any] | None = None, payload: dict[str, Any] | None = None,
        safe: bool = False,
    ) -> httpx2.Response:  # fmt: skip
        """One call through the retrying transport (``safe``: it may be sent twice, e.g. a GraphQL query)."""
        what = f"{method} {httpx2.URL(url).path}"
        log = RetryLog()
        extensions: dict[str, Any] = {RETRY_LOG: log, SAFE_TO_RETRY: safe}
        body = scrub_payload(payload, self._redactor) if payload is not None else None
        try:
            response = await self._client.request(method, url, params=params, json=body, extensions=extensions)
        except httpx2.TransportError as exc:
            reason = unavailable_reason(log, error=exc)
            raise ForgeUnavailable(f"GitHub {what} failed: {type(exc).__name__} ({reason})") from exc
        if response.is_success:
            return response
        raise self._failure(what, response, log)

    def _failure(self, what: str, response: httpx2.Response, log: RetryLog) -> ForgeError:
        """The error of a failed answer: unavailable (a rate limit, a 5xx, after the retries) or ``_error``."""
        if rate_limited(response) or response.status_code >= 500:
            reason = unavailable_reason(log, status=response.status_code)
            return ForgeUnavailable(
                f"GitHub {what}: {response.status_code} {self._message(response)[0]} ({reason})",
                status=response.status_code,
            )
        return self._error(what, response)

    def _error(self, what: str, response: httpx2.Response) -> ForgeError:
        status = response.status_code
        message, errors = self._message(response)
        if status == 401:
            return ForgeAuthError(
                f"GitHub rejected the token ({what}: 401 {message}); check {self._token_hint}", status=401
            )
        if status == 403:
            return ForgeAuthError(
                f"GitHub denied {what} (403 {message}): the token lacks a permission (a workflow needs e.g. "
                f"`pull-requests: write`; a pull_request run from a fork only gets a read-only token); "
                f"check {self._token_hint}",
                status=403,
            )
        if status >= 500:
            return ForgeUnavailable(f"GitHub {what}: {status} {message}", status=status)
        details = f": {'; '.join(errors)}" if errors else ""
        return GitHubRefused(f"GitHub refused {what}: {status} {message}{details}", status=status, errors=errors)

    def _message(self, response: httpx2.Response) -> tuple[str, list[str]]:
        """GitHub's ``message`` and ``errors`` (strings or objects), scrubbed of the token."""
        body = _decode(response, strict=False)
        if not isinstance(body, dict):
            return response.reason_phrase or "error", []
        errors = [
            e if isinstance(e, str) else str(e.get("message") or f"{e.get('field', '')} {e.get('code', '')}".strip())
            for e in body.get("errors") or []
            if isinstance(e, str | dict)
        ]
        return self._scrub(str(body.get("message") or response.reason_phrase)), [self._scrub(e) for e in errors]

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text


# -- helpers ------------------------------------------------------------------------------------
def _decode(response: httpx2.Response, *, strict: bool = True) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        if not strict:
            return None
        raise ForgeError(f"GitHub answered {response.status_code} without JSON", status=response.status_code) from exc


def _dig(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        value = data.get(key)
        if not isinstance(value, dict):
            raise GitHubRefused(f"GitHub GraphQL: no {key!r} in the answer")
        data = value
    return data


def _batches(annotations: Sequence[Annotation]) -> list[Sequence[Annotation]]:
    size = MAX_ANNOTATIONS_PER_REQUEST
    return [annotations[i : i + size] for i in range(0, len(annotations), size)] or [()]


def _output(title: str, summary: str, text: str | None, annotations: Sequence[Annotation]) -> dict[str, Any]:
    output: dict[str, Any] = {"title": title, "summary": summary, "annotations": [a.to_json() for a in annotations]}
    if text:
        output["text"] = text
    return output
