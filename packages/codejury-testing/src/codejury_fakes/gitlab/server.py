"""A fake GitLab (REST v4) on 127.0.0.1 that keeps state and refuses what GitLab refuses.

Tests build the world with Python calls, point the real client (or a whole ``codejury`` run)
at ``api_url``, then inspect what is left:

    with FakeGitLab() as gl:
        gl.add_mr(1, 7, files={"app.py": ("a = 1\\n", "a = 2\\n")})
        ...  # GitLabAPI(gl.api_url, FakeGitLab.BOT_TOKEN) posts a review
        assert gl.discussions(1, 7)[0]["notes"][0]["position"]["new_line"] == 1

The world starts with project 1 (``acme/widgets``), the users ``alice`` (Developer, the
default MR author), ``bob`` (Maintainer, a human reviewer), ``rita`` (Reporter) and the
project-access-token bot ``project_1_bot`` (Developer), and one token per user; ``JOB_TOKEN``
is a CI job token of alice's pipeline: it reads but may not write (403); a token added with
``scopes=("read_api",)`` may not write either (403 ``insufficient_scope``). The description is edited with
``PUT .../merge_requests/:iid`` by its author or a Developer and above (a Reporter: 403).

Faithful where a bot can go wrong: positions are checked against the MR's diff (a line
outside it is a 400 with GitLab's line-code message; a form-encoded position is dropped and
the note posted un-anchored), quick actions (``/approve``, ``/close``, ...) at column 0 outside
fences run as the token's user, also on edit, and a commands-only note answers 202 and is not
saved; approvals refuse self-approval and repeats (401) and a stale sha (409); lists are
paginated with GitLab's headers; 429s carry ``Retry-After`` and a plain-text body. Each commit
has a whole tree (``add_mr(..., base_files=...)``, ``set_repo_files``): the repository files
(raw), tree and compare endpoints read it, and a commit the fake does not hold (``drop_commit``)
is a 404 there. Notes carry ``resolved_by`` (who resolved their thread), as GitLab's do.
Stricter than GitLab on purpose: position shas other than the MR's current ``diff_refs``
are refused (GitLab would anchor to that older version and show the note as outdated), and
so are ``line_range`` line codes that are not lines of the diff (GitLab stores them as sent).

Line codes are computed (``records``) from the hunk text the way GitLab's ``Diff::Parser`` does
(an added line carries the running old-side counter), not with codejury's parser, so a
parser bug on our side cannot hide behind the fake.
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from codejury_fakes.git_http import GitRepos
from codejury_fakes.gitlab.records import INSUFFICIENT_SCOPE, Answer, Call, FakeUser, RecordedRequest, Refusal
from codejury_fakes.gitlab.routes import ROUTES
from codejury_fakes.gitlab.state import GitLabState
from codejury_fakes.loopback import LoopbackServer, QuietHandler


class FakeGitLab(GitLabState, LoopbackServer):
    """Stateful GitLab REST v4 on a free loopback port; see the module docstring."""

    thread_name = "fake-gitlab"

    def __init__(self, *, latency_s: float = 0.0) -> None:
        LoopbackServer.__init__(self, _make_handler(self))
        GitLabState.__init__(self, self.origin, latency_s=latency_s)
        self.git = GitRepos(self._git_user)
        """The repositories served over git's smart HTTP protocol (``serve_git``), and the requests they got."""

    def serve_git(self, project: str, source: Path) -> None:
        """Serve the repository at ``source`` as ``{url}/{project}.git`` (the token as an HTTP Basic password)."""
        self.git.add(project, source)

    def stop(self) -> None:
        super().stop()
        self.git.close()

    def _git_user(self, repo: str, _user: str, password: str) -> str | None:
        """The member a token reads ``repo`` as (any user name, the token as the password), or None."""
        with self._lock:
            found = self._tokens.get(password)
            project = next((p for p in self._projects.values() if p.path == repo), None)
            if found is None or project is None or found[0].id not in project.members:
                return None
            return found[0].username

    # -- the HTTP side (called by the handler) -------------------------------------------------
    def _serve(self, method: str, raw_path: str, headers: dict[str, str], raw: bytes) -> Answer:
        if self.latency_s:
            time.sleep(self.latency_s)
        parts = urlsplit(raw_path)
        query = dict(parse_qsl(parts.query))
        for secret in ("private_token", "job_token", "access_token"):
            query.pop(secret, None)
        body, json_body = _parse_body(headers.get("content-type", ""), raw)
        with self._lock:
            token = _token(headers) or ""
            user, job = self._tokens.get(token, (None, False))
            if user is not None and method != "GET" and token in self._read_only_tokens:
                answer: Answer = (403, dict(INSUFFICIENT_SCOPE), {})
            else:
                answer = self._answer(method, parts.path, query, body, json_body, user, job)
            status, payload, out_headers = answer
            self._requests.append(RecordedRequest(method, parts.path, query, body, user.username if user else None,
                                                  status))  # fmt: skip
        return status, payload, out_headers

    def _answer(self, method: str, path: str, query: dict[str, str], body: Any, json_body: bool,
                user: FakeUser | None, job: bool) -> Answer:  # fmt: skip
        for fault in self._faults:
            if fault.method in (None, method) and (fault.path is None or fault.path.search(path)):
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self._faults.remove(fault)
                headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
                if fault.status == 429:
                    return 429, "Retry later\n", headers
                return fault.status, {"message": f"{fault.status} Fault injected"}, headers
        if body is _BAD_JSON:
            return 400, {"error": "The provided content-type is not supported or the body is not valid JSON"}, {}
        if user is None:
            return 401, {"message": "401 Unauthorized"}, {}
        api_path = path.removeprefix("/api/v4")
        for route_method, pattern, handler in ROUTES:
            match = pattern.fullmatch(api_path)
            if match is None or route_method != method:
                continue
            if job and method != "GET":
                return 403, {"message": "403 Forbidden"}, {}
            params = {**query, **(body if isinstance(body, dict) else {})}
            call = Call(method, api_path, params, json_body, user, match.groupdict())
            try:
                result = handler(self, call)
            except Refusal as refusal:
                return refusal.status, refusal.body, {}
            return result if len(result) == 3 else (*result, {})
        return 404, {"error": "404 Not Found"}, {}


# -- HTTP plumbing -------------------------------------------------------------------------------
_BAD_JSON = object()


def _token(headers: dict[str, str]) -> str | None:
    bearer = headers.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        return bearer[7:].strip()
    return headers.get("private-token") or headers.get("job-token")


def _parse_body(content_type: str, raw: bytes) -> tuple[Any, bool]:
    if not raw:
        return None, False
    if content_type.startswith("application/json"):
        try:
            return json.loads(raw), True
        except ValueError:
            return _BAD_JSON, True
    return dict(parse_qsl(raw.decode("utf-8", "replace"))), False


def _make_handler(gl: FakeGitLab) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self._handle()

        do_POST = do_PUT = do_DELETE = do_GET

        def _handle(self) -> None:
            raw = self.read_body()
            headers = {k.lower(): v for k, v in self.headers.items()}
            parts = urlsplit(self.path)
            if gl.git.respond(self.wfile, self.send_head, self.command, parts.path, parts.query, headers, raw):
                return
            status, payload, extra = gl._serve(self.command, self.path, headers, raw)
            text = isinstance(payload, str)
            data = payload.encode() if text else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain" if text else "application/json")
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
