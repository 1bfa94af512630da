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
FORBIDDEN); check runs from a personal token (403, GitHub Apps only); more than 50 annotations
in one check-run request (422); bad credentials (401); ``per_page`` above 100 (capped, with
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
reviews (``event`` is required), no renames in a pull request's files (a comparison reports a
file moved with the same text as renamed), one fake clock, ids unique across all objects; a
multi-line comment must stay in one hunk (unconfirmed on github.com). GraphQL: a query is
recognised by the field it names; a mutation document is parsed (``_parse_mutation``): several
top-level fields, aliased or not, run in order, each failure an ``errors`` entry whose ``path``
is its alias and whose value in ``data`` is null. As GitHub does, the fake refuses the whole
document for an unknown field, a variable used but not declared, or a declared non-null
variable not sent; it also refuses values written into the document (send variables).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import difflib
import hashlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from tests.fakes.loopback import LoopbackServer, QuietHandler

Permission = Literal["admin", "write", "read", "none"]
TokenKind = Literal["actions", "fork", "pat"]
Side = Literal["LEFT", "RIGHT"]

ACTIONS_LOGIN = "github-actions[bot]"
ACTIONS_USER_ID = 41898282
NOT_ACCESSIBLE = "Resource not accessible by integration"
OFF_DIFF = "Pull request review thread line must be part of the diff"
ACTIONS_MAY_NOT_APPROVE = "GitHub Actions is not permitted to approve pull requests."
DEFAULT_ACTIONS_PERMISSIONS = {"pull-requests": "write", "issues": "write", "checks": "write", "contents": "read"}
MAX_ANNOTATIONS = 50
_DOCS = "https://docs.github.com/rest"


# -- state --------------------------------------------------------------------------------------
@dataclass
class User:
    login: str
    id: int
    bot: bool = False

    def json(self) -> dict[str, Any]:
        return {"login": self.login, "id": self.id, "type": "Bot" if self.bot else "User"}


@dataclass
class Token:
    """A credential; ``permissions`` matter for workflow tokens (``actions``, ``fork``) only."""

    user: str
    kind: TokenKind
    permissions: dict[str, str]

    def may_write(self, scope: str) -> bool:
        return self.kind == "pat" or self.permissions.get(scope) == "write"


@dataclass
class Repo:
    full_name: str
    id: int
    actions_can_approve: bool = False
    permissions: dict[str, Permission] = field(default_factory=dict)
    commits: set[str] = field(default_factory=set)
    parents: dict[str, str | None] = field(default_factory=dict)  # commit -> parent (None: a root)


@dataclass
class PullFile:
    """One file of a pull request at one head: GitHub's patch and, per hunk, the lines a comment may use."""

    filename: str
    status: str
    old_text: str | None
    new_text: str | None
    patch: str
    hunks: list[tuple[set[int], set[int]]]  # (LEFT lines, RIGHT lines) of each hunk

    def hunk_of(self, side: Side, line: int) -> int | None:
        for index, (left, right) in enumerate(self.hunks):
            if line in (left if side == "LEFT" else right):
                return index
        return None

    def text_at(self, side: Side, line: int) -> str | None:
        text = self.old_text if side == "LEFT" else self.new_text
        lines = (text or "").splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else None


@dataclass
class Pull:
    repo: str
    number: int
    id: int
    title: str
    body: str
    author: str
    head_sha: str
    base_sha: str
    head_ref: str
    base_ref: str
    files: dict[str, PullFile]
    versions: dict[str, dict[str, PullFile]] = field(default_factory=dict)  # head sha -> files
    head_repo: str | None = None  # a fork's full name; None: the same repository


@dataclass
class IssueComment:
    id: int
    pull_id: int
    body: str
    user: str
    created_at: str
    updated_at: str


@dataclass
class ReviewComment:
    id: int
    pull_id: int
    thread_id: str
    review_id: int
    path: str
    line: int | None
    original_line: int
    side: Side
    start_line: int | None
    start_side: Side | None
    in_reply_to_id: int | None
    body: str
    user: str
    commit_id: str
    created_at: str


@dataclass
class Review:
    id: int
    pull_id: int
    state: str
    body: str
    commit_id: str
    user: str
    submitted_at: str


@dataclass
class Thread:
    id: str
    pull_id: int
    path: str
    line: int | None
    side: Side
    anchor_text: str | None
    comments: list[ReviewComment]
    is_resolved: bool = False
    is_outdated: bool = False
    resolved_by: str | None = None


@dataclass
class CheckRun:
    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    title: str
    summary: str
    text: str
    annotations: list[dict[str, Any]]
    user: str
    details_url: str | None = None
    external_id: str | None = None


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received; the Authorization header is left out (``login`` says whose token it was)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    login: str | None
    token_kind: TokenKind | None
    status: int  # 0: the connection was dropped


@dataclass
class _Fault:
    remaining: int
    status: int
    retry_after: float | None
    reset_after: float | None
    method: str | None
    path: str | None
    processed: bool

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (self.path is None or self.path in path)


@dataclass
class _Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False


class _Refusal(Exception):
    """Raised inside a handler: answer with this reply and change nothing."""

    def __init__(self, status: int, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        body: dict[str, Any] = {"message": message, "documentation_url": _DOCS, "status": str(status)}
        if errors is not None:
            body["errors"] = errors
        self.reply = _Reply(status, body)


class _GraphQLError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _unprocessable(*errors: str) -> _Refusal:
    return _Refusal(422, "Unprocessable Entity", list(errors))


@dataclass
class _Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    token: Token | None
    args: dict[str, str]
    prefix: str = ""  # "/api/v3" when the client used GitHub Enterprise's paths

    @property
    def login(self) -> str:
        assert self.token is not None
        return self.token.user

    def field(self, name: str) -> Any:
        return self.body.get(name) if isinstance(self.body, dict) else None


# -- the server ---------------------------------------------------------------------------------
class FakeGitHub(LoopbackServer):
    """Stateful GitHub REST + GraphQL fake on a free loopback port (see the module docstring)."""

    thread_name = "fake-github"

    def __init__(self, repo: str = "octo/app", *, latency_s: float = 0.0) -> None:
        self._lock = threading.RLock()
        self._next_id = 1000
        self._clock = 0
        self.default_repo = repo
        self.latency_s = latency_s
        self._users: dict[str, User] = {}
        self._tokens: dict[str, Token] = {}
        self._repos: dict[str, Repo] = {}
        self._pulls: dict[tuple[str, int], Pull] = {}
        self._issue_comments: dict[int, IssueComment] = {}
        self._comments: dict[int, ReviewComment] = {}
        self._reviews: dict[int, Review] = {}
        self._threads: dict[str, Thread] = {}
        self._check_runs: dict[int, CheckRun] = {}
        self._faults: list[_Fault] = []
        self._requests: list[RecordedRequest] = []
        self._contents: dict[str, dict[str, str]] = {}  # commit sha -> path -> text
        self._refused_lines: set[tuple[str, int]] = set()
        self._users[ACTIONS_LOGIN] = User(ACTIONS_LOGIN, ACTIONS_USER_ID, bot=True)
        self.add_repo(repo)
        super().__init__(_make_handler(self))

    # -- addresses --------------------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        return self.origin

    @property
    def graphql_url(self) -> str:
        return self.api_url + "/graphql"

    # -- building state -----------------------------------------------------------------------------
    def add_repo(self, full_name: str, *, actions_can_approve: bool = False) -> Repo:
        """Add a repository; its owner (the part before ``/``) becomes a user with admin permission."""
        with self._lock:
            repo = Repo(full_name, self._new_id(), actions_can_approve)
            self._repos[full_name] = repo
            owner = full_name.split("/", 1)[0]
            self.add_user(owner, permission="admin", repo=full_name)
            return repo

    def repo(self, full_name: str | None = None) -> Repo:
        """The live repository record (set ``actions_can_approve`` on it)."""
        return self._repos[full_name or self.default_repo]

    def add_user(
        self, login: str, *, permission: Permission = "write", repo: str | None = None, bot: bool = False
    ) -> int:
        """Add (or re-permission) a user; return its id."""
        with self._lock:
            user = self._users.get(login) or User(login, self._new_id(), bot)
            self._users[login] = user
            self._repos[repo or self.default_repo].permissions[login] = permission
            return user.id

    def add_token(
        self, token: str, *, user: str | None = None, kind: TokenKind = "pat", permissions: dict[str, str] | None = None
    ) -> None:
        """Register a credential.

        ``actions``: the workflow GITHUB_TOKEN of ``github-actions[bot]``; ``permissions`` are
        merged over pull-requests/issues/checks write, contents read. ``fork``: the read-only
        token of a workflow run from a fork. ``pat``: a personal token of ``user``.
        """
        with self._lock:
            if kind == "pat":
                if user is None or user not in self._users:
                    raise ValueError("a personal token needs a known user")
                self._tokens[token] = Token(user, kind, {})
            elif kind == "actions":
                self._tokens[token] = Token(ACTIONS_LOGIN, kind, {**DEFAULT_ACTIONS_PERMISSIONS, **(permissions or {})})
            else:
                self._tokens[token] = Token(ACTIONS_LOGIN, kind, dict.fromkeys(DEFAULT_ACTIONS_PERMISSIONS, "read"))

    def add_pr(
        self,
        *,
        author: str,
        files: Mapping[str, tuple[str | None, str | None]],
        number: int | None = None,
        title: str = "A change",
        body: str = "",
        head_sha: str | None = None,
        base_sha: str | None = None,
        head_ref: str = "feature",
        base_ref: str = "main",
        repo: str | None = None,
        base_files: Mapping[str, str] | None = None,
        head_repo: str | None = None,
    ) -> int:
        """Open a pull request; ``files`` maps a path to (base text, head text), None for absent.

        ``base_files``: more files on the base commit (config, AGENTS.md), served by the contents
        API with the base side of ``files``. ``head_repo``: the fork the head lives in.
        """
        with self._lock:
            repo_name = repo or self.default_repo
            self._known(author)
            number = number or 1 + max((n for r, n in self._pulls if r == repo_name), default=0)
            if (repo_name, number) in self._pulls:
                raise ValueError(f"pull request {repo_name}#{number} exists already")
            head, base = head_sha or self._new_sha(), base_sha or self._new_sha()
            built = {path: _pull_file(path, old, new) for path, (old, new) in files.items()}
            pull = Pull(repo_name, number, self._new_id(), title, body, author, head, base, head_ref, base_ref, built)
            pull.head_repo = head_repo
            pull.versions[head] = built
            tree = dict(self._contents.get(base, {})) | dict(base_files or {})
            tree |= {path: old for path, (old, _) in files.items() if old is not None}
            self._contents[base] = tree
            self._contents[head] = {p: t for p, t in tree.items() if p not in files} | {
                path: new for path, (_, new) in files.items() if new is not None
            }
            self._pulls[(repo_name, number)] = pull
            self._repos[repo_name].commits |= {head, base}
            self._repos[repo_name].parents.setdefault(base, None)
            self._repos[repo_name].parents[head] = base
            return number

    def push(
        self, number: int, files: Mapping[str, tuple[str | None, str | None] | None], *, head_sha: str | None = None,
        repo: str | None = None, force: bool = False,
    ) -> str:  # fmt: skip
        """Push a new head: ``files`` replaces those paths (None drops one); threads may become outdated.

        The new head's parent is the old head; ``force``: a force-push whose new head descends
        from the base commit only (a rebase), so the old head is no longer its ancestor.
        """
        with self._lock:
            pull = self._pull(repo, number)
            merged = dict(pull.files)
            base_tree = self._contents.get(pull.base_sha, {})
            tree = dict(self._contents.get(pull.head_sha, base_tree))
            for path, texts in files.items():
                if texts is None:
                    merged.pop(path, None)
                    tree.pop(path, None)
                    if path in base_tree:
                        tree[path] = base_tree[path]
                else:
                    merged[path] = _pull_file(path, *texts)
                    tree.pop(path, None)
                    if texts[1] is not None:
                        tree[path] = texts[1]
            parent = pull.base_sha if force else pull.head_sha
            pull.files, pull.head_sha = merged, head_sha or self._new_sha()
            pull.versions[pull.head_sha] = merged
            self._contents[pull.head_sha] = tree
            self._repos[pull.repo].commits.add(pull.head_sha)
            self._repos[pull.repo].parents[pull.head_sha] = parent
            for thread in self._threads_of(pull):
                self._check_outdated(pull, thread)
            return pull.head_sha

    def add_issue_comment(self, number: int, body: str, *, user: str, repo: str | None = None) -> int:
        """A human's comment on the pull request's conversation."""
        with self._lock:
            return self._create_issue_comment(self._pull(repo, number), body, self._known(user)).id

    def add_review_comment(
        self, number: int, path: str, line: int, body: str, *, user: str, side: Side = "RIGHT",
        start_line: int | None = None, repo: str | None = None,
    ) -> int:  # fmt: skip
        """A human's inline comment (in a one-comment COMMENTED review); return the comment id."""
        with self._lock:
            pull = self._pull(repo, number)
            draft = {"path": path, "line": line, "side": side, "start_line": start_line, "body": body}
            error = _comment_error(pull.files, draft)
            if error:
                raise ValueError(error)
            review = self._create_review(pull, self._known(user), "COMMENTED", "", pull.head_sha)
            return self._create_thread(pull, review, draft).comments[0].id

    def add_reply(self, number: int, comment_id: int, body: str, *, user: str, repo: str | None = None) -> int:
        """A human's reply in the thread of ``comment_id``; return the new comment id."""
        with self._lock:
            return self._reply(self._pull(repo, number), comment_id, body, self._known(user)).id

    def add_review(
        self, number: int, *, user: str, state: str = "APPROVED", body: str = "", repo: str | None = None
    ) -> int:
        """A human's review without inline comments (e.g. an approval); return its id."""
        with self._lock:
            pull = self._pull(repo, number)
            return self._create_review(pull, self._known(user), state, body, pull.head_sha).id

    def refuse_comments_on(self, path: str, line: int) -> None:
        """Refuse (422, off the diff) review comments ending on ``line`` although the patch shows it."""
        with self._lock:
            self._refused_lines.add((path, line))

    def set_contents(self, ref: str, files: Mapping[str, str | None]) -> None:
        """Set (None: remove) files of commit ``ref`` as the contents API serves them."""
        with self._lock:
            tree = self._contents.setdefault(ref, {})
            for path, text in files.items():
                if text is None:
                    tree.pop(path, None)
                else:
                    tree[path] = text

    def drop_commit(self, sha: str, repo: str | None = None) -> None:
        """Forget commit ``sha`` (unreachable after a force-push, then garbage-collected): compare and
        contents answer 404 for it."""
        with self._lock:
            self.repo(repo).commits.discard(sha)
            self._contents.pop(sha, None)

    def resolve_thread(self, thread_id: str, *, user: str, resolved: bool = True) -> None:
        """A human resolves (or unresolves) a thread."""
        with self._lock:
            thread = self._threads[thread_id]
            thread.is_resolved, thread.resolved_by = resolved, self._known(user) if resolved else None

    def fail_next(
        self, n: int = 1, status: int = 429, *, retry_after: float | None = None, reset_after: float | None = None,
        method: str | None = None, path: str | None = None, processed: bool = False,
    ) -> None:  # fmt: skip
        """Answer the next ``n`` matching requests with ``status`` instead of serving them.

        429: rate limited; 403: a secondary rate limit (with ``reset_after``: the primary one,
        ``x-ratelimit-remaining: 0``); 5xx: a server error (502 as an HTML page, as GitHub does).
        ``retry_after`` sets Retry-After; ``reset_after`` sets x-ratelimit-reset that many seconds
        ahead. ``path`` matches as a substring. ``processed``: the request takes effect anyway.
        """
        with self._lock:
            self._faults.append(_Fault(n, status, retry_after, reset_after, method, path, processed))

    def drop_next(
        self, n: int = 1, *, method: str | None = None, path: str | None = None, processed: bool = False
    ) -> None:
        """Close the connection of the next ``n`` matching requests without any answer.

        With ``processed`` the request takes effect first: the client cannot know it did.
        """
        self.fail_next(n, 0, method=method, path=path, processed=processed)

    # -- inspecting state ---------------------------------------------------------------------------
    def pull(self, number: int, repo: str | None = None) -> Pull:
        with self._lock:
            return copy.deepcopy(self._pull(repo, number))

    def issue_comments(self, number: int, repo: str | None = None) -> list[IssueComment]:
        with self._lock:
            pull = self._pull(repo, number)
            return [copy.copy(c) for c in self._issue_comments.values() if c.pull_id == pull.id]

    def reviews(self, number: int, repo: str | None = None) -> list[Review]:
        with self._lock:
            pull = self._pull(repo, number)
            return [copy.copy(r) for r in self._reviews.values() if r.pull_id == pull.id]

    def review_comments(self, number: int, repo: str | None = None) -> list[ReviewComment]:
        with self._lock:
            pull = self._pull(repo, number)
            return [copy.copy(c) for c in self._comments.values() if c.pull_id == pull.id]

    def threads(self, number: int, repo: str | None = None) -> list[Thread]:
        with self._lock:
            return copy.deepcopy(self._threads_of(self._pull(repo, number)))

    def check_runs(self, repo: str | None = None) -> list[CheckRun]:
        with self._lock:
            return [copy.deepcopy(c) for c in self._check_runs.values() if c.head_sha in self.repo(repo).commits]

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in the order they were answered."""
        with self._lock:
            return list(self._requests)

    @property
    def api_calls(self) -> int:
        """How many requests reached the server (faults and drops included)."""
        with self._lock:
            return len(self._requests)

    def calls(self, method: str | None = None, path: str | None = None) -> list[RecordedRequest]:
        """The recorded requests with this method and a path containing ``path``."""
        return [r for r in self.requests if (method in (None, r.method)) and (path is None or path in r.path)]

    # -- helpers on state ---------------------------------------------------------------------------
    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _new_sha(self) -> str:
        return f"{self._new_id():040x}"

    def _now(self) -> str:
        self._clock += 1
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_795_000_000 + self._clock))

    def _known(self, login: str) -> str:
        if login not in self._users:
            raise ValueError(f"unknown user {login!r}: add_user first")
        return login

    def _pull(self, repo: str | None, number: int) -> Pull:
        pull = self._pulls.get((repo or self.default_repo, number))
        if pull is None:
            raise _Refusal(404, "Not Found")
        return pull

    def _threads_of(self, pull: Pull) -> list[Thread]:
        return [t for t in self._threads.values() if t.pull_id == pull.id]

    def _check_outdated(self, pull: Pull, thread: Thread) -> None:
        """A thread is outdated once its line leaves the head's diff or its text changes."""
        file = pull.files.get(thread.path)
        line = thread.comments[0].original_line
        if (
            file is None
            or file.hunk_of(thread.side, line) is None
            or file.text_at(thread.side, line) != thread.anchor_text
        ):
            thread.is_outdated, thread.line = True, None
            for comment in thread.comments:
                comment.line = None

    def _create_issue_comment(self, pull: Pull, body: str, user: str) -> IssueComment:
        now = self._now()
        comment = IssueComment(self._new_id(), pull.id, body, user, now, now)
        self._issue_comments[comment.id] = comment
        return comment

    def _create_review(self, pull: Pull, user: str, state: str, body: str, commit_id: str) -> Review:
        review = Review(self._new_id(), pull.id, state, body, commit_id, user, self._now())
        self._reviews[review.id] = review
        return review

    def _create_thread(self, pull: Pull, review: Review, draft: dict[str, Any]) -> Thread:
        side: Side = draft.get("side") or "RIGHT"
        line = int(draft["line"])
        files = pull.versions.get(review.commit_id, pull.files)
        anchor = files[draft["path"]].text_at(side, line)
        comment_id = self._new_id()
        thread = Thread(f"PRRT_{comment_id}", pull.id, draft["path"], line, side, anchor, [])
        start = draft.get("start_line")
        thread.comments.append(
            ReviewComment(
                comment_id, pull.id, thread.id, review.id, thread.path, line, line, side,
                int(start) if start else None, (draft.get("start_side") or side) if start else None,
                None, str(draft.get("body") or ""), review.user, review.commit_id, self._now(),
            )
        )  # fmt: skip
        self._comments[comment_id] = thread.comments[0]
        self._threads[thread.id] = thread
        if review.commit_id != pull.head_sha:
            self._check_outdated(pull, thread)
        return thread

    def _reply(self, pull: Pull, comment_id: int, body: str, user: str) -> ReviewComment:
        """Reply in a thread; like GitHub, the reply comes in a new COMMENTED review of its own."""
        parent = self._comments.get(comment_id)
        if parent is None or parent.pull_id != pull.id:
            raise _Refusal(404, "Not Found")
        thread = self._threads[parent.thread_id]
        root = thread.comments[0]
        review = self._create_review(pull, user, "COMMENTED", "", pull.head_sha)
        reply = dataclasses.replace(
            root, id=self._new_id(), review_id=review.id, in_reply_to_id=root.id, body=body, user=user,
            commit_id=pull.head_sha, created_at=self._now(),
        )  # fmt: skip
        thread.comments.append(reply)
        self._comments[reply.id] = reply
        return reply

    # -- one request ------------------------------------------------------------------------------
    def _serve(self, method: str, target: str, headers: dict[str, str], body: Any) -> _Reply:
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

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        for fault in self._faults:
            if fault.remaining > 0 and fault.matches(method, path):
                fault.remaining -= 1
                return fault
        return None

    def _route(
        self, method: str, path: str, query: dict[str, str], body: Any, token: Token | None, headers: dict[str, str],
        prefix: str = "",
    ) -> _Reply:  # fmt: skip
        if token is None:
            return _Refusal(401, "Bad credentials" if headers.get("authorization") else "Requires authentication").reply
        for verb, pattern, handler in _ROUTES:
            match = pattern.fullmatch(path.rstrip("/"))
            if verb == method and match:
                call = _Call(method, path, query, body, token, match.groupdict(), prefix)
                try:
                    if "repo" in call.args and call.args["repo"] not in self._repos:
                        raise _Refusal(404, "Not Found")
                    return handler(self, call)
                except _Refusal as refusal:
                    return refusal.reply
                except Exception as exc:  # a bug in the fake, or input it does not model: say so loudly
                    return _Reply(500, {"message": f"the fake GitHub failed: {exc!r}"})
        return _Refusal(404, "Not Found").reply

    # -- permissions ------------------------------------------------------------------------------
    def _need_write(self, call: _Call, *scopes: str) -> None:
        """Workflow tokens need one of ``scopes`` at write; people need read access to the repository."""
        assert call.token is not None
        if call.token.kind == "pat":
            if self._repos[call.args["repo"]].permissions.get(call.login, "none") == "none":
                raise _Refusal(403, "Must have push access to this repository.")
        elif not any(call.token.may_write(scope) for scope in scopes):
            raise _Refusal(403, NOT_ACCESSIBLE)

    def _can_resolve(self, token: Token, pull: Pull) -> bool:
        if token.kind != "pat":
            return token.may_write("pull-requests") and token.may_write("contents")
        return token.user == pull.author or self._repos[pull.repo].permissions.get(token.user) in ("write", "admin")

    # -- REST handlers ----------------------------------------------------------------------------
    def _get_user(self, call: _Call) -> _Reply:
        if call.token and call.token.kind != "pat":
            raise _Refusal(403, NOT_ACCESSIBLE)
        return _Reply(200, self._users[call.login].json())

    def _get_repo(self, call: _Call) -> _Reply:
        repo = self._repos[call.args["repo"]]
        owner = self._users[repo.full_name.split("/")[0]].json()
        name = repo.full_name.split("/")[1]
        return _Reply(200, {"id": repo.id, "name": name, "full_name": repo.full_name, "owner": owner,
                            "private": False, "default_branch": "main"})  # fmt: skip

    def _get_pull(self, call: _Call) -> _Reply:
        return _Reply(200, self._pull_json(self._pull(call.args["repo"], int(call.args["n"]))))

    def _pull_json(self, pull: Pull) -> dict[str, Any]:
        repo = {"full_name": pull.repo}
        head_repo = {"full_name": pull.head_repo or pull.repo}
        return {
            "id": pull.id, "node_id": f"PR_{pull.id}", "number": pull.number, "state": "open", "draft": False,
            "title": pull.title, "body": pull.body, "user": self._users[pull.author].json(),
            "head": {"sha": pull.head_sha, "ref": pull.head_ref, "repo": head_repo},
            "base": {"sha": pull.base_sha, "ref": pull.base_ref, "repo": repo},
            "changed_files": len(pull.files), "html_url": f"https://github.test/{pull.repo}/pull/{pull.number}",
        }  # fmt: skip

    def _list_files(self, call: _Call) -> _Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        items = [_file_json(f) for f in pull.files.values()]
        return self._page(call, items)

    def _get_permission(self, call: _Call) -> _Reply:
        login = call.args["login"]
        user = self._users.get(login)
        if user is None:
            raise _Refusal(404, f"{login} is not a user")
        permission = self._repos[call.args["repo"]].permissions.get(login, "none")
        return _Reply(200, {"permission": permission, "role_name": permission, "user": user.json()})

    def _get_contents(self, call: _Call) -> _Reply:
        """A file (base64, as GitHub sends it) or a directory listing at ``ref``."""
        repo = self._repos[call.args["repo"]]
        ref = call.query.get("ref") or ""
        tree = self._contents.get(ref)
        if tree is None or ref not in repo.commits:
            raise _Refusal(404, f"No commit found for the ref {ref}")
        path = (call.args.get("path") or "").strip("/")
        if path in tree:
            data = tree[path].encode()
            encoded = base64.encodebytes(data).decode()  # GitHub wraps the base64 at 60 columns
            return _Reply(200, {"type": "file", "encoding": "base64", "path": path, "name": path.rsplit("/", 1)[-1],
                                "size": len(data), "content": encoded})  # fmt: skip
        prefix = f"{path}/" if path else ""
        names = sorted({p[len(prefix) :].split("/", 1)[0] for p in tree if p.startswith(prefix)})
        if not names:
            raise _Refusal(404, "Not Found")
        items = [{"type": "file" if f"{prefix}{n}" in tree else "dir", "path": f"{prefix}{n}", "name": n}
                 for n in names]  # fmt: skip
        return _Reply(200, items)

    def _compare(self, call: _Call) -> _Reply:
        """``base...head``: the commits of ``head`` since the merge base, and the files that differ between
        the merge base and ``head`` (first page only, at most 300, as GitHub does; identical text under a
        new name is a rename). ``per_page``/``page`` page the commits; without them, 250 at most."""
        repo = self._repos[call.args["repo"]]
        base, dots, head = call.args["basehead"].partition("...")
        if not dots or not base or not head:
            raise _Refusal(404, "Not Found")  # the fake knows only the three-dot form
        for sha in (base, head):
            if sha not in repo.commits or sha not in self._contents:
                raise _Refusal(404, "Not Found")
        base_line, head_line = _ancestry(repo, base), _ancestry(repo, head)
        merge_base = next((c for c in head_line if c in base_line), None)
        if merge_base is None:
            raise _Refusal(404, f"No common ancestor between {base} and {head}.")
        ahead, behind = head_line.index(merge_base), base_line.index(merge_base)
        status = {(False, False): "identical", (True, False): "ahead", (False, True): "behind"}.get(
            (ahead > 0, behind > 0), "diverged"
        )
        commits = [{"sha": c, "commit": {"message": f"commit {c[:7]}"}} for c in reversed(head_line[:ahead])]
        paged = "per_page" in call.query or "page" in call.query
        reply = self._page(call, commits) if paged else _Reply(200, commits[:250])
        first_page = not paged or int(call.query.get("page", 1)) <= 1
        files = _compare_files(self._contents[merge_base], self._contents[head])[:300] if first_page else []
        reply.body = {
            "status": status, "ahead_by": ahead, "behind_by": behind, "total_commits": ahead,
            "base_commit": {"sha": base}, "merge_base_commit": {"sha": merge_base}, "commits": reply.body,
            "files": files,
        }  # fmt: skip
        return reply

    def _list_check_runs(self, call: _Call) -> _Reply:
        ref = call.args["ref"]
        name = call.query.get("check_name")
        runs = [r for r in self._check_runs.values() if r.head_sha == ref and (name is None or r.name == name)]
        runs.sort(key=lambda r: -r.id)
        return _Reply(200, {"total_count": len(runs), "check_runs": [_check_run_json(r) for r in runs]})

    def _list_issue_comments(self, call: _Call) -> _Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        return self._page(call, [self._issue_comment_json(c) for c in self._issue_comments.values()
                                 if c.pull_id == pull.id])  # fmt: skip

    def _post_issue_comment(self, call: _Call) -> _Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        self._need_write(call, "issues", "pull-requests")
        body = _required_text(call, "body")
        return _Reply(201, self._issue_comment_json(self._create_issue_comment(pull, body, call.login)))

    def _patch_issue_comment(self, call: _Call) -> _Reply:
        comment = self._issue_comments.get(int(call.args["id"]))
        if comment is None:
            raise _Refusal(404, "Not Found")
        self._need_write(call, "issues", "pull-requests")
        if comment.user != call.login and self._repos[call.args["repo"]].permissions.get(call.login) != "admin":
            raise _Refusal(403, NOT_ACCESSIBLE if call.token and call.token.kind != "pat" else "Forbidden")
        comment.body, comment.updated_at = _required_text(call, "body"), self._now()
        return _Reply(200, self._issue_comment_json(comment))

    def _issue_comment_json(self, c: IssueComment) -> dict[str, Any]:
        return {"id": c.id, "node_id": f"IC_{c.id}", "body": c.body, "user": self._users[c.user].json(),
                "created_at": c.created_at, "updated_at": c.updated_at}  # fmt: skip

    def _post_review(self, call: _Call) -> _Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        self._need_write(call, "pull-requests")
        event = call.field("event")
        state = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}.get(event)
        if state is None:
            raise _unprocessable(f"event must be APPROVE, REQUEST_CHANGES or COMMENT (got {event!r}; "
                                 "the fake does not model pending reviews)")  # fmt: skip
        commit_id = call.field("commit_id") or pull.head_sha
        files = pull.versions.get(commit_id)
        if files is None:
            raise _unprocessable(f"No commit found for SHA: {commit_id}")
        drafts = call.field("comments") or []
        body = call.field("body") or ""
        if not body and (state == "CHANGES_REQUESTED" or (state == "COMMENTED" and not drafts)):
            raise _unprocessable("Body can't be blank")
        errors = [error for draft in drafts if (error := _comment_error(files, draft))]
        errors += [
            OFF_DIFF for d in drafts if isinstance(d, dict) and (d.get("path"), d.get("line")) in self._refused_lines
        ]
        if errors:
            raise _unprocessable(*errors)
        if state != "COMMENTED" and call.login == pull.author:
            verb = "approve" if state == "APPROVED" else "request changes on"
            raise _unprocessable(f"Can not {verb} your own pull request")
        by_actions = call.token is not None and call.token.kind != "pat"
        if state == "APPROVED" and by_actions and not self._repos[pull.repo].actions_can_approve:
            raise _Refusal(422, ACTIONS_MAY_NOT_APPROVE)
        review = self._create_review(pull, call.login, state, body, commit_id)
        for draft in drafts:
            self._create_thread(pull, review, draft)
        return _Reply(200, self._review_json(review))

    def _list_reviews(self, call: _Call) -> _Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        return self._page(call, [self._review_json(r) for r in self._reviews.values() if r.pull_id == pull.id])

    def _dismiss_review(self, call: _Call) -> _Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        review = self._reviews.get(int(call.args["id"]))
        if review is None or review.pull_id != pull.id:
            raise _Refusal(404, "Not Found")
        self._need_write(call, "pull-requests")
        if call.token and call.token.kind == "pat" and self._repos[pull.repo].permissions.get(call.login) not in (
            "write", "admin",
        ):  # fmt: skip
            raise _Refusal(403, "Must have push access to dismiss a review.")
        _required_text(call, "message")
        if review.state not in ("APPROVED", "CHANGES_REQUESTED"):
            raise _unprocessable("Can not dismiss a commented pull request review")
        review.state = "DISMISSED"
        return _Reply(200, self._review_json(review))

    def _review_json(self, r: Review) -> dict[str, Any]:
        return {"id": r.id, "node_id": f"PRR_{r.id}", "state": r.state, "body": r.body, "commit_id": r.commit_id,
                "user": self._users[r.user].json(), "submitted_at": r.submitted_at}  # fmt: skip

    def _list_review_comments(self, call: _Call) -> _Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        items = [self._comment_json(c) for c in self._comments.values() if c.pull_id == pull.id]
        return self._page(call, items)

    def _post_reply(self, call: _Call) -> _Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        self._need_write(call, "pull-requests")
        reply = self._reply(pull, int(call.args["id"]), _required_text(call, "body"), call.login)
        return _Reply(201, self._comment_json(reply))

    def _comment_json(self, c: ReviewComment) -> dict[str, Any]:
        item = {
            "id": c.id, "node_id": f"PRRC_{c.id}", "pull_request_review_id": c.review_id, "path": c.path,
            "line": c.line, "original_line": c.original_line, "side": c.side, "start_line": c.start_line,
            "start_side": c.start_side, "body": c.body, "user": self._users[c.user].json(),
            "commit_id": c.commit_id, "original_commit_id": c.commit_id, "created_at": c.created_at,
        }  # fmt: skip
        if c.in_reply_to_id is not None:
            item["in_reply_to_id"] = c.in_reply_to_id
        return item

    def _post_check_run(self, call: _Call) -> _Reply:
        self._need_checks(call)
        name, head_sha = call.field("name"), call.field("head_sha")
        if not name or not head_sha:
            raise _unprocessable("name and head_sha are required")
        if head_sha not in self._repos[call.args["repo"]].commits:
            raise _unprocessable(f"No commit found for SHA: {head_sha}")
        run = CheckRun(self._new_id(), name, head_sha, "queued", None, "", "", "", [], call.login)
        self._update_run(run, call)
        self._check_runs[run.id] = run
        return _Reply(201, _check_run_json(run))

    def _patch_check_run(self, call: _Call) -> _Reply:
        self._need_checks(call)
        run = self._check_runs.get(int(call.args["id"]))
        if run is None or run.head_sha not in self._repos[call.args["repo"]].commits:
            raise _Refusal(404, "Not Found")
        self._update_run(run, call)
        return _Reply(200, _check_run_json(run))

    def _need_checks(self, call: _Call) -> None:
        if call.token and call.token.kind == "pat":
            raise _Refusal(403, "You must authenticate via a GitHub App.")
        self._need_write(call, "checks")

    def _update_run(self, run: CheckRun, call: _Call) -> None:
        """Validate everything first, then apply: annotations are appended, the rest replaced."""
        status = call.field("status") or run.status
        conclusion = call.field("conclusion") or run.conclusion
        if status not in ("queued", "in_progress", "completed"):
            raise _unprocessable(f"Invalid status: {status}")
        if status == "completed" and conclusion is None:
            raise _unprocessable("conclusion is required when status is completed")
        output = call.field("output")
        annotations: list[dict[str, Any]] = []
        if output is not None:
            if not isinstance(output, dict) or not output.get("title") or not output.get("summary"):
                raise _unprocessable("output needs a title and a summary")
            if len(output["summary"]) > 65535:
                raise _unprocessable("output.summary is too long (maximum is 65535 characters)")
            annotations = list(output.get("annotations") or [])
            if len(annotations) > MAX_ANNOTATIONS:
                raise _Refusal(422, f"Only {MAX_ANNOTATIONS} annotations are allowed per request")
            for item in annotations:
                if not all(item.get(k) for k in ("path", "start_line", "end_line", "annotation_level", "message")):
                    raise _unprocessable("an annotation needs path, start_line, end_line, annotation_level, message")
                if item["annotation_level"] not in ("notice", "warning", "failure"):
                    raise _unprocessable(f"Invalid annotation_level: {item['annotation_level']}")
            run.title, run.summary, run.text = output["title"], output["summary"], output.get("text") or run.text
        run.status, run.conclusion = status, conclusion
        run.annotations.extend(annotations)
        run.details_url = call.field("details_url") or run.details_url
        run.external_id = call.field("external_id") or run.external_id

    def _page(self, call: _Call, items: list[dict[str, Any]]) -> _Reply:
        """One page of ``items`` with GitHub's ``Link`` header (per_page defaults to 30, at most 100)."""
        per_page = max(1, min(100, int(call.query.get("per_page", 30))))
        page = max(1, int(call.query.get("page", 1)))
        last = max(1, -(-len(items) // per_page))
        links = []
        for rel, target in (("prev", page - 1), ("next", page + 1), ("first", 1), ("last", last)):
            if 1 <= target <= last and (rel in ("prev", "next") or page != target):
                query = "&".join(f"{k}={v}" for k, v in {**call.query, "per_page": per_page, "page": target}.items())
                links.append(f'<{self.api_url}{call.prefix}{call.path}?{query}>; rel="{rel}"')
        headers = {"link": ", ".join(links)} if links else {}
        return _Reply(200, items[(page - 1) * per_page : page * per_page], headers)

    # -- GraphQL ----------------------------------------------------------------------------------
    def _graphql(self, call: _Call) -> _Reply:
        query = call.field("query") or ""
        variables = call.field("variables") or {}
        if re.match(r"\s*mutation\b", query):
            assert call.token is not None
            return self._gql_mutations(call.token, query, variables)
        for field_name, name, operation in _GRAPHQL_FIELDS:
            if re.search(rf"\b{field_name}\b", query):
                assert call.token is not None
                try:
                    return _Reply(200, {"data": {name: operation(self, call.token, variables, query)}})
                except _GraphQLError as exc:
                    error = {"type": exc.kind, "path": [name], "message": str(exc)}
                    return _Reply(200, {"data": {name: None}, "errors": [error]})
        return _Reply(200, {"errors": [{"message": "the fake GitHub does not know this operation"}]})

    def _gql_mutations(self, token: Token, query: str, variables: dict[str, Any]) -> _Reply:
        """Run a mutation document's fields in order, each with its own arguments (from ``variables``)."""
        try:
            fields = _parse_mutation(query, variables)
        except _GraphQLError as exc:
            return _Reply(200, {"errors": [{"message": str(exc), "extensions": {"code": exc.kind}}]})
        data: dict[str, Any] = {}
        errors: list[dict[str, Any]] = []
        for key, name, arguments in fields:
            operation = _MUTATIONS[name]
            try:
                data[key] = operation(self, token, {"input": arguments}, query)
            except _GraphQLError as exc:
                data[key] = None
                errors.append({"type": exc.kind, "path": [key], "message": str(exc)})
        return _Reply(200, {"data": data, "errors": errors} if errors else {"data": data})

    def _gql_threads(self, token: Token, variables: dict[str, Any], query: str) -> Any:
        owner, name, number = (_variable(variables, key) for key in ("owner", "name", "number"))
        pull = self._pulls.get((f"{owner}/{name}", int(number)))
        if pull is None:
            raise _GraphQLError("NOT_FOUND", f"Could not resolve to a Repository with the name '{owner}/{name}'.")
        literal = re.search(r"reviewThreads\(\s*first:\s*(\d+)", query)
        first = int(literal[1]) if literal else int(_variable(variables, "first"))
        if first > 100:
            raise _GraphQLError("EXCESSIVE_PAGINATION", f"Requesting {first} records on the connection exceeds "
                                "the `first` limit of 100 records.")  # fmt: skip
        after = variables.get("after")
        start = int(base64.b64decode(after).decode().rsplit(":", 1)[1]) + 1 if after else 0
        threads = self._threads_of(pull)
        nodes = [self._thread_json(t, token, pull) for t in threads[start : start + first]]
        end = start + len(nodes) - 1
        cursor = base64.b64encode(f"cursor:v2:{end}".encode()).decode() if nodes else None
        info = {"hasNextPage": start + first < len(threads), "endCursor": cursor}
        return {"pullRequest": {"reviewThreads": {"pageInfo": info, "nodes": nodes}}}

    def _thread_json(self, t: Thread, token: Token, pull: Pull) -> dict[str, Any]:
        comments = [{"id": f"PRRC_{c.id}", "fullDatabaseId": str(c.id), "databaseId": c.id, "body": c.body,
                     "author": {"login": c.user}, "createdAt": c.created_at} for c in t.comments[:100]]  # fmt: skip
        can_resolve = self._can_resolve(token, pull)
        return {
            "id": t.id, "isResolved": t.is_resolved, "isOutdated": t.is_outdated, "path": t.path, "line": t.line,
            "originalLine": t.comments[0].original_line, "diffSide": t.side, "viewerCanResolve": can_resolve,
            "viewerCanUnresolve": can_resolve, "resolvedBy": {"login": t.resolved_by} if t.resolved_by else None,
            "comments": {"nodes": comments},
        }  # fmt: skip

    def _gql_thread(self, token: Token, variables: dict[str, Any]) -> tuple[Thread, Pull]:
        thread_id = _variable(variables, "threadId", "pullRequestReviewThreadId")
        thread = self._threads.get(thread_id)
        if thread is None:
            raise _GraphQLError("NOT_FOUND", f"Could not resolve to a node with the global id of '{thread_id}'")
        pull = next(p for p in self._pulls.values() if p.id == thread.pull_id)
        return thread, pull

    def _gql_resolve(self, token: Token, variables: dict[str, Any], query: str, resolved: bool = True) -> Any:
        thread, pull = self._gql_thread(token, variables)
        if not self._can_resolve(token, pull):
            raise _GraphQLError("FORBIDDEN", NOT_ACCESSIBLE)
        thread.is_resolved, thread.resolved_by = resolved, token.user if resolved else None
        return {"thread": {"id": thread.id, "isResolved": thread.is_resolved}}

    def _gql_unresolve(self, token: Token, variables: dict[str, Any], query: str) -> Any:
        return self._gql_resolve(token, variables, query, resolved=False)

    def _gql_reply(self, token: Token, variables: dict[str, Any], query: str) -> Any:
        thread, pull = self._gql_thread(token, variables)
        body = _variable(variables, "body")
        if token.kind != "pat" and not token.may_write("pull-requests"):
            raise _GraphQLError("FORBIDDEN", NOT_ACCESSIBLE)
        reply = self._reply(pull, thread.comments[0].id, str(body), token.user)
        return {"comment": {"id": f"PRRC_{reply.id}", "fullDatabaseId": str(reply.id), "databaseId": reply.id,
                            "body": reply.body, "author": {"login": reply.user}}}  # fmt: skip


# (a field the document names, the top-level field of the answer, the operation)
_GRAPHQL_FIELDS: list[tuple[str, str, Callable[[FakeGitHub, Token, dict[str, Any], str], Any]]] = [
    ("unresolveReviewThread", "unresolveReviewThread", FakeGitHub._gql_unresolve),
    ("resolveReviewThread", "resolveReviewThread", FakeGitHub._gql_resolve),
    ("addPullRequestReviewThreadReply", "addPullRequestReviewThreadReply", FakeGitHub._gql_reply),
    ("reviewThreads", "repository", FakeGitHub._gql_threads),
]
_MUTATIONS: dict[str, Callable[[FakeGitHub, Token, dict[str, Any], str], Any]] = {
    "unresolveReviewThread": FakeGitHub._gql_unresolve,
    "resolveReviewThread": FakeGitHub._gql_resolve,
    "addPullRequestReviewThreadReply": FakeGitHub._gql_reply,
}
_OPERATION = re.compile(r"\s*mutation\b\s*(?:\w+)?\s*(?:\((?P<declared>[^)]*)\))?\s*\{")
_FIELD = re.compile(r"[\s,]*(?:(?P<alias>\w+)\s*:\s*)?(?P<name>\w+)\s*")
_ARGUMENT = re.compile(r"(?P<key>\w+)\s*:\s*(?P<value>\$\w+|\{|[^\s,}{)]+|\"(?:[^\"\\]|\\.)*\")")


def _closing(text: str, start: int, opening: str, closing: str) -> int:
    """The index just past the bracket that closes ``text[start]`` (strings skipped)."""
    depth, index, in_string = 0, start, False
    while index < len(text):
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    raise _GraphQLError("PARSE_ERROR", f"Parse error: expected {closing!r} before the end of the document")


def _parse_mutation(query: str, variables: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(response key, field, arguments)`` per top-level field, the arguments' values taken from ``variables``."""
    head = _OPERATION.match(query)
    if head is None:
        raise _GraphQLError("PARSE_ERROR", "Parse error: a mutation document must open its selection with '{'")
    declared = dict(re.findall(r"\$(\w+)\s*:\s*([\w!\[\]]+)", head["declared"] or ""))
    for name, kind in declared.items():
        if kind.endswith("!") and variables.get(name) is None:
            raise _GraphQLError("INVALID_VARIABLES", f"Variable ${name} of type {kind} was provided invalid value")
    end = _closing(query, head.end() - 1, "{", "}") - 1
    fields: list[tuple[str, str, dict[str, Any]]] = []
    index = head.end()
    while True:
        match = _FIELD.match(query, index)
        if match is None or match.end() > end:
            if query[index:end].strip(" \t\r\n,"):
                raise _GraphQLError("PARSE_ERROR", f"Parse error on {query[index:end].strip()[:30]!r}")
            return fields
        key, name = match["alias"] or match["name"], match["name"]
        if name not in _MUTATIONS:
            raise _GraphQLError("undefinedField", f"Field '{name}' doesn't exist on type 'Mutation'")
        if any(key == k for k, _, _ in fields):
            raise _GraphQLError("fieldConflict", f"Field '{key}' is selected twice in one document")
        index = match.end()
        arguments: dict[str, Any] = {}
        if query.startswith("(", index):
            close = _closing(query, index, "(", ")")
            for argument in _ARGUMENT.finditer(query, index + 1, close - 1):
                value = argument["value"]
                if value == "{":
                    continue
                if not value.startswith("$"):
                    raise _GraphQLError(
                        "INVALID_VARIABLES", f"{argument['key']}: {value[:20]} is written into the document "
                        "(send variables, not literals)"
                    )  # fmt: skip
                if value[1:] not in declared:
                    raise _GraphQLError("variableNotDefined", f"Variable {value} is used but not declared")
                arguments[argument["key"]] = variables.get(value[1:])
            index = close
        rest = query[index:end].lstrip()
        if rest.startswith("{"):  # the selection set
            index = _closing(query, end - len(rest), "{", "}")
        fields.append((key, name, arguments))


_REPO = r"/repos/(?P<repo>[^/]+/[^/]+)"
_PULL = _REPO + r"/pulls/(?P<n>\d+)"
_ROUTES: list[tuple[str, re.Pattern[str], Callable[[FakeGitHub, _Call], _Reply]]] = [
    (verb, re.compile(pattern), handler)
    for verb, pattern, handler in (
        ("GET", r"/user", FakeGitHub._get_user),
        ("GET", _REPO, FakeGitHub._get_repo),
        ("GET", _PULL, FakeGitHub._get_pull),
        ("GET", _PULL + "/files", FakeGitHub._list_files),
        ("GET", _REPO + r"/collaborators/(?P<login>[^/]+)/permission", FakeGitHub._get_permission),
        ("GET", _REPO + r"/contents(?:/(?P<path>.*))?", FakeGitHub._get_contents),
        ("GET", _REPO + r"/commits/(?P<ref>[^/]+)/check-runs", FakeGitHub._list_check_runs),
        ("GET", _REPO + r"/compare/(?P<basehead>[^/]+)", FakeGitHub._compare),
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
    )
]


# -- pure helpers -------------------------------------------------------------------------------
def _pull_file(path: str, old: str | None, new: str | None) -> PullFile:
    """Diff ``old`` against ``new`` the way GitHub shows it: hunks only, three lines of context."""
    diff = list(difflib.unified_diff((old or "").splitlines(), (new or "").splitlines(), lineterm="", n=3))[2:]
    status = "added" if old is None else "removed" if new is None else "modified"
    hunks: list[tuple[set[int], set[int]]] = []
    old_no = new_no = 0
    for line in diff:
        header = re.match(r"@@ -(\d+)(?:,\d+)? \+(\d+)", line)
        if header:
            old_no, new_no = int(header[1]), int(header[2])
            hunks.append((set(), set()))
            continue
        if line[:1] in (" ", "-"):
            hunks[-1][0].add(old_no)
            old_no += 1
        if line[:1] in (" ", "+"):
            hunks[-1][1].add(new_no)
            new_no += 1
    return PullFile(path, status, old, new, "\n".join(diff), hunks)


def _ancestry(repo: Repo, sha: str) -> list[str]:
    """``sha`` and its ancestors, nearest first (one parent each: the fake has no merge commits)."""
    line: list[str] = []
    current: str | None = sha
    while current is not None and current not in line:
        line.append(current)
        current = repo.parents.get(current)
    return line


def _compare_files(old: Mapping[str, str], new: Mapping[str, str]) -> list[dict[str, Any]]:
    """The comparison's ``files``, by path; a file removed and one added with the same text: renamed."""
    removed = {p: t for p, t in old.items() if p not in new}
    items: dict[str, dict[str, Any]] = {}
    for path in sorted(set(old) | set(new)):
        before, after = old.get(path), new.get(path)
        if before == after or path in removed:
            continue
        source = next((p for p, t in removed.items() if before is None and t == after), None)
        if source is not None:
            del removed[source]
            sha = hashlib.sha1((after or "").encode()).hexdigest()
            items[path] = {"sha": sha, "filename": path, "previous_filename": source, "status": "renamed",
                           "additions": 0, "deletions": 0, "changes": 0}  # fmt: skip
        else:
            items[path] = _file_json(_pull_file(path, before, after))
    items |= {path: _file_json(_pull_file(path, text, None)) for path, text in removed.items()}
    return [items[path] for path in sorted(items)]


def _comment_error(files: dict[str, PullFile], draft: Any) -> str | None:
    """Why GitHub would refuse this review comment, or None when it may be posted."""
    if not isinstance(draft, dict) or not draft.get("path") or not draft.get("body") or not draft.get("line"):
        return "a review comment needs path, body and line (the fake does not accept position)"
    file = files.get(draft["path"])
    if file is None:
        return "Path could not be resolved"
    side: Side = draft.get("side") or "RIGHT"
    hunk = file.hunk_of(side, int(draft["line"]))
    if hunk is None:
        return OFF_DIFF
    start = draft.get("start_line")
    if start is not None:
        start_side = draft.get("start_side") or side
        start_hunk = file.hunk_of(start_side, int(start))
        if start_hunk is None:
            return "Pull request review thread start line must be part of the diff"
        # Unconfirmed on github.com; the fake asks for one hunk and, on one side, start < line.
        if start_hunk != hunk or (start_side == side and int(start) >= int(draft["line"])):
            return "Pull request review thread start line must precede the end line in the same hunk"
    return None


def _file_json(f: PullFile) -> dict[str, Any]:
    adds = sum(1 for line in f.patch.splitlines() if line.startswith("+"))
    dels = sum(1 for line in f.patch.splitlines() if line.startswith("-"))
    sha = hashlib.sha1((f.new_text or "").encode()).hexdigest()
    return {"sha": sha, "filename": f.filename, "status": f.status,
            "additions": adds, "deletions": dels, "changes": adds + dels, "patch": f.patch}  # fmt: skip


def _check_run_json(run: CheckRun) -> dict[str, Any]:
    output = {"title": run.title, "summary": run.summary, "text": run.text, "annotations_count": len(run.annotations)}
    return {"id": run.id, "name": run.name, "head_sha": run.head_sha, "status": run.status,
            "conclusion": run.conclusion, "output": output, "details_url": run.details_url,
            "external_id": run.external_id}  # fmt: skip


def _required_text(call: _Call, name: str) -> str:
    value = call.field(name)
    if not isinstance(value, str) or not value:
        raise _unprocessable(f"{name} can't be blank")
    return value


def _variable(variables: dict[str, Any], *names: str) -> Any:
    """A GraphQL variable (any of ``names``, also inside an ``input`` object); missing: the client inlined it."""
    nested = variables.get("input")
    source: dict[str, Any] = nested if isinstance(nested, dict) else variables
    for name in names:
        if name in source:
            return source[name]
    raise _GraphQLError("INVALID_VARIABLES", f"Variable ${names[0]} was not provided (send variables, not literals)")


def _bearer(header: str) -> str:
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() in ("bearer", "token") else ""


def _fault_reply(fault: _Fault) -> _Reply:
    if fault.status == 0:
        return _Reply(0, drop=True)
    headers: dict[str, str] = {}
    if fault.retry_after is not None:
        headers["retry-after"] = str(int(fault.retry_after))
    if fault.reset_after is not None:
        headers["x-ratelimit-remaining"] = "0"
        headers["x-ratelimit-reset"] = str(int(time.time() + fault.reset_after))
    if fault.status == 502:
        return _Reply(502, "<html><body><h1>Unicorn!</h1> This page is taking too long to load.</body></html>", headers)
    if fault.status >= 500:
        return _Reply(fault.status, {"message": "Server Error"}, headers)
    if fault.status == 403 and fault.reset_after is None:
        message = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
    else:
        message = "API rate limit exceeded for installation."
    return _Reply(fault.status, {"message": message, "documentation_url": _DOCS}, headers)


def _rate_headers(path: str) -> dict[str, str]:
    resource = "graphql" if path == "/graphql" else "core"
    reset = str(int(time.time()) + 3600)
    return {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999", "x-ratelimit-resource": resource,
            "x-ratelimit-reset": reset, "x-github-request-id": "FAKE:0000"}  # fmt: skip


def _make_handler(server: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def _handle(self) -> None:
            raw = self.read_body()
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
            self.send_header("Content-Type", f"{kind}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle

    return Handler
