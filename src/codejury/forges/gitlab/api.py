"""Async GitLab REST v4 client: exactly the calls a review bot makes, and nothing else.

Reads the MR (full description, author, ``diff_refs``), its newest version, its diffs, notes
and discussions (every page, with who resolved each thread), files and directory listings at a
commit (the base side's config and instructions), and the files changed between two commits;
writes notes, anchored discussions (always as JSON: GitLab
drops a form-encoded position and posts the note un-anchored), replies, resolutions and
approvals; asks a member's access level for the break-glass check.

Retries are not decided here: every request goes through ``forges.retry.RetryingTransport``
(one policy for both forges: what may be sent twice, what a rate limit waits). A ``PUT`` that
resolves a thread or edits a note is repeated on a 5xx; a ``POST`` that creates a note is not,
since GitLab may have stored it (the next run finds it by its marker). Errors become
``ForgeError`` subclasses whose messages name the status, the call and the token's environment
variable, never the token. A note GitLab swallowed as quick actions only (202, nothing saved)
is a ``ForgeRefused``: the publisher must never send a line starting with ``/`` outside a fence.
The records it reads and the position JSON of an inline comment live in ``gitlab.types``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx2

from codejury.bounded_io import read_async
from codejury.errors import InputError
from codejury.forges.errors import ForgeAuthError, ForgeError, ForgeRefused, ForgeUnavailable
from codejury.forges.gitlab.types import ApprovalState, DiffRefs, Discussion, GitLabUser, MergeRequest, MRDiff, Note
from codejury.forges.gitlab.types import ProjectRef as ProjectRef
from codejury.forges.retry import RETRY_LOG, RetryingTransport, RetryLog, RetryPolicy, Sleep, unavailable_reason
from codejury.forges.safety import scrub_payload
from codejury.secrets import Redactor

TOKEN_ENV = "CODEJURY_GITLAB_TOKEN"


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
        clock: Callable[[], float] = time.time,
        transport: httpx2.AsyncBaseTransport | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self._api_url = api_url.rstrip("/")
        self._token = token
        self._token_env = token_env
        self._redactor = redactor
        policy = RetryPolicy(max_retries=max_retries, backoff_s=backoff_s, max_wait_s=max_wait_s)
        self._client = httpx2.AsyncClient(
            headers={"PRIVATE-TOKEN": token, "User-Agent": "codejury"},
            timeout=httpx2.Timeout(timeout_s),
            transport=RetryingTransport(transport, policy, sleep=sleep, clock=clock),
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

    async def update_description(self, project: ProjectRef, iid: int, description: str) -> None:
        """Write the merge request's description (``PUT /projects/:id/merge_requests/:iid`` with ``description``)."""
        await self._json("PUT", _mr_path(project, iid), body={"description": description})

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

    async def issue(self, project: ProjectRef, iid: int) -> tuple[str, str, str] | None:
        """An issue's title, description and page (``GET /projects/:id/issues/:iid``); None when the token cannot
        see it or it does not exist."""
        try:
            data = await self._json("GET", f"/projects/{_project(project)}/issues/{int(iid)}")
        except ForgeRefused as exc:
            if exc.status in (403, 404):
                return None
            raise
        return str(data.get("title") or ""), str(data.get("description") or ""), str(data.get("web_url") or "")

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

    async def file_bytes(self, project: ProjectRef, path: str, ref: str, *, max_bytes: int) -> bytes | None:
        """The bytes of file ``path`` at ``ref`` (repository files ``raw``), None when it is larger than ``max_bytes``:
        the download stops there. An absent file, a refusal or a redirect (never followed) raises a ``ForgeError``."""
        api_path = f"/projects/{_project(project)}/repository/files/{quote(path, safe='')}/raw"
        log = RetryLog()
        try:
            async with self._client.stream(
                "GET", self._api_url + api_path, params={"ref": ref}, extensions={RETRY_LOG: log}
            ) as response:
                if response.status_code >= 300:
                    await response.aread()
                    raise self._failure("GET", api_path, response, log)
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    return None
                try:
                    return await read_async(response.aiter_bytes(), max_bytes, f"GET {api_path}")
                except InputError:  # past max_bytes
                    return None
        except httpx2.TransportError as exc:
            reason = unavailable_reason(log, error=exc)
            raise ForgeUnavailable(f"GitLab did not answer GET {api_path}: {type(exc).__name__} ({reason})") from exc

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
    async def default_branch(self, project: ProjectRef) -> str:
        data = await self._json("GET", f"/projects/{_project(project)}")
        return str(data.get("default_branch") or "main")

    async def commit_files(
        self, project: ProjectRef, branch: str, start_branch: str, message: str, files: Mapping[str, tuple[str, bool]]
    ) -> str:
        """One commit on a new ``branch`` started from ``start_branch``: each path's text, and whether it exists
        there already (updated) or not (created); returns the commit's sha."""
        actions = [
            {"action": "update" if exists else "create", "file_path": path, "content": text}
            for path, (text, exists) in files.items()
        ]
        body = {"branch": branch, "start_branch": start_branch, "commit_message": message, "actions": actions}
        data = await self._json("POST", f"/projects/{_project(project)}/repository/commits", body=body)
        return str(data.get("id") or "")

    async def create_merge_request(
        self, project: ProjectRef, source: str, target: str, title: str, description: str
    ) -> tuple[int, str]:
        """A merge request from ``source`` into ``target``: its iid and web URL."""
        body = {"source_branch": source, "target_branch": target, "title": title, "description": description}
        data = await self._json("POST", f"/projects/{_project(project)}/merge_requests", body=body)
        return int(data["iid"]), str(data.get("web_url") or "")

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
        """One call through the retrying transport; a failure becomes a ``ForgeError``."""
        log = RetryLog()
        payload = scrub_payload(body, self._redactor) if body is not None else None
        try:
            response = await self._client.request(
                method, self._api_url + path, params=params, json=payload, extensions={RETRY_LOG: log}
            )
        except httpx2.TransportError as exc:
            reason = unavailable_reason(log, error=exc)
            raise ForgeUnavailable(f"GitLab did not answer {method} {path}: {type(exc).__name__} ({reason})") from exc
        if response.status_code < 400:
            return response
        raise self._failure(method, path, response, log)

    def _failure(self, method: str, path: str, response: httpx2.Response, log: RetryLog) -> ForgeError:
        """The error of a failed answer: unavailable (a rate limit, a 5xx, after the retries) or ``_error``."""
        status = response.status_code
        if status == 429 or status >= 500:
            reason = unavailable_reason(log, status=status)
            return ForgeUnavailable(f"GitLab answered {status} to {method} {path} ({reason})", status=status)
        return self._error(method, path, response)

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
