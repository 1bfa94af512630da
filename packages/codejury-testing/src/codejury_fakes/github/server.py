"""A fake GitHub on 127.0.0.1: the REST endpoints and GraphQL operations codejury uses, with state.

Tests build the world in Python, point the real client at ``api_url`` and inspect what happened:

    with FakeGitHub() as gh:                       # repository "octo/app", owner "octo" (admin)
        gh.add_user("alice")                      # a human with write permission
        gh.add_token("ghs_ci", kind="actions")    # the workflow's GITHUB_TOKEN
        pr = gh.add_pr(author="alice", files={"app.py": ("a\\n", "a\\nb\\n")})
        ...  # GitHubAPI("ghs_ci", api_url=gh.api_url).create_review(...)
        assert gh.reviews(pr)[0].state == "COMMENTED"

It refuses what GitHub refuses, so a client that passes here does not learn the rules in
production: a review comment on a line outside the diff hunks fails the whole review (422,
nothing stored); approving or requesting changes on your own pull request (422); approval by
GitHub Actions while the repository does not allow it (422); writes with a read-only fork
token or a workflow token lacking the permission (403 "Resource not accessible by
integration"); resolving a thread with a workflow token lacking ``contents: write`` (GraphQL
FORBIDDEN); check runs from a personal token (403, GitHub Apps only); a pull request's description edited by a
workflow token without ``pull-requests: write`` (403 "Resource not accessible by integration") or by a person
who is neither its author nor a writer (403; unconfirmed on github.com), or longer than 65,536 characters (422);
more than 50 annotations in one check-run request (422); bad credentials (401); ``per_page`` above 100 (capped, with
``Link`` headers); GraphQL ``first`` above 100. Faults on demand: ``fail_next`` (429 with
Retry-After, 403 secondary rate limit, 5xx, optionally taking effect first) and ``drop_next``
(connection closed without an answer); ``latency_s`` delays every call.

Also served: the contents API at a commit (files base64, directory listings; ``base_files`` in
``add_pr``, ``set_contents``; each ``push`` makes the new head's tree), the comparison of two
commits (``compare/BASE...HEAD``: status ``ahead``/``behind``/``diverged``/``identical``, the
files between the merge base and the head, at most 300 and on the first page only; each
commit's parent is the previous head, or the base after ``push(..., force=True)``; a commit
forgotten with ``drop_commit`` is a 404), check runs listed per commit, and GitHub Enterprise
paths (``/api/v3/...``, ``/api/graphql``). ``refuse_comments_on`` makes GitHub refuse a line the patch
shows, as it sometimes does, to test the 422 fallback.

Modelled like GitHub, which clients must cope with: replying to a review comment creates a
new COMMENTED review; ``fullDatabaseId`` is a string (GraphQL BigInt); after ``push`` a thread
whose line left the diff or changed is outdated (``line`` null). Simplified: no pending
reviews (``event`` is required), renames in a pull request's files only where ``add_pr(renamed=...)``
names them (a comparison reports a file moved with the same text as renamed), one fake clock, ids
unique across all objects; a multi-line comment must stay in one hunk (unconfirmed on github.com). GraphQL: a query is
recognised by the field it names; a mutation document is parsed (``_parse_mutation``): several
top-level fields, aliased or not, run in order, each failure an ``errors`` entry whose ``path``
is its alias and whose value in ``data`` is null. As GitHub does, the fake refuses the whole
document for an unknown field, a variable used but not declared, or a declared non-null
variable not sent; it also refuses values written into the document (send variables).
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from codejury_fakes.git_http import GitRepos
from codejury_fakes.github.branches import BranchRoutes
from codejury_fakes.github.graphql import GraphQLRoutes
from codejury_fakes.github.records import DOCS, Call, Fault, RecordedRequest, Refusal, Reply, Token
from codejury_fakes.github.state import GitHubState
from codejury_fakes.loopback import LoopbackServer, QuietHandler


class FakeGitHub(BranchRoutes, GraphQLRoutes, LoopbackServer):
    """Stateful GitHub REST + GraphQL fake on a free loopback port (see the module docstring)."""

    thread_name = "fake-github"

    def __init__(self, repo: str = "octo/app", *, latency_s: float = 0.0) -> None:
        LoopbackServer.__init__(self, _make_handler(self))
        GitHubState.__init__(self, self.origin, repo, latency_s=latency_s)
        self.git = GitRepos(self._git_user)
        """The repositories served over git's smart HTTP protocol (``serve_git``), and the requests they got."""

    def serve_git(self, repo: str, source: Path) -> None:
        """Serve the repository at ``source`` as ``{url}/{repo}.git`` (``x-access-token`` and the token, HTTP Basic)."""
        self.git.add(repo, source)

    def stop(self) -> None:
        super().stop()
        self.git.close()

    def _git_user(self, repo: str, user: str, password: str) -> str | None:
        """Who a token reads ``repo`` as: GitHub takes ``x-access-token`` with an App or workflow token, or a
        personal token with any user name; a token without ``contents`` access reads nothing."""
        with self._lock:
            token = self._tokens.get(password)
            if token is None or (token.kind != "pat" and user != "x-access-token"):
                return None
            if token.kind != "pat" and token.permissions.get("contents") not in ("read", "write"):
                return None
            return token.user

    # -- one request ------------------------------------------------------------------------------
    def _serve(self, method: str, target: str, headers: dict[str, str], body: Any) -> Reply:
        """Record the request, apply a fault if one is due, else authenticate and route it."""
        if self.latency_s > 0:
            self.stopping.wait(self.latency_s)
        parts = urlsplit(target)
        path, query = unquote(parts.path), dict(parse_qsl(parts.query))
        prefix = ""
        if path == "/api/graphql":  # GitHub Enterprise Server: /api/v3 for REST, /api/graphql
            path, prefix = "/graphql", "/api/v3"
        elif path.startswith("/api/v3/"):
            path, prefix = path[len("/api/v3") :], "/api/v3"
        with self._lock:
            token = self._tokens.get(_bearer(headers.get("authorization", "")))
            fault = self._take_fault(method, path)
            if fault is not None and not fault.processed:
                reply = _fault_reply(fault)
            else:
                reply = self._route(method, path, query, body, token, headers, prefix)
                if fault is not None:
                    reply = _fault_reply(fault)
            reply.headers = {**_rate_headers(path), **reply.headers}
            safe = {k: v for k, v in headers.items() if k != "authorization"}
            status = 0 if reply.drop else reply.status
            kind = token.kind if token else None
            self._requests.append(
                RecordedRequest(method, path, query, safe, body, token.user if token else None, kind, status)
            )
            return reply

    def _take_fault(self, method: str, path: str) -> Fault | None:
        for fault in self._faults:
            if fault.remaining > 0 and fault.matches(method, path):
                fault.remaining -= 1
                return fault
        return None

    def _route(
        self, method: str, path: str, query: dict[str, str], body: Any, token: Token | None, headers: dict[str, str],
        prefix: str = "",
    ) -> Reply:  # fmt: skip
        if token is None:
            return Refusal(401, "Bad credentials" if headers.get("authorization") else "Requires authentication").reply
        for verb, pattern, handler in _ROUTES:
            match = pattern.fullmatch(path.rstrip("/"))
            if verb == method and match:
                safe = {k: v for k, v in headers.items() if k != "authorization"}
                call = Call(method, path, query, body, token, match.groupdict(), prefix, safe)
                try:
                    if "repo" in call.args and call.args["repo"] not in self._repos:
                        raise Refusal(404, "Not Found")
                    return handler(self, call)
                except Refusal as refusal:
                    return refusal.reply
                except Exception as exc:  # a bug in the fake, or input it does not model: say so loudly
                    return Reply(500, {"message": f"the fake GitHub failed: {exc!r}"})
        return Refusal(404, "Not Found").reply


_REPO = r"/repos/(?P<repo>[^/]+/[^/]+)"
_PULL = _REPO + r"/pulls/(?P<n>\d+)"
_ROUTES: list[tuple[str, re.Pattern[str], Callable[[FakeGitHub, Call], Reply]]] = [
    (verb, re.compile(pattern), handler)
    for verb, pattern, handler in (
        ("GET", r"/user", FakeGitHub._get_user),
        ("GET", _REPO, FakeGitHub._get_repo),
        ("GET", _PULL, FakeGitHub._get_pull),
        ("PATCH", _PULL, FakeGitHub._patch_pull),
        ("GET", _PULL + "/files", FakeGitHub._list_files),
        ("GET", _REPO + r"/collaborators/(?P<login>[^/]+)/permission", FakeGitHub._get_permission),
        ("GET", _REPO + r"/contents(?:/(?P<path>.*))?", FakeGitHub._get_contents),
        ("GET", _REPO + r"/commits/(?P<ref>[^/]+)/check-runs", FakeGitHub._list_check_runs),
        ("GET", _REPO + r"/compare/(?P<basehead>[^/]+)", FakeGitHub._compare),
        ("GET", _REPO + r"/issues/(?P<n>\d+)", FakeGitHub._get_issue),
        ("GET", _REPO + r"/issues/(?P<n>\d+)/comments", FakeGitHub._list_issue_comments),
        ("POST", _REPO + r"/issues/(?P<n>\d+)/comments", FakeGitHub._post_issue_comment),
        ("PATCH", _REPO + r"/issues/comments/(?P<id>\d+)", FakeGitHub._patch_issue_comment),
        ("POST", _PULL + "/reviews", FakeGitHub._post_review),
        ("GET", _PULL + "/reviews", FakeGitHub._list_reviews),
        ("PUT", _PULL + r"/reviews/(?P<id>\d+)/dismissals", FakeGitHub._dismiss_review),
        ("GET", _PULL + "/comments", FakeGitHub._list_review_comments),
        ("POST", _PULL + r"/comments/(?P<id>\d+)/replies", FakeGitHub._post_reply),
        ("POST", _REPO + "/check-runs", FakeGitHub._post_check_run),
        ("PATCH", _REPO + r"/check-runs/(?P<id>\d+)", FakeGitHub._patch_check_run),
        ("POST", r"/graphql", FakeGitHub._graphql),
        ("GET", _REPO + r"/git/ref/heads/(?P<branch>.+)", FakeGitHub._get_branch_ref),
        ("POST", _REPO + r"/git/refs", FakeGitHub._post_ref),
        ("PUT", _REPO + r"/contents/(?P<path>.+)", FakeGitHub._put_contents),
        ("POST", _REPO + r"/pulls", FakeGitHub._post_pull),
    )
]


def _bearer(header: str) -> str:
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() in ("bearer", "token") else ""


def _fault_reply(fault: Fault) -> Reply:
    if fault.status == 0:
        return Reply(0, drop=True)
    headers: dict[str, str] = {}
    if fault.retry_after is not None:
        headers["retry-after"] = str(int(fault.retry_after))
    if fault.reset_after is not None:
        headers["x-ratelimit-remaining"] = "0"
        headers["x-ratelimit-reset"] = str(int(time.time() + fault.reset_after))
    if fault.status == 502:
        return Reply(502, "<html><body><h1>Unicorn!</h1> This page is taking too long to load.</body></html>", headers)
    if fault.status >= 500:
        return Reply(fault.status, {"message": "Server Error"}, headers)
    if fault.status == 403 and fault.reset_after is None:
        message = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
    else:
        message = "API rate limit exceeded for installation."
    return Reply(fault.status, {"message": message, "documentation_url": DOCS}, headers)


def _rate_headers(path: str) -> dict[str, str]:
    resource = "graphql" if path == "/graphql" else "core"
    reset = str(int(time.time()) + 3600)
    return {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999", "x-ratelimit-resource": resource,
            "x-ratelimit-reset": reset, "x-github-request-id": "FAKE:0000"}  # fmt: skip


def _make_handler(server: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def _handle(self) -> None:
            raw = self.read_body()
            parts = urlsplit(self.path)
            headers_in = {k.lower(): v for k, v in self.headers.items()}
            if server.git.respond(self.wfile, self.send_head, self.command, parts.path, parts.query, headers_in, raw):
                return
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = server._serve(self.command, self.path, headers, body)
            if reply.drop:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            text = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            data = text.encode()
            self.send_response(reply.status)
            kind = "text/html" if isinstance(reply.body, str) else "application/json"
            extra = dict(reply.headers)
            self.send_header("Content-Type", extra.pop("Content-Type", f"{kind}; charset=utf-8"))
            self.send_header("Content-Length", str(len(data)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle

    return Handler
