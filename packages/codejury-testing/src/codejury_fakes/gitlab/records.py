"""What the fake GitLab keeps: users, projects, merge requests and their versions, discussions.

Also the diff helpers that turn ``files``/``diff`` into GitLab's per-version diff files with
their line codes (computed from the hunk text the way GitLab's ``Diff::Parser`` does, not with
codejury's parser, so a parser bug on our side cannot hide behind the fake), and the quick
action parser.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from codejury.change.diffparse import parse_diff
from codejury.errors import TestDoubleError

GUEST, REPORTER, DEVELOPER, MAINTAINER = 10, 20, 30, 40
LINE_CODE_ERROR = '400 Bad request - Note {:line_code=>["can\'t be blank", "must be a valid line code"]}'
QUICK_ACTIONS = frozenset({
    "approve", "unapprove", "merge", "close", "reopen", "assign", "unassign", "assign_reviewer", "reviewer",
    "request_review", "unassign_reviewer", "label", "unlabel", "relabel", "title", "draft", "ready", "wip",
    "lock", "unlock", "milestone", "remilestone", "due", "estimate", "spend", "rebase", "submit_review",
    "award", "react", "todo", "done", "subscribe", "unsubscribe", "target_branch", "copy_metadata", "cc",
    "duplicate", "confidential",
})  # fmt: skip
_COMMAND = re.compile(r"^/([a-z_]+)(?:[ \t]+(.*))?$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
EPOCH = datetime(2026, 11, 22, 10, 0, 0, tzinfo=UTC)

FileSpec = dict[str, tuple[str | None, str | None]]


def gitlab_line_code(path: str, old_pos: int, new_pos: int) -> str:
    """GitLab's ``Diff::LineCode``: sha1 of the file's path, then old and new position."""
    return f"{hashlib.sha1(path.encode(), usedforsecurity=False).hexdigest()}_{old_pos}_{new_pos}"


def fake_sha(seed: str) -> str:
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
class DiffFile:
    """One file of an MR version: GitLab's diff JSON plus the line codes its hunks show."""

    old_path: str
    new_path: str
    diff: str
    new_file: bool = False
    deleted_file: bool = False
    renamed_file: bool = False
    collapsed: bool = False  # GitLab left the diff's text out (``diff`` is then ""): ``GitLabState.collapse``
    too_large: bool = False
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
                "generated_file": False, "collapsed": self.collapsed, "too_large": self.too_large,
                "diff": self.diff}  # fmt: skip


@dataclass
class Version:
    id: int
    base_sha: str
    start_sha: str
    head_sha: str
    created_at: str
    files: list[DiffFile]

    def refs(self) -> dict[str, str]:
        return {"base_sha": self.base_sha, "head_sha": self.head_sha, "start_sha": self.start_sha}


@dataclass
class Note:
    id: int
    body: str
    author: FakeUser
    discussion_id: str
    created_at: str
    system: bool = False
    position: dict[str, Any] | None = None
    updated_at: str = ""


@dataclass
class Discussion:
    id: str
    individual_note: bool
    resolvable: bool
    notes: list[Note] = field(default_factory=list)
    resolved_by: FakeUser | None = None
    resolved_at: str | None = None


@dataclass
class MergeRequest:
    id: int
    iid: int
    project_id: int
    title: str
    description: str
    author: FakeUser
    source_branch: str
    target_branch: str
    created_at: str
    versions: list[Version]  # newest first, like the versions endpoint
    state: str = "opened"
    labels: list[str] = field(default_factory=list)
    discussions: dict[str, Discussion] = field(default_factory=dict)
    approved_by: list[FakeUser] = field(default_factory=list)

    def note(self, note_id: int) -> Note | None:
        return next((n for d in self.discussions.values() for n in d.notes if n.id == note_id), None)


@dataclass
class Project:
    id: int
    path: str
    members: dict[int, int] = field(default_factory=dict)  # user id -> access level
    mrs: dict[int, MergeRequest] = field(default_factory=dict)
    commits: dict[str, dict[str, str]] = field(default_factory=dict)  # sha -> {path: text}, the whole tree
    branches: dict[str, str] = field(default_factory=dict)  # name -> head sha (the default branch: "main")
    issues: dict[int, tuple[str, str]] = field(default_factory=dict)  # iid -> (title, description)


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
class Fault:
    remaining: int
    status: int
    retry_after: float | None
    method: str | None
    path: re.Pattern[str] | None


class Refusal(TestDoubleError):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(status)
        self.status, self.body = status, body


MAX_DESCRIPTION = 1_048_576
"""The longest merge request description GitLab stores."""
INSUFFICIENT_SCOPE = {
    "error": "insufficient_scope",
    "error_description": "The request requires higher privileges than provided by the access token.",
    "scope": "api",
}
"""GitLab's answer (403) to a write with a token that lacks the ``api`` scope (``read_api`` only)."""


def refuse(status: int, message: str | None = None, *, error: str | None = None) -> Refusal:
    default = {400: "400 Bad request", 401: "401 Unauthorized", 403: "403 Forbidden", 404: "404 Not found"}
    return Refusal(status, {"error": error} if error else {"message": message or default.get(status, str(status))})


Answer = tuple[int, Any, dict[str, str]]  # status, JSON body (or plain text), extra headers


@dataclass
class Call:
    method: str
    path: str
    params: dict[str, Any]
    json_body: bool
    user: FakeUser
    args: dict[str, str]


def apply_files(tree: dict[str, str], files: FileSpec | None, version: Version) -> dict[str, str]:
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


def diff_files_from(files: FileSpec) -> list[DiffFile]:
    out = []
    for path, (old, new) in files.items():
        lines = difflib.unified_diff((old or "").splitlines(), (new or "").splitlines(), lineterm="", n=3)
        hunks = "\n".join(list(lines)[2:]) + "\n"
        out.append(DiffFile(path, path, hunks, new_file=old is None, deleted_file=new is None))
    return out


def split_diff(diff: str | None) -> list[DiffFile]:
    out = []
    for change in parse_diff(diff or ""):
        patch = change.patch.split("\n")
        first = next((i for i, line in enumerate(patch) if line.startswith("@@")), len(patch))
        old_path = change.old_path or change.path
        hunks = "\n".join(patch[first:])
        status = change.status
        out.append(DiffFile(old_path, change.path, hunks, new_file=status == "added",
                             deleted_file=status == "deleted", renamed_file=status == "renamed"))  # fmt: skip
    return out


def extract_commands(body: str) -> tuple[str, list[tuple[str, str]]]:
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
        elif (match := _COMMAND.match(line.rstrip())) and match[1] in QUICK_ACTIONS:
            commands.append((match[1], (match[2] or "").strip()))
            continue
        kept.append(line)
    return "\n".join(kept).strip(), commands


def to_int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def opt_int(value: Any) -> int | None:
    return None if value in (None, "") else to_int(value, -1)
