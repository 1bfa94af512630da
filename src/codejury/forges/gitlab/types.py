"""The records the GitLab client reads, and the position JSON that anchors an inline comment.

Plain frozen dataclasses built from GitLab's own JSON (``from_json``): users, the merge
request and its diff versions, diffs, notes, discussions and approvals. ``line_code`` and
``position_for`` build GitLab's position JSON from codejury's hunks the way GitLab numbers
diff lines (an added line carries the running old-side counter). They live apart from the
client (``gitlab.api``) because they are plain data: no transport, retries or token.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from codejury.change.diffparse import parse_diff
from codejury.change.types import DiffLine, FileChange

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
    """One file of the MR's diff as GitLab shows it (``diff`` starts at the first ``@@``).

    ``collapsed`` / ``too_large``: GitLab left the diff's text out (``diff`` is then ""), for a diff it
    collapses (over its size or line limits) or finds too large to show at all.
    """

    old_path: str
    new_path: str
    diff: str
    new_file: bool = False
    renamed_file: bool = False
    deleted_file: bool = False
    collapsed: bool = False
    too_large: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MRDiff:
        flags = (bool(data.get(k)) for k in ("new_file", "renamed_file", "deleted_file", "collapsed", "too_large"))
        return cls(str(data["old_path"]), str(data["new_path"]), str(data.get("diff") or ""), *flags)

    @property
    def text_left_out(self) -> bool:
        """Whether GitLab listed the file without its diff's text (collapsed or too large)."""
        return not self.diff and (self.collapsed or self.too_large)

    def file_change(self) -> FileChange:
        """The same file as codejury's ``FileChange``, hunks parsed from GitLab's own diff.

        A file whose diff GitLab left out (``text_left_out``) is shown without text (``is_binary``, as a
        forge's file listed without a patch): ``change.noise.settled`` then judges it by the head commit's
        bytes, so a collapsed rename with changes is not taken for a pure rename.
        """
        old = "/dev/null" if self.new_file else f"a/{self.old_path}"
        new = "/dev/null" if self.deleted_file else f"b/{self.new_path}"
        header = f"diff --git a/{self.old_path} b/{self.new_path}\n"
        if self.renamed_file:
            header += f"rename from {self.old_path}\nrename to {self.new_path}\n"
        parsed = parse_diff(f"{header}--- {old}\n+++ {new}\n{self.diff}")
        return replace(parsed[0], is_binary=True) if self.text_left_out else parsed[0]


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
