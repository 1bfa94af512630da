"""Async GitLab REST v4 client: exactly the calls a review bot makes, and nothing else.

Reads the MR (full description, author, ``diff_refs``), its newest version, its diffs, notes
and discussions (every page, with who resolved each thread), files and directory listings at a
commit (the base side's config and instructions), and the files changed between two commits;
writes notes, anchored discussions (always as JSON: GitLab
drops a form-encoded position and posts the note un-anchored), replies, resolutions and
approvals; asks a member's access level for the break-glass check.

Retries live here, not in callers: a 429 waits for ``Retry-After`` when that is at most
``max_wait_s`` (waiting longer than a CI job should, or hammering early, helps nobody), and
5xx answers and network errors are retried ``max_retries`` times with exponential backoff.
A POST is retried only when GitLab most likely never ran it (429, 502, 503, no connection),
so a flaky answer does not double a comment. Errors become ``ForgeError`` subclasses whose
messages name the status, the call and the token's environment variable, never the token.
A note GitLab swallowed as quick actions only (202, nothing saved) is a ``ForgeRefused``: the
publisher must never send a line starting with ``/`` outside a fence.

``line_code`` and ``position_for`` build GitLab's position JSON from codejury's hunks the way
GitLab numbers diff lines (an added line carries the running old-side counter).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx2

from codejury.change.diffparse import parse_diff
from codejury.change.types import DiffLine, FileChange
from codejury.forges.errors import ForgeAuthError, ForgeError, ForgeRefused, ForgeUnavailable

TOKEN_ENV = "CODEJURY_GITLAB_TOKEN"
Sleep = Callable[[float], Awaitable[None]]
ProjectRef = int | str


# -- what the API returns, as far as a review bot needs it ---------------------------------------
@dataclass(frozen=True)
class GitLabUser:
    id: int
    username: str
    name: str = ""
    bot: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GitLabUser:
        return cls(int(data["id"]), str(data["username"]), str(data.get("name") or ""), bool(data.get("bot")))


@dataclass(frozen=True)
class DiffRefs:
    """The three shas a position must name (the newest MR version)."""

    base_sha: str
    start_sha: str
    head_sha: str


@dataclass(frozen=True)
class MergeRequest:
    id: int
    iid: int
    project_id: int
    title: str
    description: str
    state: str
    author: GitLabUser
    source_branch: str
    target_branch: str
    sha: str
    diff_refs: DiffRefs | None
    web_url: str
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class MRDiff:
    """One file of the MR's diff as GitLab shows it (``diff`` starts at the first ``@@``)."""

    old_path: str
    new_path: str
    diff: str
    new_file: bool = False
    renamed_file: bool = False
    deleted_file: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MRDiff:
        flags = (bool(data.get(k)) for k in ("new_file", "renamed_file", "deleted_file"))
        return cls(str(data["old_path"]), str(data["new_path"]), str(data.get("diff") or ""), *flags)

    def file_change(self) -> FileChange:
        """The same file as codejury's ``FileChange``, hunks parsed from GitLab's own diff."""
        old = "/dev/null" if self.new_file else f"a/{self.old_path}"
        new = "/dev/null" if self.deleted_file else f"b/{self.new_path}"
        header = f"diff --git a/{self.old_path} b/{self.new_path}\n"
        if self.renamed_file:
            header += f"rename from {self.old_path}\nrename to {self.new_path}\n"
        parsed = parse_diff(f"{header}--- {old}\n+++ {new}\n{self.diff}")
        return parsed[0]


@dataclass(frozen=True)
class Note:
    id: int
    body: str
    author: GitLabUser
    system: bool
    type: str | None
    created_at: str
    updated_at: str
    resolvable: bool = False
    resolved: bool = False
    position: Mapping[str, Any] | None = None
    resolved_by: GitLabUser | None = None
    """Who resolved the note's thread (GitLab sets it on every resolvable note of a resolved thread)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Note:
        by = data.get("resolved_by")
        return cls(
            id=int(data["id"]),
            body=str(data.get("body") or ""),
            author=GitLabUser.from_json(data["author"]),
            system=bool(data.get("system")),
            type=data.get("type"),
            created_at=str(data.get("created_at") or ""),
            updated_at=str(data.get("updated_at") or ""),
            resolvable=bool(data.get("resolvable")),
            resolved=bool(data.get("resolved")),
            position=data.get("position"),
            resolved_by=GitLabUser.from_json(by) if isinstance(by, Mapping) and "id" in by else None,
        )


@dataclass(frozen=True)
class Discussion:
    id: str
    individual_note: bool
    notes: tuple[Note, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Discussion:
        notes = tuple(Note.from_json(n) for n in data.get("notes") or ())
        return cls(str(data["id"]), bool(data.get("individual_note")), notes)

    @property
    def resolvable(self) -> bool:
        return any(n.resolvable for n in self.notes)

    @property
    def resolved(self) -> bool:
        """GitLab's rule: a thread is resolved when every resolvable note in it is."""
        return self.resolvable and all(n.resolved for n in self.notes if n.resolvable)

    @property
    def resolved_by(self) -> GitLabUser | None:
        """Who resolved the thread (None while it is open, or when GitLab did not say)."""
        if not self.resolved:
            return None
        return next((n.resolved_by for n in reversed(self.notes) if n.resolvable and n.resolved_by), None)


@dataclass(frozen=True)
class ApprovalState:
    approved_by: tuple[GitLabUser, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ApprovalState:
        return cls(tuple(GitLabUser.from_json(a["user"]) for a in data.get("approved_by") or ()))


# -- positions ------------------------------------------------------------------------------------
def line_code(path: str, old_pos: int, new_pos: int) -> str:
    """GitLab's line code: ``<sha1(path)>_<old position>_<new position>``."""
    return f"{hashlib.sha1(path.encode(), usedforsecurity=False).hexdigest()}_{old_pos}_{new_pos}"


@dataclass(frozen=True)
class _GitLabLine:
    line: DiffLine
    old_pos: int
    new_pos: int
    hunk: int


def _gitlab_lines(change: FileChange) -> dict[int, _GitLabLine]:
    """New-side line number -> the line with GitLab's running positions (added and context lines)."""
    out: dict[int, _GitLabLine] = {}
    for index, hunk in enumerate(change.hunks):
        old, new = hunk.old_start, hunk.new_start
        for line in hunk.lines:
            if line.new_no is not None:
                out[line.new_no] = _GitLabLine(line, old, new, index)
            old += line.kind != "+"
            new += line.kind != "-"
    return out


def position_for(refs: DiffRefs, change: FileChange, start: int, end: int | None = None) -> dict[str, Any] | None:
    """The position JSON anchoring new-side lines ``start..end`` of ``change``, or None.

    The range shrinks to the lines the diff shows, inside one hunk (the one holding the last
    shown line); None when no line of the range is shown. One line gives a plain position;
    more give a ``line_range`` whose end is the top-level line, as GitLab's UI sends it.
    """
    lines = _gitlab_lines(change)
    end = max(end or start, start)
    shown = [n for n in range(start, end + 1) if n in lines]
    if not shown:
        return None
    last = lines[shown[-1]]
    first = lines[next(n for n in shown if lines[n].hunk == last.hunk)]
    position: dict[str, Any] = {
        "position_type": "text",
        "base_sha": refs.base_sha,
        "start_sha": refs.start_sha,
        "head_sha": refs.head_sha,
        "old_path": change.old_path or change.path,
        "new_path": change.path,
        "new_line": last.line.new_no,
        "old_line": last.line.old_no,
    }
    if first is not last:
        position["line_range"] = {"start": _range_end(change.path, first), "end": _range_end(change.path, last)}
    return position


def _range_end(path: str, line: _GitLabLine) -> dict[str, Any]:
    kind = "new" if line.line.kind == "+" else "old"
    code = line_code(path, line.old_pos, line.new_pos)
    return {"line_code": code, "type": kind, "old_line": line.line.old_no, "new_line": line.line.new_no}


# -- the client -------------------------------------------------------------------------------------
class GitLabAPI:
    """One GitLab API base URL (``$CI_API_V4_URL``) and one token; use ``async with``."""

    def __init__(
        self,
        api_url: str,
        token: str,
        *,
        token_env: str = TOKEN_ENV,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_wait_s: float = 30.0,
        timeout_s: float = 30.0,
        sleep: Sleep = asyncio.sleep,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self._api_url = api_url.rstrip("/")
        self._token = token
        self._token_env = token_env
        self._max_retries = max_retries
        self._backoff_s = backoff_s
        self._max_wait_s = max_wait_s
        self._sleep = sleep
        self._client = httpx2.AsyncClient(
            headers={"PRIVATE-TOKEN": token, "User-Agent": "codejury"},
            timeout=httpx2.Timeout(timeout_s),
            transport=transport,
        )

    async def close(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> GitLabAPI:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- reads ---------------------------------------------------------------------------------
    async def current_user(self) -> GitLabUser:
        return GitLabUser.from_json(await self._json("GET", "/user"))

    async def merge_request(self, project: ProjectRef, iid: int) -> MergeRequest:
        data = await self._json("GET", _mr_path(project, iid))
        refs = data.get("diff_refs")
        return MergeRequest(
            id=int(data["id"]),
            iid=int(data["iid"]),
            project_id=int(data["project_id"]),
            title=str(data.get("title") or ""),
            description=str(data.get("description") or ""),
            state=str(data.get("state") or ""),
            author=GitLabUser.from_json(data["author"]),
            source_branch=str(data.get("source_branch") or ""),
            target_branch=str(data.get("target_branch") or ""),
            sha=str(data.get("sha") or ""),
            diff_refs=DiffRefs(refs["base_sha"], refs["start_sha"], refs["head_sha"]) if refs else None,
            web_url=str(data.get("web_url") or ""),
            labels=tuple(data.get("labels") or ()),
        )

    async def latest_version(self, project: ProjectRef, iid: int) -> DiffRefs:
        """The shas of the newest diff version (the MR's ``diff_refs`` while none is computed yet)."""
        versions = await self._json("GET", _mr_path(project, iid) + "/versions")
        if versions:
            v = versions[0]
            return DiffRefs(v["base_commit_sha"], v["start_commit_sha"], v["head_commit_sha"])
        refs = (await self.merge_request(project, iid)).diff_refs
        if refs is None:
            raise ForgeError(f"GitLab has no diff for merge request !{iid} yet")
        return refs

    async def diffs(self, project: ProjectRef, iid: int) -> list[MRDiff]:
        items = await self._pages(_mr_path(project, iid) + "/diffs")
        return [MRDiff.from_json(d) for d in items]

    async def notes(self, project: ProjectRef, iid: int) -> list[Note]:
        """Every note, system notes included, oldest first."""
        params = {"sort": "asc", "order_by": "created_at"}
        return [Note.from_json(n) for n in await self._pages(_mr_path(project, iid) + "/notes", params)]

    async def discussions(self, project: ProjectRef, iid: int) -> list[Discussion]:
        return [Discussion.from_json(d) for d in await self._pages(_mr_path(project, iid) + "/discussions")]

    async def file_text(self, project: ProjectRef, path: str, ref: str) -> str | None:
        """A file's text at ``ref`` (a sha or branch), None when it does not exist there."""
        api_path = f"/projects/{_project(project)}/repository/files/{quote(path, safe='')}/raw"
        try:
            response = await self._request("GET", api_path, params={"ref": ref})
        except ForgeRefused as exc:
            if exc.status == 404:
                return None
            raise
        return response.content.decode("utf-8", errors="replace")

    async def tree(self, project: ProjectRef, path: str, ref: str) -> list[str]:
        """Repository paths of the files directly inside directory ``path`` at ``ref`` ([] when absent)."""
        params = {"path": path, "ref": ref}
        try:
            items = await self._pages(f"/projects/{_project(project)}/repository/tree", params)
        except ForgeRefused as exc:
            if exc.status == 404:
                return []
            raise
        return [str(i["path"]) for i in items if isinstance(i, Mapping) and i.get("type") == "blob"]

    async def compare(self, project: ProjectRef, from_sha: str, to_sha: str) -> list[str] | None:
        """Paths that differ between two commits (``straight``: no merge-base), None when one is unknown.

        A renamed file gives both its paths; a deleted one its old path.
        """
        params = {"from": from_sha, "to": to_sha, "straight": "true"}
        try:
            data = await self._json("GET", f"/projects/{_project(project)}/repository/compare", params=params)
        except ForgeRefused as exc:
            if exc.status in (400, 404):
                return None
            raise
        diffs = (data.get("diffs") or ()) if isinstance(data, Mapping) else ()
        paths: list[str] = []
        for diff in diffs:
            old, new = str(diff.get("old_path") or ""), str(diff.get("new_path") or "")
            for found in (new, old) if old != new else (new,):
                if found and found not in paths:
                    paths.append(found)
        return paths

    async def approval_state(self, project: ProjectRef, iid: int) -> ApprovalState:
        return ApprovalState.from_json(await self._json("GET", _mr_path(project, iid) + "/approvals"))

    async def member_access_level(self, project: ProjectRef, user_id: int) -> int | None:
        """The user's effective access level (inherited included), None when not a member."""
        try:
            data = await self._json("GET", f"/projects/{_project(project)}/members/all/{user_id}")
        except ForgeRefused as exc:
            if exc.status == 404:
                return None
            raise
        return int(data["access_level"])

    # -- writes --------------------------------------------------------------------------------
    async def create_note(self, project: ProjectRef, iid: int, body: str) -> Note:
        return Note.from_json(await self._json("POST", _mr_path(project, iid) + "/notes", body={"body": body}))

    async def edit_note(self, project: ProjectRef, iid: int, note_id: int, body: str) -> Note:
        path = f"{_mr_path(project, iid)}/notes/{note_id}"
        return Note.from_json(await self._json("PUT", path, body={"body": body}))

    async def create_discussion(
        self, project: ProjectRef, iid: int, body: str, position: Mapping[str, Any] | None = None
    ) -> Discussion:
        """A thread; with ``position`` (see ``position_for``) an inline comment on the diff."""
        payload: dict[str, Any] = {"body": body}
        if position is not None:
            payload["position"] = dict(position)
        return Discussion.from_json(await self._json("POST", _mr_path(project, iid) + "/discussions", body=payload))

    async def reply(self, project: ProjectRef, iid: int, discussion_id: str, body: str) -> Note:
        path = f"{_mr_path(project, iid)}/discussions/{discussion_id}/notes"
        return Note.from_json(await self._json("POST", path, body={"body": body}))

    async def resolve_discussion(
        self, project: ProjectRef, iid: int, discussion_id: str, resolved: bool = True
    ) -> Discussion:
        path = f"{_mr_path(project, iid)}/discussions/{discussion_id}"
        data = await self._json("PUT", path, params={"resolved": "true" if resolved else "false"})
        return Discussion.from_json(data)

    async def approve(self, project: ProjectRef, iid: int, sha: str | None = None) -> ApprovalState:
        """Approve as the token's user; ``sha`` makes GitLab refuse (409) when the MR moved on."""
        try:
            data = await self._json("POST", _mr_path(project, iid) + "/approve", body={"sha": sha} if sha else {})
        except ForgeAuthError as exc:
            if exc.status != 401:
                raise
            raise ForgeRefused(
                "GitLab refused the approval (401): the token's user wrote this merge request, already "
                f"approved it, or may not approve; if the token itself is wrong, check {self._token_env}",
                status=401,
            ) from exc
        return ApprovalState.from_json(data)

    async def unapprove(self, project: ProjectRef, iid: int) -> None:
        """Withdraw the token user's approval (ForgeRefused 404 when there was none)."""
        await self._request("POST", _mr_path(project, iid) + "/unapprove")

    # -- transport -------------------------------------------------------------------------------
    async def _json(self, method: str, path: str, *, params: Mapping[str, str] | None = None, body: Any = None) -> Any:
        response = await self._request(method, path, params=params, body=body)
        if response.status_code == 202:  # commands-only note: GitLab ran quick actions and saved nothing
            raise ForgeRefused(f"GitLab ran the text as quick actions and saved no note ({method} {path})", status=202)
        try:
            return response.json()
        except ValueError as exc:
            raise ForgeUnavailable(f"GitLab sent a body that is not JSON ({method} {path})") from exc

    async def _pages(self, path: str, params: Mapping[str, str] | None = None) -> list[Any]:
        """Every item of a paginated list, following ``X-Next-Page`` (100 a page)."""
        items: list[Any] = []
        page = 1
        while True:
            response = await self._request("GET", path, params={**(params or {}), "per_page": "100", "page": str(page)})
            try:
                chunk = response.json()
            except ValueError:
                chunk = None
            if not isinstance(chunk, list):
                raise ForgeUnavailable(f"GitLab sent a page that is not a JSON list (GET {path})")
            items.extend(chunk)
            following = response.headers.get("x-next-page", "")
            if not following.isdigit() or int(following) <= page:
                return items
            page = int(following)

    async def _request(
        self, method: str, path: str, *, params: Mapping[str, str] | None = None, body: Any = None
    ) -> httpx2.Response:
        attempt = 0
        while True:
            try:
                response = await self._client.request(method, self._api_url + path, params=params, json=body)
            except httpx2.TransportError as exc:
                not_sent = isinstance(exc, httpx2.ConnectError | httpx2.ConnectTimeout)
                if attempt >= self._max_retries or (method == "POST" and not not_sent):
                    raise ForgeUnavailable(f"GitLab did not answer {method} {path}: {type(exc).__name__}") from exc
                wait = self._backoff(attempt)
            else:
                status = response.status_code
                if status < 400:
                    return response
                if status == 429:
                    asked = _retry_after(response)
                    wait = self._backoff(attempt) if asked is None else asked
                    if wait > self._max_wait_s:
                        raise ForgeUnavailable(
                            f"GitLab rate limit on {method} {path}: asked to wait {wait:g} s, "
                            f"more than the {self._max_wait_s:g} s we wait",
                            status=429,
                        )
                elif status >= 500 and (method != "POST" or status in (502, 503)):
                    wait = self._backoff(attempt)
                elif status >= 500:
                    raise ForgeUnavailable(
                        f"GitLab answered {status} to {method} {path}; not retried, it may have been applied",
                        status=status,
                    )
                else:
                    raise self._error(method, path, response)
                if attempt >= self._max_retries:
                    raise ForgeUnavailable(
                        f"GitLab answered {status} to {method} {path} {attempt + 1} times", status=status
                    )
            await self._sleep(wait)
            attempt += 1

    def _backoff(self, attempt: int) -> float:
        return float(min(self._backoff_s * 2**attempt, self._max_wait_s))

    def _error(self, method: str, path: str, response: httpx2.Response) -> ForgeError:
        status = response.status_code
        if status == 401:
            return ForgeAuthError(f"GitLab refused the token (401): check {self._token_env}", status=401)
        if status == 403:
            return ForgeAuthError(
                f"GitLab refused {method} {path} (403): the token in {self._token_env} lacks the right; "
                "a CI_JOB_TOKEN cannot post notes or approve, use a project access token with api scope "
                "and the Developer role",
                status=403,
            )
        said = _server_message(response)
        if self._token:  # GitLab does not echo tokens; a proxy in between might
            said = said.replace(self._token, "[token]")
        return ForgeRefused(f"GitLab refused {method} {path} ({status}): {said}", status=status)


def _project(project: ProjectRef) -> str:
    return quote(str(project), safe="")


def _mr_path(project: ProjectRef, iid: int) -> str:
    return f"/projects/{_project(project)}/merge_requests/{int(iid)}"


def _retry_after(response: httpx2.Response) -> float | None:
    """Retry-After in seconds (a number or an HTTP date), None when absent or unreadable."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _server_message(response: httpx2.Response) -> str:
    """GitLab's own words (``message`` or ``error``), one line, at most 300 characters."""
    try:
        data = response.json()
    except ValueError:
        text = response.text
    else:
        found = data.get("message") or data.get("error") if isinstance(data, dict) else data
        text = found if isinstance(found, str) else json.dumps(found)
    text = " ".join(text.split())
    return text[:300] or response.reason_phrase
