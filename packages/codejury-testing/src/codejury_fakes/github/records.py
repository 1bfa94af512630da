"""What the fake GitHub keeps (users, tokens, repositories, pull requests, reviews, threads, check runs),
the shapes of a call and a reply, and the pure helpers over them (diffs as GitHub shows them, the
comparison's files, why a review comment would be refused).
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from codejury.errors import TestDoubleError

Permission = Literal["admin", "write", "read", "none"]
TokenKind = Literal["actions", "fork", "pat"]
Side = Literal["LEFT", "RIGHT"]

ACTIONS_LOGIN = "github-actions[bot]"
ACTIONS_USER_ID = 41898282
NOT_ACCESSIBLE = "Resource not accessible by integration"
MAX_BODY = 65_536
"""The longest pull request description GitHub stores."""
OFF_DIFF = "Pull request review thread line must be part of the diff"
ACTIONS_MAY_NOT_APPROVE = "GitHub Actions is not permitted to approve pull requests."
DEFAULT_ACTIONS_PERMISSIONS = {"pull-requests": "write", "issues": "write", "checks": "write", "contents": "read"}
MAX_ANNOTATIONS = 50
DOCS = "https://docs.github.com/rest"


# -- records --------------------------------------------------------------------------------------
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
    issues: dict[int, tuple[str, str]] = field(default_factory=dict)  # number -> (title, body)


@dataclass
class PullFile:
    """One file of a pull request at one head: GitHub's patch and, per hunk, the lines a comment may use."""

    filename: str
    status: str
    old_text: str | None
    new_text: str | None
    patch: str
    hunks: list[tuple[set[int], set[int]]]  # (LEFT lines, RIGHT lines) of each hunk
    patch_left_out: bool = False
    """GitHub sends no patch, as for a file the change's own ``.gitattributes`` marks ``binary`` or ``-diff``."""
    previous_filename: str | None = None
    """Where a renamed file was on the base side."""

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
    labels: list[str] = field(default_factory=list)


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
class Fault:
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
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False


class Refusal(TestDoubleError):
    """Raised inside a handler: answer with this reply and change nothing."""

    def __init__(self, status: int, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        body: dict[str, Any] = {"message": message, "documentation_url": DOCS, "status": str(status)}
        if errors is not None:
            body["errors"] = errors
        self.reply = Reply(status, body)


class GraphQLError(TestDoubleError):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def unprocessable(*errors: str) -> Refusal:
    return Refusal(422, "Unprocessable Entity", list(errors))


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    token: Token | None
    args: dict[str, str]
    prefix: str = ""  # "/api/v3" when the client used GitHub Enterprise's paths
    headers: dict[str, str] = field(default_factory=dict)
    """The request's headers, names in lower case, without ``authorization``."""

    @property
    def login(self) -> str:
        assert self.token is not None
        return self.token.user

    def field(self, name: str) -> Any:
        return self.body.get(name) if isinstance(self.body, dict) else None


# -- pure helpers -------------------------------------------------------------------------------
def pull_file(path: str, old: str | None, new: str | None) -> PullFile:
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


def ancestry(repo: Repo, sha: str) -> list[str]:
    """``sha`` and its ancestors, nearest first (one parent each: the fake has no merge commits)."""
    line: list[str] = []
    current: str | None = sha
    while current is not None and current not in line:
        line.append(current)
        current = repo.parents.get(current)
    return line


def compare_files(old: Mapping[str, str], new: Mapping[str, str]) -> list[dict[str, Any]]:
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
            items[path] = file_json(pull_file(path, before, after))
    items |= {path: file_json(pull_file(path, text, None)) for path, text in removed.items()}
    return [items[path] for path in sorted(items)]


def comment_error(files: dict[str, PullFile], draft: Any) -> str | None:
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


def file_json(f: PullFile) -> dict[str, Any]:
    adds = sum(1 for line in f.patch.splitlines() if line.startswith("+"))
    dels = sum(1 for line in f.patch.splitlines() if line.startswith("-"))
    sha = hashlib.sha1((f.new_text or "").encode()).hexdigest()
    return {"sha": sha, "filename": f.filename, "status": f.status,
            "additions": adds, "deletions": dels, "changes": adds + dels,
            **({} if f.patch_left_out else {"patch": f.patch}),
            **({"previous_filename": f.previous_filename} if f.previous_filename else {})}  # fmt: skip


def check_run_json(run: CheckRun) -> dict[str, Any]:
    output = {"title": run.title, "summary": run.summary, "text": run.text, "annotations_count": len(run.annotations)}
    return {"id": run.id, "name": run.name, "head_sha": run.head_sha, "status": run.status,
            "conclusion": run.conclusion, "output": output, "details_url": run.details_url,
            "external_id": run.external_id}  # fmt: skip


def required_text(call: Call, name: str) -> str:
    value = call.field(name)
    if not isinstance(value, str) or not value:
        raise unprocessable(f"{name} can't be blank")
    return value
