"""The change set every later stage reads: files, hunks and metadata."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from codejury.change.discussion import Discussion
from codejury.cli_io import shown_path

if TYPE_CHECKING:
    from codejury.change.head_tree import HeadTree

FileStatus = Literal["added", "modified", "deleted", "renamed", "copied"]
LineKind = Literal["+", "-", " "]


@dataclass(frozen=True)
class DiffLine:
    """One line of a hunk; ``new_no`` is None for removed lines, ``old_no`` for added ones."""

    kind: LineKind
    text: str
    old_no: int | None
    new_no: int | None


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str
    lines: tuple[DiffLine, ...]


@dataclass(frozen=True)
class FileChange:
    """One changed file. ``path`` is the new path (the old one for a deletion)."""

    path: str
    old_path: str | None
    status: FileStatus
    hunks: tuple[Hunk, ...] = ()
    is_binary: bool = False
    """No text diff is shown: the file's bytes are binary, it is too large (``too_large``), or the diff's
    maker says so (a forge's, a diff file's: checked against the head side's bytes by the noise filter)."""
    old_mode: str | None = None
    new_mode: str | None = None
    patch: str = ""
    too_large: str = ""
    """Why the file is over the size cap (``too large: 9 MB, over the 8 MB limit``); ``is_binary`` too then."""

    @property
    def added_lines(self) -> frozenset[int]:
        """New-side numbers of added lines."""
        return frozenset(ln.new_no for h in self.hunks for ln in h.lines if ln.kind == "+" and ln.new_no)

    @property
    def new_side_lines(self) -> frozenset[int]:
        """New-side numbers of every line shown in the hunks (added and context)."""
        return frozenset(ln.new_no for h in self.hunks for ln in h.lines if ln.new_no is not None)

    @property
    def additions(self) -> int:
        return sum(1 for h in self.hunks for ln in h.lines if ln.kind == "+")

    @property
    def deletions(self) -> int:
        return sum(1 for h in self.hunks for ln in h.lines if ln.kind == "-")

    @property
    def changed_lines(self) -> int:
        return self.additions + self.deletions


@dataclass(frozen=True)
class PriorFinding:
    """A finding codejury published on an earlier review of this change (model-written title)."""

    path: str
    start_line: int
    end_line: int
    severity: str
    title: str
    why: str = ""
    """For a dismissed finding: how (a reply, a human resolved its thread)."""
    fingerprint: str = ""
    """Its thread's fingerprint (``unique_fingerprints``), when the earlier review is read back from a forge."""


RESOLVED_BY_WRITER = "resolved by a person with write access"
"""A ``PriorFinding.why``: its thread was resolved by someone the forge names, who has write access (a dismissal,
as a ``won't fix`` reply is); "resolved by a human" is one resolved by someone without it, or not named."""


@dataclass(frozen=True)
class PreviousReview:
    """What reviewers are told about the last review of this change (a forge's re-review).

    ``changed_since`` lists the files changed between ``head_sha`` (the last reviewed head) and
    the head under review; None when that commit is unknown or unreachable (force-push, no state).
    """

    head_sha: str = ""
    changed_since: tuple[str, ...] | None = None
    still_open: tuple[PriorFinding, ...] = ()
    dismissed: tuple[PriorFinding, ...] = ()
    unlisted_open: int = 0
    """Findings still open whose place is not known (listed only in the earlier summary)."""


@dataclass(frozen=True)
class LinkedIssue:
    """An issue the change says it resolves (``Fixes #12``), as its forge serves it: untrusted text."""

    ref: str
    """As the change names it: ``#12``, ``group/project#12``."""
    title: str
    body: str
    url: str = ""


@dataclass(frozen=True)
class ChangeMeta:
    """User-controlled metadata about a change: every field is untrusted text."""

    title: str = ""
    description: str = ""
    author: str = ""
    commits: tuple[str, ...] = ()
    comments: tuple[str, ...] = ()
    base_ref: str = ""
    head_ref: str = ""
    previous: PreviousReview | None = None
    """The last review of this change and what changed since (None on a first review)."""
    repository: str = ""
    """Which repository (``group/project``, ``owner/repo``, a remote URL's path, or the directory name)."""
    change_id: str = ""
    """Which change there (``!12``, ``#34``, the branch name); empty for a diff file."""
    head_sha: str = ""
    """The head commit reviewed; empty when only a diff is known."""
    discussion: Discussion | None = None
    """The merge request's or pull request's discussion on its forge; None when the review is not on a forge."""
    labels: tuple[str, ...] = ()
    """The merge request's or pull request's labels on its forge (none elsewhere)."""
    linked_issues: tuple[LinkedIssue, ...] = ()
    """The issues the change says it resolves, read from its forge (``change.intent``); none elsewhere."""
    intent_notes: tuple[str, ...] = ()
    """What could not be read of them, one line each (an issue the token cannot see)."""


@dataclass(frozen=True)
class ChangeSet:
    """A change to review.

    ``root`` is a directory holding the head side of the repository, or None when only a diff
    is known: the checkout itself (``--working-tree``, ``--diff --repo``), or, in a review of a
    commit, a directory holding only the changed files (the analyzers read there). ``head`` is
    then the commit itself, which the tools list and read from git's object store on demand.
    ``base`` reads files on the base side (repository config and instructions, which never come
    from the change itself). ``left_out`` maps the head-side files the review could not read
    although the head commit has them (an unreadable git object, a file over the size cap) to
    the reason: the tools see them as missing. With ``head`` it fills as the tools read.
    """

    files: tuple[FileChange, ...]
    meta: ChangeMeta = field(default_factory=ChangeMeta)
    root: Path | None = None
    base: BaseReader | None = None
    left_out: Mapping[str, str] = field(default_factory=dict)
    head: HeadTree | None = None
    no_tree: str = "a diff without --repo"
    """Why there is no head-side tree when ``root`` is None (the analyzers that need one say it)."""
    head_unread: str = ""
    """Why changed files of a forge change's head commit could not be read at all (neither git nor the forge's
    API gave them), one line; the review may then not approve (``ReviewRun.withhold``)."""

    def left_out_notice(self, shown: int = 5) -> str | None:
        """One line naming the files left out of ``root`` (the first ``shown``), or None."""
        if not self.left_out:
            return None
        names = sorted(self.left_out)
        listed = "; ".join(f"{shown_path(name)} ({self.left_out[name]})" for name in names[:shown])
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        count = len(names)
        noun = "file" if count == 1 else "files"
        return f"{count} {noun} of the repository left out, missing to the reviewers' tools: {listed}{more}"


class BaseReader(ABC):
    """Reads files as they are on the base side of the change."""

    @abstractmethod
    def read_text(self, path: str) -> str | None:
        """Return the base-side text of ``path``, or None when it does not exist there."""

    @abstractmethod
    def list_dir(self, directory: str) -> list[str]:
        """Return the repository-relative paths of the files directly inside ``directory``."""


class PrefetchedBase(BaseReader):
    """A base side read ahead of time (a forge's API is async, ``BaseReader`` is not).

    ``files`` maps a path to its text (None: absent on the base side); ``dirs`` maps a directory
    to the files directly inside it. A path that was not fetched reads as absent, and is noted
    in ``missed`` so a caller can tell "not there" from "never asked for".
    """

    def __init__(self, files: Mapping[str, str | None], dirs: Mapping[str, Sequence[str]] | None = None) -> None:
        self._files = {_clean(p): t for p, t in files.items()}
        self._dirs = {_clean(d): list(paths) for d, paths in (dirs or {}).items()}
        self.missed: list[str] = []

    def read_text(self, path: str) -> str | None:
        key = _clean(path)
        if key not in self._files:
            self.missed.append(key)
            return None
        return self._files[key]

    def list_dir(self, directory: str) -> list[str]:
        key = _clean(directory)
        if key not in self._dirs:
            self.missed.append(key + "/")
            return []
        return list(self._dirs[key])


def _clean(path: str) -> str:
    return "/".join(part for part in path.replace("\\", "/").split("/") if part not in ("", "."))


class ChangeSource(ABC):
    """Turns "this branch", "this range", "this diff file" into a ChangeSet."""

    @abstractmethod
    def load(self) -> ChangeSet:
        """Read the change; raise SourceError or DiffParseError with a one-line cause."""
