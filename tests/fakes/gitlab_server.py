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
is a CI job token of alice's pipeline: it reads but may not write (403).

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

Line codes are computed here from the hunk text the way GitLab's ``Diff::Parser`` does
(an added line carries the running old-side counter), not with codejury's parser, so a
parser bug on our side cannot hide behind the fake.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from codejury.change.diffparse import parse_diff
from tests.fakes.loopback import LoopbackServer, QuietHandler

GUEST, REPORTER, DEVELOPER, MAINTAINER = 10, 20, 30, 40
_LINE_CODE_ERROR = '400 Bad request - Note {:line_code=>["can\'t be blank", "must be a valid line code"]}'
_QUICK_ACTIONS = frozenset({
    "approve", "unapprove", "merge", "close", "reopen", "assign", "unassign", "assign_reviewer", "reviewer",
    "request_review", "unassign_reviewer", "label", "unlabel", "relabel", "title", "draft", "ready", "wip",
    "lock", "unlock", "milestone", "remilestone", "due", "estimate", "spend", "rebase", "submit_review",
    "award", "react", "todo", "done", "subscribe", "unsubscribe", "target_branch", "copy_metadata", "cc",
    "duplicate", "confidential",
})  # fmt: skip
_COMMAND = re.compile(r"^/([a-z_]+)(?:[ \t]+(.*))?$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_EPOCH = datetime(2026, 11, 22, 10, 0, 0, tzinfo=UTC)

FileSpec = dict[str, tuple[str | None, str | None]]


def gitlab_line_code(path: str, old_pos: int, new_pos: int) -> str:
    """GitLab's ``Diff::LineCode``: sha1 of the file's path, then old and new position."""
    return f"{hashlib.sha1(path.encode(), usedforsecurity=False).hexdigest()}_{old_pos}_{new_pos}"


def _sha(seed: str) -> str:
    return hashlib.sha1(seed.encode(), usedforsecurity=False).hexdigest()


# -- state -------------------------------------------------------------------------------------
@dataclass
class FakeUser:
    id: int
    username: str
    name: str
    bot: bool = False

    def json(self) -> dict[str, Any]:
        return {"id": self.id, "username": self.username, "name": self.name, "state": "active",
                "bot": self.bot, "avatar_url": None, "web_url": f"http://gitlab.test/{self.username}"}  # fmt: skip


@dataclass
class _DiffFile:
    """One file of an MR version: GitLab's diff JSON plus the line codes its hunks show."""

    old_path: str
    new_path: str
    diff: str
    new_file: bool = False
    deleted_file: bool = False
    renamed_file: bool = False
    # (old_line, new_line) as GitLab reports a line (None on the side it is absent) -> line code
    lines: dict[tuple[int | None, int | None], str] = field(default_factory=dict)
    order: dict[str, int] = field(default_factory=dict)  # line code -> index in the diff

    def __post_init__(self) -> None:
        old = new = 1
        for text in self.diff.split("\n"):
            if match := _HUNK.match(text):
                old, new = int(match[1]), int(match[2])
                continue
            if not text or text.startswith("\\"):
                continue
            code = gitlab_line_code(self.new_path, old, new)
            key = (None, new) if text[0] == "+" else (old, None) if text[0] == "-" else (old, new)
            self.lines[key] = code
            self.order[code] = len(self.order)
            old += text[0] != "+"
            new += text[0] != "-"

    def json(self) -> dict[str, Any]:
        return {"old_path": self.old_path, "new_path": self.new_path, "a_mode": "100644", "b_mode": "100644",
                "new_file": self.new_file, "renamed_file": self.renamed_file, "deleted_file": self.deleted_file,
                "generated_file": False, "diff": self.diff}  # fmt: skip


@dataclass
class _Version:
    id: int
    base_sha: str
    start_sha: str
    head_sha: str
    created_at: str
    files: list[_DiffFile]

    def refs(self) -> dict[str, str]:
        return {"base_sha": self.base_sha, "head_sha": self.head_sha, "start_sha": self.start_sha}


@dataclass
class _Note:
    id: int
    body: str
    author: FakeUser
    discussion_id: str
    created_at: str
    system: bool = False
    position: dict[str, Any] | None = None
    updated_at: str = ""


@dataclass
class _Discussion:
    id: str
    individual_note: bool
    resolvable: bool
    notes: list[_Note] = field(default_factory=list)
    resolved_by: FakeUser | None = None
    resolved_at: str | None = None


@dataclass
class _MergeRequest:
    id: int
    iid: int
    project_id: int
    title: str
    description: str
    author: FakeUser
    source_branch: str
    target_branch: str
    created_at: str
    versions: list[_Version]  # newest first, like the versions endpoint
    state: str = "opened"
    labels: list[str] = field(default_factory=list)
    discussions: dict[str, _Discussion] = field(default_factory=dict)
    approved_by: list[FakeUser] = field(default_factory=list)

    def note(self, note_id: int) -> _Note | None:
        return next((n for d in self.discussions.values() for n in d.notes if n.id == note_id), None)


@dataclass
class _Project:
    id: int
    path: str
    members: dict[int, int] = field(default_factory=dict)  # user id -> access level
    mrs: dict[int, _MergeRequest] = field(default_factory=dict)
    commits: dict[str, dict[str, str]] = field(default_factory=dict)  # sha -> {path: text}, the whole tree


@dataclass(frozen=True)
class RecordedRequest:
    """One API call as the server saw it; ``user`` is the token's username, never the token."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    user: str | None
    status: int


@dataclass(frozen=True)
class QuickAction:
    """A quick action GitLab would have run: ``/command args`` written by ``user``."""

    project_id: int
    iid: int
    user: str
    command: str
    args: str


@dataclass
class _Fault:
    remaining: int
    status: int
    retry_after: float | None
    method: str | None
    path: re.Pattern[str] | None


class _Refusal(Exception):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(status)
        self.status, self.body = status, body


def _refuse(status: int, message: str | None = None, *, error: str | None = None) -> _Refusal:
    default = {400: "400 Bad request", 401: "401 Unauthorized", 403: "403 Forbidden", 404: "404 Not found"}
    return _Refusal(status, {"error": error} if error else {"message": message or default.get(status, str(status))})


_Answer = tuple[int, Any, dict[str, str]]  # status, JSON body (or plain text), extra headers


@dataclass
class _Call:
    method: str
    path: str
    params: dict[str, Any]
    json_body: bool
    user: FakeUser
    args: dict[str, str]


class FakeGitLab(LoopbackServer):
    """Stateful GitLab REST v4 on a free loopback port; see the module docstring."""

    thread_name = "fake-gitlab"

    BOT_TOKEN = "glpat-fake-bot"
    AUTHOR_TOKEN = "glpat-fake-alice"
    MAINTAINER_TOKEN = "glpat-fake-bob"
    REPORTER_TOKEN = "glpat-fake-rita"
    JOB_TOKEN = "glcbt-fake-job"
    BOT = "project_1_bot"

    def __init__(self, *, latency_s: float = 0.0) -> None:
        self.latency_s = latency_s
        self._lock = threading.RLock()
        self._users: dict[str, FakeUser] = {}
        self._tokens: dict[str, tuple[FakeUser, bool]] = {}
        self._projects: dict[int, _Project] = {}
        self._faults: list[_Fault] = []
        self._requests: list[RecordedRequest] = []
        self._quick_actions: list[QuickAction] = []
        self._ticks = 0
        self._ids = 1000
        self.add_project(1, "acme/widgets")
        for name, level, bot, token in (
            ("alice", DEVELOPER, False, self.AUTHOR_TOKEN),
            ("bob", MAINTAINER, False, self.MAINTAINER_TOKEN),
            ("rita", REPORTER, False, self.REPORTER_TOKEN),
            (self.BOT, DEVELOPER, True, self.BOT_TOKEN),
        ):
            self.add_user(name, name="codejury" if bot else None, bot=bot, access={1: level})
            self.add_token(token, name)
        self.add_token(self.JOB_TOKEN, "alice", job=True)
        super().__init__(_make_handler(self))

    @property
    def url(self) -> str:
        return self.origin

    @property
    def api_url(self) -> str:
        return self.url + "/api/v4"

    # -- building the world -------------------------------------------------------------------
    def add_project(self, project_id: int, path: str) -> None:
        with self._lock:
            self._projects[project_id] = _Project(project_id, path)

    def add_user(self, username: str, *, name: str | None = None, bot: bool = False,
                 access: dict[int, int] | None = None) -> FakeUser:  # fmt: skip
        """A user, member of each project in ``access`` (project id -> access level)."""
        with self._lock:
            user = FakeUser(len(self._users) + 1, username, name or username.title(), bot)
            self._users[username] = user
            for project_id, level in (access or {}).items():
                self._projects[project_id].members[user.id] = level
            return user

    def set_access(self, project_id: int, username: str, level: int | None) -> None:
        """Change a member's access level (None removes the membership)."""
        with self._lock:
            members = self._projects[project_id].members
            user_id = self._users[username].id
            if level is None:
                members.pop(user_id, None)
            else:
                members[user_id] = level

    def add_token(self, token: str, username: str, *, job: bool = False) -> None:
        """A token acting as ``username``; ``job=True`` makes it a read-only CI job token."""
        with self._lock:
            self._tokens[token] = (self._users[username], job)

    def add_mr(self, project_id: int, iid: int, *, files: FileSpec | None = None, diff: str | None = None,
               author: str = "alice", title: str = "Add a feature", description: str = "",
               source_branch: str = "feature", target_branch: str = "main",
               labels: list[str] | None = None,
               base_files: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
        """An open MR whose diff is ``files`` ({path: (old text, new text)}, None = absent) or ``diff``.

        The base commit's tree is ``base_files`` plus the old side of ``files``; the head's is
        that tree with ``files`` applied (a file given by ``diff`` holds its diff text there).
        """
        with self._lock:
            base = _sha(f"base-{project_id}-{iid}")
            version = self._version(base, _sha(f"head-{project_id}-{iid}-0"), files, diff)
            mr = _MergeRequest(self._next_id(), iid, project_id, title, description, self._users[author],
                               source_branch, target_branch, self._now(), [version],
                               labels=list(labels or []))  # fmt: skip
            project = self._projects[project_id]
            project.mrs[iid] = mr
            tree = {**(base_files or {}), **{p: old for p, (old, _) in (files or {}).items() if old is not None}}
            project.commits[base] = tree
            project.commits[version.head_sha] = _apply(tree, files, version)
            return self._mr_json(mr)

    def set_repo_files(self, project_id: int, sha: str, files: dict[str, str]) -> None:
        """Set the whole tree of commit ``sha`` ({path: text}), as the repository files API reads it."""
        with self._lock:
            self._projects[project_id].commits[sha] = dict(files)

    def drop_commit(self, project_id: int, sha: str) -> None:
        """Forget commit ``sha`` (a force-push that GitLab garbage-collected): compare and files answer 404."""
        with self._lock:
            self._projects[project_id].commits.pop(sha, None)

    def push(self, project_id: int, iid: int, *, files: FileSpec | None = None, diff: str | None = None,
             reset_approvals: bool = True) -> dict[str, str]:  # fmt: skip
        """A new head: a new version whose diff (base to new head) is ``files`` or ``diff``; returns its diff_refs."""
        with self._lock:
            project = self._projects[project_id]
            mr = project.mrs[iid]
            current = mr.versions[0]
            head = _sha(f"head-{project_id}-{iid}-{len(mr.versions)}")
            mr.versions.insert(0, self._version(current.base_sha, head, files, diff))
            project.commits[head] = _apply(project.commits.get(current.base_sha, {}), files, mr.versions[0])
            if reset_approvals:
                mr.approved_by.clear()
            self._system_note(mr, f"added 1 commit\n\n* {head[:8]} - new commit")
            return mr.versions[0].refs()

    def add_note(self, project_id: int, iid: int, body: str, *, author: str = "bob", system: bool = False) -> int:
        """A top-level comment by ``author`` (no quick actions run); returns the note id."""
        with self._lock:
            mr = self._projects[project_id].mrs[iid]
            return self._new_discussion(mr, self._users[author], body, None, individual=True, system=system).notes[0].id

    def add_discussion(self, project_id: int, iid: int, body: str, *, author: str = "bob", path: str | None = None,
                       new_line: int | None = None, old_line: int | None = None,
                       resolved: bool = False) -> str:  # fmt: skip
        """A thread by ``author``, on a diff line when ``path`` is given; returns the discussion id."""
        with self._lock:
            mr = self._projects[project_id].mrs[iid]
            position = None
            if path is not None:
                position = {"position_type": "text", **mr.versions[0].refs(), "old_path": path, "new_path": path,
                            "old_line": old_line, "new_line": new_line}  # fmt: skip
            discussion = self._new_discussion(mr, self._users[author], body, position, individual=False)
            if resolved:
                discussion.resolved_by, discussion.resolved_at = self._users[author], self._now()
            return discussion.id

    def add_reply(self, project_id: int, iid: int, discussion_id: str, body: str, *, author: str = "bob") -> int:
        with self._lock:
            mr = self._projects[project_id].mrs[iid]
            return self._reply(mr, mr.discussions[discussion_id], self._users[author], body).id

    def approve_as(self, project_id: int, iid: int, username: str) -> None:
        with self._lock:
            self._projects[project_id].mrs[iid].approved_by.append(self._users[username])

    # -- fault injection ----------------------------------------------------------------------
    def fail_next(self, n: int = 1, status: int = 503, *, retry_after: float | None = None,
                  method: str | None = None, path: str | None = None) -> None:  # fmt: skip
        """Answer the next ``n`` matching requests with ``status`` (``path``: a regex searched in the path)."""
        with self._lock:
            pattern = re.compile(path) if path else None
            self._faults.append(_Fault(n, status, retry_after, method.upper() if method else None, pattern))

    # -- inspection ---------------------------------------------------------------------------
    def user(self, username: str) -> FakeUser:
        with self._lock:
            return self._users[username]

    def mr(self, project_id: int, iid: int) -> dict[str, Any]:
        with self._lock:
            return self._mr_json(self._projects[project_id].mrs[iid])

    def diff_refs(self, project_id: int, iid: int) -> dict[str, str]:
        with self._lock:
            return self._projects[project_id].mrs[iid].versions[0].refs()

    def discussions(self, project_id: int, iid: int) -> list[dict[str, Any]]:
        with self._lock:
            mr = self._projects[project_id].mrs[iid]
            return [self._discussion_json(mr, d) for d in mr.discussions.values()]

    def notes(self, project_id: int, iid: int, *, system: bool = True) -> list[dict[str, Any]]:
        """Every note, oldest first (``system=False`` leaves out GitLab's own notes)."""
        with self._lock:
            mr = self._projects[project_id].mrs[iid]
            notes = sorted((n for d in mr.discussions.values() for n in d.notes), key=lambda n: n.id)
            return [self._note_json(mr, n) for n in notes if system or not n.system]

    def approvals(self, project_id: int, iid: int) -> list[str]:
        with self._lock:
            return [u.username for u in self._projects[project_id].mrs[iid].approved_by]

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def api_calls(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def quick_actions_executed(self) -> list[QuickAction]:
        with self._lock:
            return list(self._quick_actions)

    # -- helpers over state (callers hold the lock) -------------------------------------------
    def _now(self) -> str:
        self._ticks += 1
        return (_EPOCH + timedelta(seconds=self._ticks)).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def _version(self, base: str, head: str, files: FileSpec | None, diff: str | None) -> _Version:
        if (files is None) == (diff is None):
            raise ValueError("give exactly one of files= or diff=")
        return _Version(self._next_id(), base, base, head, self._now(), _files_from(files) if files else _split(diff))

    def _new_discussion(self, mr: _MergeRequest, author: FakeUser, body: str, position: dict[str, Any] | None,
                        *, individual: bool, system: bool = False) -> _Discussion:  # fmt: skip
        discussion = _Discussion(_sha(f"discussion-{self._next_id()}"), individual, not individual and not system)
        mr.discussions[discussion.id] = discussion
        now = self._now()
        discussion.notes.append(_Note(self._next_id(), body, author, discussion.id, now, system, position, now))
        return discussion

    def _reply(self, mr: _MergeRequest, discussion: _Discussion, author: FakeUser, body: str) -> _Note:
        if discussion.individual_note:  # replying turns a comment into a thread, as in GitLab
            discussion.individual_note, discussion.resolvable = False, True
        now = self._now()
        note = _Note(self._next_id(), body, author, discussion.id, now, updated_at=now)
        discussion.notes.append(note)
        return note

    def _system_note(self, mr: _MergeRequest, body: str, author: FakeUser | None = None) -> None:
        self._new_discussion(mr, author or mr.author, body, None, individual=True, system=True)

    def _mr_json(self, mr: _MergeRequest) -> dict[str, Any]:
        path = self._projects[mr.project_id].path
        head = mr.versions[0]
        user_notes = sum(1 for d in mr.discussions.values() for n in d.notes if not n.system)
        return {"id": mr.id, "iid": mr.iid, "project_id": mr.project_id, "title": mr.title,
                "description": mr.description, "state": mr.state, "created_at": mr.created_at,
                "updated_at": head.created_at, "target_branch": mr.target_branch, "source_branch": mr.source_branch,
                "source_project_id": mr.project_id, "target_project_id": mr.project_id,
                "author": mr.author.json(), "assignees": [], "reviewers": [], "labels": list(mr.labels),
                "draft": mr.title.startswith("Draft:"), "work_in_progress": mr.title.startswith("Draft:"),
                "merge_status": "can_be_merged", "detailed_merge_status": "mergeable", "sha": head.head_sha,
                "user_notes_count": user_notes, "diff_refs": head.refs(),
                "references": {"short": f"!{mr.iid}", "full": f"{path}!{mr.iid}"},
                "web_url": f"{self.url}/{path}/-/merge_requests/{mr.iid}"}  # fmt: skip

    def _note_json(self, mr: _MergeRequest, note: _Note) -> dict[str, Any]:
        discussion = mr.discussions[note.discussion_id]
        kind = None if discussion.individual_note else "DiffNote" if note.position else "DiscussionNote"
        resolved = discussion.resolvable and discussion.resolved_by is not None
        out = {"id": note.id, "type": kind, "body": note.body, "attachment": None, "author": note.author.json(),
               "created_at": note.created_at, "updated_at": note.updated_at, "system": note.system,
               "noteable_id": mr.id, "noteable_type": "MergeRequest", "noteable_iid": mr.iid,
               "project_id": mr.project_id, "resolvable": discussion.resolvable, "resolved": resolved,
               "resolved_by": discussion.resolved_by.json() if resolved and discussion.resolved_by else None,
               "resolved_at": discussion.resolved_at if resolved else None, "confidential": False,
               "internal": False}  # fmt: skip
        if note.position is not None:
            out["position"] = dict(note.position)
        return out

    def _discussion_json(self, mr: _MergeRequest, discussion: _Discussion) -> dict[str, Any]:
        notes = [self._note_json(mr, n) for n in discussion.notes]
        return {"id": discussion.id, "individual_note": discussion.individual_note, "notes": notes}

    # -- the HTTP side (called by the handler) -------------------------------------------------
    def _serve(self, method: str, raw_path: str, headers: dict[str, str], raw: bytes) -> _Answer:
        if self.latency_s:
            time.sleep(self.latency_s)
        parts = urlsplit(raw_path)
        query = dict(parse_qsl(parts.query))
        for secret in ("private_token", "job_token", "access_token"):
            query.pop(secret, None)
        body, json_body = _parse_body(headers.get("content-type", ""), raw)
        with self._lock:
            user, job = self._tokens.get(_token(headers) or "", (None, False))
            status, payload, out_headers = self._answer(method, parts.path, query, body, json_body, user, job)
            self._requests.append(RecordedRequest(method, parts.path, query, body, user.username if user else None,
                                                  status))  # fmt: skip
        return status, payload, out_headers

    def _answer(self, method: str, path: str, query: dict[str, str], body: Any, json_body: bool,
                user: FakeUser | None, job: bool) -> _Answer:  # fmt: skip
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
        for route_method, pattern, handler in _ROUTES:
            match = pattern.fullmatch(api_path)
            if match is None or route_method != method:
                continue
            if job and method != "GET":
                return 403, {"message": "403 Forbidden"}, {}
            params = {**query, **(body if isinstance(body, dict) else {})}
            call = _Call(method, api_path, params, json_body, user, match.groupdict())
            try:
                result = handler(self, call)
            except _Refusal as refusal:
                return refusal.status, refusal.body, {}
            return result if len(result) == 3 else (*result, {})
        return 404, {"error": "404 Not Found"}, {}

    def _project(self, call: _Call, level: int = REPORTER) -> _Project:
        ref = unquote(call.args["project"])
        project = self._projects.get(int(ref)) if ref.isdigit() else next(
            (p for p in self._projects.values() if p.path == ref), None)  # fmt: skip
        if project is None or call.user.id not in project.members:
            raise _refuse(404, "404 Project Not Found")
        if project.members[call.user.id] < level:
            raise _refuse(403)
        return project

    def _mr(self, call: _Call, level: int = REPORTER) -> tuple[_Project, _MergeRequest]:
        project = self._project(call, level)
        mr = project.mrs.get(int(call.args["iid"]))
        if mr is None:
            raise _refuse(404, "404 Not found")
        return project, mr

    def _page(self, call: _Call, items: list[Any]) -> _Answer:
        """One page of ``items`` with GitLab's pagination headers (20 a page, at most 100)."""
        per_page = _int(call.params.get("per_page"), 20)
        per_page = 20 if per_page < 1 else min(per_page, 100)
        page = max(1, _int(call.params.get("page"), 1))
        pages = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        base = {k: str(v) for k, v in call.params.items() if k != "page"}

        def link(n: int) -> str:
            return f"{self.api_url}{call.path}?{urlencode({**base, 'page': n, 'per_page': per_page})}"

        rels = [(page + 1, "next")] if page < pages else []
        rels += [(page - 1, "prev")] if page > 1 else []
        rels += [(1, "first"), (pages, "last")]
        headers = {"X-Page": str(page), "X-Per-Page": str(per_page), "X-Total": str(len(items)),
                   "X-Total-Pages": str(pages), "X-Next-Page": str(page + 1) if page < pages else "",
                   "X-Prev-Page": str(page - 1) if page > 1 else "",
                   "Link": ", ".join(f'<{link(n)}>; rel="{rel}"' for n, rel in rels)}  # fmt: skip
        return 200, chunk, headers

    def _run_quick_actions(self, mr: _MergeRequest, user: FakeUser, body: str) -> tuple[str, list[tuple[str, str]]]:
        """Run the quick actions in ``body`` as ``user``; return the text left and the commands run."""
        text, commands = _extract_commands(body)
        level = self._projects[mr.project_id].members.get(user.id, 0)
        for command, args in commands:
            self._quick_actions.append(QuickAction(mr.project_id, mr.iid, user.username, command, args))
            if command == "approve" and user not in mr.approved_by and user != mr.author and level >= DEVELOPER:
                mr.approved_by.append(user)
                self._system_note(mr, "approved this merge request", user)
            elif command == "unapprove" and user in mr.approved_by:
                mr.approved_by.remove(user)
            elif command in ("close", "reopen", "merge") and level >= DEVELOPER:
                mr.state = {"close": "closed", "reopen": "opened", "merge": "merged"}[command]
                self._system_note(mr, mr.state, user)
            elif command in ("label", "unlabel"):
                for label in re.findall(r"~(\S+)", args):
                    if command == "label" and label not in mr.labels:
                        mr.labels.append(label)
                    elif command == "unlabel" and label in mr.labels:
                        mr.labels.remove(label)
            elif command == "title" and args:
                mr.title = args
        return text, commands


# -- endpoints: (fake, call) -> (status, body[, headers]) ---------------------------------------
def _get_user(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    return 200, call.user.json()


def _get_project(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    project = gl._project(call, GUEST)
    return 200, {"id": project.id, "path_with_namespace": project.path, "name": project.path.rsplit("/", 1)[-1],
                 "default_branch": "main", "web_url": f"{gl.url}/{project.path}"}  # fmt: skip


def _get_member(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    project = gl._project(call, GUEST)
    user = next((u for u in gl._users.values() if u.id == int(call.args["user_id"])), None)
    if user is None or user.id not in project.members:
        raise _refuse(404, "404 Not found")
    return 200, {**user.json(), "access_level": project.members[user.id]}


def _get_mr(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    return 200, gl._mr_json(gl._mr(call)[1])


def _get_versions(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    return 200, [{"id": v.id, "head_commit_sha": v.head_sha, "base_commit_sha": v.base_sha,
                  "start_commit_sha": v.start_sha, "created_at": v.created_at, "merge_request_id": mr.id,
                  "state": "collected", "real_size": str(len(v.files))} for v in mr.versions]  # fmt: skip


def _get_diffs(gl: FakeGitLab, call: _Call) -> _Answer:
    return gl._page(call, [f.json() for f in gl._mr(call)[1].versions[0].files])


def _get_changes(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    return 200, {**gl._mr_json(mr), "changes": [f.json() for f in mr.versions[0].files], "overflow": False}


def _get_notes(gl: FakeGitLab, call: _Call) -> _Answer:
    mr = gl._mr(call)[1]
    notes = [n for d in mr.discussions.values() for n in d.notes]
    key = "updated_at" if call.params.get("order_by") == "updated_at" else "created_at"
    notes.sort(key=lambda n: (getattr(n, key), n.id), reverse=call.params.get("sort", "desc") != "asc")
    return gl._page(call, [gl._note_json(mr, n) for n in notes])


def _body(call: _Call) -> str:
    body = call.params.get("body")
    if not isinstance(body, str) or not body:
        raise _refuse(400, error="body is missing")
    return body


def _commands_only(commands: list[tuple[str, str]]) -> tuple[int, Any]:
    changes = {command: args or True for command, args in commands}
    return 202, {"commands_changes": changes, "summary": [f"Ran /{c}." for c, _ in commands]}


def _post_note(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    text, commands = gl._run_quick_actions(mr, call.user, _body(call))
    if commands and not text:
        return _commands_only(commands)
    return 201, gl._note_json(mr, gl._new_discussion(mr, call.user, text, None, individual=True).notes[0])


def _put_note(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    note = mr.note(int(call.args["note_id"]))
    if note is None or note.system:
        raise _refuse(404, "404 Note Not Found")
    if note.author != call.user:
        raise _refuse(403)
    text, commands = gl._run_quick_actions(mr, call.user, _body(call))
    if commands and not text:  # GitLab deletes a note edited down to commands only
        mr.discussions[note.discussion_id].notes.remove(note)
        if not mr.discussions[note.discussion_id].notes:
            del mr.discussions[note.discussion_id]
        return _commands_only(commands)
    note.body, note.updated_at = text, gl._now()
    return 200, gl._note_json(mr, note)


def _get_discussions(gl: FakeGitLab, call: _Call) -> _Answer:
    mr = gl._mr(call)[1]
    return gl._page(call, [gl._discussion_json(mr, d) for d in mr.discussions.values()])


def _post_discussion(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    body = _body(call)
    # Only a JSON body carries a nested position; form fields like position[new_line] are dropped.
    position = _check_position(mr, call.params.get("position")) if call.json_body else None
    text, commands = gl._run_quick_actions(mr, call.user, body)
    if commands and not text:
        return _commands_only(commands)
    return 201, gl._discussion_json(mr, gl._new_discussion(mr, call.user, text, position, individual=False))


def _put_discussion(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    project, mr = gl._mr(call)
    discussion = mr.discussions.get(call.args["discussion_id"])
    if discussion is None:
        raise _refuse(404, "404 Discussion Not Found")
    resolved = str(call.params.get("resolved", "")).lower()
    if resolved not in ("true", "false"):
        raise _refuse(400, error="resolved is missing")
    if not discussion.resolvable or (project.members[call.user.id] < DEVELOPER and call.user != mr.author):
        raise _refuse(403)
    if resolved == "true":
        discussion.resolved_by, discussion.resolved_at = call.user, gl._now()
    else:
        discussion.resolved_by = discussion.resolved_at = None
    return 200, gl._discussion_json(mr, discussion)


def _post_reply(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    discussion = mr.discussions.get(call.args["discussion_id"])
    if discussion is None:
        raise _refuse(404, "404 Discussion Not Found")
    text, commands = gl._run_quick_actions(mr, call.user, _body(call))
    if commands and not text:
        return _commands_only(commands)
    return 201, gl._note_json(mr, gl._reply(mr, discussion, call.user, text))


def _approvals_json(gl: FakeGitLab, mr: _MergeRequest, user: FakeUser) -> dict[str, Any]:
    return {"id": mr.id, "iid": mr.iid, "project_id": mr.project_id, "title": mr.title, "state": mr.state,
            "approved": bool(mr.approved_by), "approvals_required": 0, "approvals_left": 0,
            "approved_by": [{"user": u.json()} for u in mr.approved_by],
            "user_has_approved": user in mr.approved_by, "has_approval_rules": False,
            "user_can_approve": user != mr.author and user not in mr.approved_by}  # fmt: skip


def _approve(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    project, mr = gl._mr(call)
    head = mr.versions[0].head_sha
    sha = call.params.get("sha")
    if sha and sha != head:
        raise _refuse(409, f"SHA does not match HEAD of source branch: {head}")
    if call.user == mr.author or call.user in mr.approved_by or project.members[call.user.id] < DEVELOPER:
        raise _refuse(401)
    mr.approved_by.append(call.user)
    gl._system_note(mr, "approved this merge request", call.user)
    return 201, _approvals_json(gl, mr, call.user)


def _unapprove(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    if call.user not in mr.approved_by:
        raise _refuse(404, "404 Not found")
    mr.approved_by.remove(call.user)
    gl._system_note(mr, "unapproved this merge request", call.user)
    return 201, _approvals_json(gl, mr, call.user)


def _get_approvals(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    return 200, _approvals_json(gl, gl._mr(call)[1], call.user)


def _get_approval_state(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    rule = {"id": 1, "name": "All Members", "rule_type": "any_approver", "approvals_required": 0,
            "approved": bool(mr.approved_by), "approved_by": [u.json() for u in mr.approved_by]}  # fmt: skip
    return 200, {"approval_rules_overwritten": False, "rules": [rule]}


def _commit_tree(gl: FakeGitLab, call: _Call, not_found: str) -> dict[str, str]:
    project = gl._project(call)
    ref = call.params.get("ref")
    if not ref:
        raise _refuse(400, error="ref is missing")
    tree = project.commits.get(str(ref))
    if tree is None:
        raise _refuse(404, not_found)
    return tree


def _get_file_raw(gl: FakeGitLab, call: _Call) -> _Answer:
    tree = _commit_tree(gl, call, "404 Commit Not Found")
    text = tree.get(unquote(call.args["file_path"]))
    if text is None:
        raise _refuse(404, "404 File Not Found")
    return 200, text, {}


def _get_tree(gl: FakeGitLab, call: _Call) -> _Answer:
    tree = _commit_tree(gl, call, "404 Tree Not Found")
    directory = str(call.params.get("path") or "").strip("/")
    prefix = f"{directory}/" if directory else ""
    entries: dict[str, dict[str, Any]] = {}
    for path in sorted(tree):
        if not path.startswith(prefix):
            continue
        name, _, rest = path[len(prefix) :].partition("/")
        kind = "tree" if rest else "blob"
        entries.setdefault(name, {"id": _sha(f"{kind}-{prefix}{name}"), "name": name, "type": kind,
                                  "path": prefix + name, "mode": "040000" if rest else "100644"})  # fmt: skip
    if directory and not entries:
        raise _refuse(404, "404 Tree Not Found")
    return gl._page(call, list(entries.values()))


def _get_compare(gl: FakeGitLab, call: _Call) -> tuple[int, Any]:
    project = gl._project(call)
    old_sha, new_sha = str(call.params.get("from") or ""), str(call.params.get("to") or "")
    old, new = project.commits.get(old_sha), project.commits.get(new_sha)
    if old is None or new is None:
        raise _refuse(404, "404 Ref Not Found")
    diffs = []
    for path in sorted(set(old) | set(new)):
        if old.get(path) != new.get(path):
            lines = difflib.unified_diff((old.get(path) or "").splitlines(), (new.get(path) or "").splitlines(),
                                         lineterm="", n=3)  # fmt: skip
            diffs.append({"old_path": path, "new_path": path, "a_mode": "100644", "b_mode": "100644",
                          "new_file": path not in old, "deleted_file": path not in new, "renamed_file": False,
                          "diff": "\n".join(list(lines)[2:]) + "\n"})  # fmt: skip
    commit = {"id": new_sha, "short_id": new_sha[:8], "title": "a commit"}
    return 200, {"commit": commit, "commits": [commit] if diffs else [], "diffs": diffs, "compare_timeout": False,
                 "compare_same_ref": old_sha == new_sha}  # fmt: skip


_MR = r"/projects/(?P<project>[^/]+)/merge_requests/(?P<iid>\d+)"
_DISCUSSION = _MR + r"/discussions/(?P<discussion_id>[0-9a-f]+)"
_ROUTES: list[tuple[str, re.Pattern[str], Any]] = [
    (method, re.compile(pattern), handler)
    for method, pattern, handler in (
        ("GET", "/user", _get_user),
        ("GET", r"/projects/(?P<project>[^/]+)", _get_project),
        ("GET", r"/projects/(?P<project>[^/]+)/members/all/(?P<user_id>\d+)", _get_member),
        ("GET", r"/projects/(?P<project>[^/]+)/repository/files/(?P<file_path>[^/]+)/raw", _get_file_raw),
        ("GET", r"/projects/(?P<project>[^/]+)/repository/tree", _get_tree),
        ("GET", r"/projects/(?P<project>[^/]+)/repository/compare", _get_compare),
        ("GET", _MR, _get_mr),
        ("GET", _MR + "/versions", _get_versions),
        ("GET", _MR + "/diffs", _get_diffs),
        ("GET", _MR + "/changes", _get_changes),
        ("GET", _MR + "/notes", _get_notes),
        ("POST", _MR + "/notes", _post_note),
        ("PUT", _MR + r"/notes/(?P<note_id>\d+)", _put_note),
        ("GET", _MR + "/discussions", _get_discussions),
        ("POST", _MR + "/discussions", _post_discussion),
        ("PUT", _DISCUSSION, _put_discussion),
        ("POST", _DISCUSSION + "/notes", _post_reply),
        ("POST", _MR + "/approve", _approve),
        ("POST", _MR + "/unapprove", _unapprove),
        ("GET", _MR + "/approvals", _get_approvals),
        ("GET", _MR + "/approval_state", _get_approval_state),
    )
]


# -- positions, diffs and quick actions ----------------------------------------------------------
def _check_position(mr: _MergeRequest, position: Any) -> dict[str, Any] | None:
    """The position GitLab would store, or the 400 it would answer."""
    if position is None:
        return None
    if not isinstance(position, dict):
        raise _refuse(400, error="position is invalid")
    for key in ("base_sha", "start_sha", "head_sha", "position_type"):
        if not position.get(key):
            raise _refuse(400, error=f"position[{key}] is missing")
    if position["position_type"] != "text":
        raise _refuse(400, error="position[position_type] does not have a valid value")
    version = mr.versions[0]
    paths = {position.get("new_path"), position.get("old_path")} - {None}
    diff_file = next((f for f in version.files if f.new_path in paths or f.old_path in paths), None)
    old_line, new_line = _opt_int(position.get("old_line")), _opt_int(position.get("new_line"))
    if (
        any(position[k] != v for k, v in version.refs().items())
        or diff_file is None
        or (old_line, new_line) not in diff_file.lines
    ):
        raise _refuse(400, _LINE_CODE_ERROR)
    stored = {k: position.get(k) for k in ("base_sha", "start_sha", "head_sha", "old_path", "new_path")}
    stored.update(position_type="text", old_line=old_line, new_line=new_line)
    line_range = position.get("line_range")
    if line_range is not None:
        end_code = diff_file.lines[(old_line, new_line)]
        try:
            start, end = line_range["start"]["line_code"], line_range["end"]["line_code"]
            types = {line_range["start"].get("type"), line_range["end"].get("type")}
        except (KeyError, TypeError):
            raise _refuse(400, error="position[line_range] is invalid") from None
        order = diff_file.order
        if end != end_code or start not in order or order[start] > order[end] or not types <= {"new", "old", None}:
            raise _refuse(400, '400 Bad request - Note {:line_range=>["must be a valid line range"]}')
        stored["line_range"] = line_range
    return stored


def _apply(tree: dict[str, str], files: FileSpec | None, version: _Version) -> dict[str, str]:
    """The head tree: ``tree`` with ``files`` applied, or (a ``diff=`` version) each file's diff text."""
    out = dict(tree)
    if files is not None:
        for path, (_, new) in files.items():
            if new is None:
                out.pop(path, None)
            else:
                out[path] = new
        return out
    for f in version.files:
        if f.deleted_file:
            out.pop(f.old_path, None)
        else:
            out[f.new_path] = f.diff
    return out


def _files_from(files: FileSpec) -> list[_DiffFile]:
    out = []
    for path, (old, new) in files.items():
        lines = difflib.unified_diff((old or "").splitlines(), (new or "").splitlines(), lineterm="", n=3)
        hunks = "\n".join(list(lines)[2:]) + "\n"
        out.append(_DiffFile(path, path, hunks, new_file=old is None, deleted_file=new is None))
    return out


def _split(diff: str | None) -> list[_DiffFile]:
    out = []
    for change in parse_diff(diff or ""):
        patch = change.patch.split("\n")
        first = next((i for i, line in enumerate(patch) if line.startswith("@@")), len(patch))
        old_path = change.old_path or change.path
        hunks = "\n".join(patch[first:])
        status = change.status
        out.append(_DiffFile(old_path, change.path, hunks, new_file=status == "added",
                             deleted_file=status == "deleted", renamed_file=status == "renamed"))  # fmt: skip
    return out


def _extract_commands(body: str) -> tuple[str, list[tuple[str, str]]]:
    """Split quick-action lines (column 0, outside fences and ``>>>`` quotes) from the text."""
    kept: list[str] = []
    commands: list[tuple[str, str]] = []
    fence: str | None = None
    for line in body.split("\n"):
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
        elif match := _FENCE.match(line):
            fence = match[1]
        elif line.rstrip() == ">>>":
            fence = ">>>"
        elif (match := _COMMAND.match(line.rstrip())) and match[1] in _QUICK_ACTIONS:
            commands.append((match[1], (match[2] or "").strip()))
            continue
        kept.append(line)
    return "\n".join(kept).strip(), commands


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


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _opt_int(value: Any) -> int | None:
    return None if value in (None, "") else _int(value, -1)


def _make_handler(gl: FakeGitLab) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self._handle()

        do_POST = do_PUT = do_DELETE = do_GET

        def _handle(self) -> None:
            raw = self.read_body()
            headers = {k.lower(): v for k, v in self.headers.items()}
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
