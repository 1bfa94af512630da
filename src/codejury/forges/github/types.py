"""The records the GitHub client reads and writes: pull requests, files, comments, threads, checks.

Each is a frozen dataclass built from (``from_json``) or sent as (``to_json``) GitHub's own JSON,
with ``CommentableLines`` saying which lines of a file's patch a review comment may anchor to.
They live apart from the client (``github.api``) because they are plain data: parsing a
payload needs no transport, retries or token, and the adapter and tests build them directly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from codejury.change.diffparse import parse_diff
from codejury.change.types import FileChange, FileStatus
from codejury.errors import DiffParseError

Side = Literal["LEFT", "RIGHT"]
ReviewEvent = Literal["APPROVE", "REQUEST_CHANGES", "COMMENT"]
AnnotationLevel = Literal["notice", "warning", "failure"]

_STATUSES: dict[str, FileStatus] = {"added": "added", "removed": "deleted", "renamed": "renamed", "copied": "copied"}


@dataclass(frozen=True)
class PullRequest:
    number: int
    title: str
    body: str
    author: str
    head_sha: str
    base_sha: str
    head_ref: str
    base_ref: str
    state: str
    draft: bool
    html_url: str = ""
    head_repo: str = ""
    """``owner/name`` of the head's repository: a fork's when it differs from ``base_repo``."""
    base_repo: str = ""
    labels: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PullRequest:
        head, base = d.get("head") or {}, d.get("base") or {}
        labels = tuple(str(x["name"]) for x in d.get("labels") or () if isinstance(x, dict) and x.get("name"))
        return cls(
            int(d["number"]), d.get("title") or "", d.get("body") or "", user_login(d), head.get("sha", ""),
            base.get("sha", ""), head.get("ref", ""), base.get("ref", ""), d.get("state", ""), bool(d.get("draft")),
            d.get("html_url") or "", _repo_name(head), _repo_name(base), labels,
        )  # fmt: skip


@dataclass(frozen=True)
class PullFile:
    """A changed file; ``patch`` is None when GitHub leaves it out (binary or very large files)."""

    path: str
    status: str
    patch: str | None
    previous_path: str | None
    additions: int
    deletions: int

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PullFile:
        return cls(d["filename"], d.get("status", ""), d.get("patch"), d.get("previous_filename"),
                   int(d.get("additions") or 0), int(d.get("deletions") or 0))  # fmt: skip

    def commentable_lines(self) -> CommentableLines:
        return CommentableLines.from_patch(self.patch)

    def file_change(self) -> FileChange:
        """The same file as codejury's ``FileChange``, hunks parsed from GitHub's patch (none when absent)."""
        status: FileStatus = _STATUSES.get(self.status, "modified")
        old_path = self.previous_path or self.path
        bare = FileChange(path=self.path, old_path=old_path, status=status, is_binary=self.patch is None)
        if not self.patch:
            return bare
        old = "/dev/null" if status == "added" else f"a/{old_path}"
        new = "/dev/null" if status == "deleted" else f"b/{self.path}"
        header = f"diff --git a/{old_path} b/{self.path}\n"
        if status == "renamed":
            header += f"rename from {old_path}\nrename to {self.path}\n"
        try:
            parsed = parse_diff(f"{header}--- {old}\n+++ {new}\n{self.patch}\n")
        except DiffParseError:
            return bare
        return replace(parsed[0], path=self.path, old_path=old_path, status=status) if parsed else bare


@dataclass(frozen=True)
class IssueComment:
    """A comment on the pull request's conversation (where the summary lives)."""

    id: int
    body: str
    author: str
    created_at: str = ""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> IssueComment:
        return cls(int(d["id"]), d.get("body") or "", user_login(d), str(d.get("created_at") or ""))


@dataclass(frozen=True)
class Review:
    id: int
    state: str  # APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING
    body: str
    commit_id: str
    author: str
    submitted_at: str = ""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Review:
        return cls(int(d["id"]), d.get("state", ""), d.get("body") or "", d.get("commit_id") or "", user_login(d),
                   str(d.get("submitted_at") or ""))  # fmt: skip


@dataclass(frozen=True)
class ReviewComment:
    """An inline comment; ``line`` is None once the comment is outdated."""

    id: int
    path: str
    line: int | None
    side: Side
    start_line: int | None
    in_reply_to_id: int | None
    body: str
    author: str
    review_id: int | None
    commit_id: str
    original_line: int | None = None
    """The line when the comment was posted (``line`` is None once it is outdated)."""
    created_at: str = ""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ReviewComment:
        return cls(
            int(d["id"]), d.get("path", ""), d.get("line"), d.get("side") or "RIGHT", d.get("start_line"),
            d.get("in_reply_to_id"), d.get("body") or "", user_login(d), d.get("pull_request_review_id"),
            d.get("commit_id") or "", d.get("original_line"), str(d.get("created_at") or ""),
        )  # fmt: skip


@dataclass(frozen=True)
class ThreadComment:
    """A comment as GraphQL shows it inside a thread; ``database_id`` is the REST comment id."""

    database_id: int
    body: str
    author: str

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ThreadComment:
        # fullDatabaseId is a BigInt, which GraphQL sends as a string.
        raw = d.get("fullDatabaseId") or d.get("databaseId") or 0
        return cls(int(raw), d.get("body") or "", (d.get("author") or {}).get("login", ""))


@dataclass(frozen=True)
class ReviewThread:
    """A review thread (GraphQL node id); ``line`` is None once outdated."""

    id: str
    is_resolved: bool
    is_outdated: bool
    path: str
    line: int | None
    viewer_can_resolve: bool
    comments: tuple[ThreadComment, ...]
    resolved_by: str | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ReviewThread:
        comments = tuple(ThreadComment.from_json(c) for c in (d.get("comments") or {}).get("nodes") or [])
        resolver = d.get("resolvedBy") or {}
        return cls(d["id"], bool(d.get("isResolved")), bool(d.get("isOutdated")), d.get("path", ""), d.get("line"),
                   bool(d.get("viewerCanResolve")), comments,
                   str(resolver.get("login") or "") or None if isinstance(resolver, dict) else None)  # fmt: skip


@dataclass(frozen=True)
class CheckRun:
    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    title: str = ""
    summary: str = ""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CheckRun:
        output = d.get("output") or {}
        return cls(int(d["id"]), d.get("name", ""), d.get("head_sha", ""), d.get("status", ""), d.get("conclusion"),
                   str(output.get("title") or ""), str(output.get("summary") or ""))  # fmt: skip


@dataclass(frozen=True)
class DraftComment:
    """An inline comment to post with a review: ``start_line..line`` on ``side`` (new side: RIGHT)."""

    path: str
    line: int
    body: str
    side: Side = "RIGHT"
    start_line: int | None = None
    start_side: Side | None = None

    def to_json(self) -> dict[str, Any]:
        item: dict[str, Any] = {"path": self.path, "line": self.line, "side": self.side, "body": self.body}
        if self.start_line is not None and self.start_line != self.line:
            item["start_line"], item["start_side"] = self.start_line, self.start_side or self.side
        return item


@dataclass(frozen=True)
class Annotation:
    """A check-run annotation (GitHub shows it on the file in the pull request's diff)."""

    path: str
    start_line: int
    end_line: int
    level: AnnotationLevel
    message: str
    title: str | None = None

    def to_json(self) -> dict[str, Any]:
        item: dict[str, Any] = {"path": self.path, "start_line": self.start_line, "end_line": self.end_line,
                                "annotation_level": self.level, "message": self.message}  # fmt: skip
        if self.title:
            item["title"] = self.title
        return item


@dataclass(frozen=True)
class CommentableLines:
    """Which lines of one file's patch a review comment may anchor to; GitHub refuses the rest (422).

    ``hunks`` holds, per hunk, the old-side (LEFT) and new-side (RIGHT) line numbers it shows.
    """

    hunks: tuple[tuple[frozenset[int], frozenset[int]], ...] = ()

    @classmethod
    def from_patch(cls, patch: str | None) -> CommentableLines:
        """Read GitHub's ``patch`` (hunks without file headers); nothing is commentable when it is absent or bad."""
        if not patch:
            return cls()
        try:
            files = parse_diff(f"--- a/file\n+++ b/file\n{patch}\n")
        except DiffParseError:
            return cls()
        return cls(
            tuple(
                (
                    frozenset(ln.old_no for ln in hunk.lines if ln.old_no is not None),
                    frozenset(ln.new_no for ln in hunk.lines if ln.new_no is not None),
                )
                for file in files
                for hunk in file.hunks
            )
        )

    def allows(self, line: int, side: Side = "RIGHT", *, start_line: int | None = None,
               start_side: Side | None = None) -> bool:  # fmt: skip
        """Whether a comment on ``line`` (from ``start_line``, in the same hunk) would be accepted."""
        end = self._hunk(side, line)
        if end is None or start_line is None:
            return end is not None
        start_side = start_side or side
        ordered = start_side != side or start_line < line
        return ordered and self._hunk(start_side, start_line) == end

    def _hunk(self, side: Side, line: int) -> int | None:
        for index, (left, right) in enumerate(self.hunks):
            if line in (left if side == "LEFT" else right):
                return index
        return None


def user_login(d: dict[str, Any]) -> str:
    """The ``user.login`` of a REST object ('' when absent)."""
    user = d.get("user") or {}
    return str(user.get("login") or "") if isinstance(user, dict) else ""


def _repo_name(side: dict[str, Any]) -> str:
    repo = side.get("repo") or {}
    return str(repo.get("full_name") or "") if isinstance(repo, dict) else ""
