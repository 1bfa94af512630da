"""The reviewers' tools over a commit read from git's object store (a git-mode review).

Nothing of the head tree is exported: ``list_files`` answers from the commit's tree listing,
``read_file`` streams one blob, and ``grep`` reads the blobs its path glob selects, all through
``change.head_tree.HeadTree``. The answers are those of ``RepoTools`` over a checkout: the same
path checks (``sandbox.checked_path``: relative, no ``..``, nothing under ``.git``), caps, time
budgets and messages. A path names an entry of the commit's tree, never a file on this machine,
so nothing outside the repository can be reached; symbolic links and submodules are not followed.
A file whose object cannot be read is missing to the tools, and the review lists it
(``HeadTree.left_out``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from codejury.agents.bounded import Budget
from codejury.agents.sandbox import checked_path
from codejury.agents.tools import _SKIP_DIRS, RepoTools, _glob_matches, grep_pattern, listing_text
from codejury.change.head_tree import HeadTree, TreeFile, Unreadable


class GitRepoTools(RepoTools):
    """Read files, patches, grep and list the head commit of a git-mode review, on demand."""

    def __init__(self, tree: HeadTree, patches: Mapping[str, str], **limits: Any) -> None:
        super().__init__(None, patches, **limits)
        self.tree = tree

    def _clean(self, path: str, *, allow_root: bool = False) -> tuple[str, str]:
        """(the repository-relative path, '' for the root; a refusal, '' when the path passed its checks)."""
        rel = checked_path(path, allow_root=allow_root)
        if isinstance(rel, str):
            return "", rel
        return ("" if rel == PurePosixPath(".") else rel.as_posix()), ""

    def _missing(self, rel: str, why: str | None = None) -> str:
        for depth in range(1, rel.count("/") + 1):  # a path through a symbolic link names nothing here
            above = self.tree.lookup(rel.rsplit("/", depth)[0])
            if above is not None and above.is_link:
                return self._link(above)
        hint = "it is a changed file: use read_patch" if rel in self.patches else self._changed_hint()
        return f"error: no such file: {rel}{f' ({why})' if why else ''}; {hint}"

    @staticmethod
    def _link(file: TreeFile) -> str:
        return f"error: {file.path} is a symbolic link; links are not followed in a review of a commit"

    # ---- tools -------------------------------------------------------------------------

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None, budget: Budget | None = None
    ) -> str:
        """Numbered lines of a file of the commit, streamed from git: the same caps as over a checkout."""
        rel, refusal = self._clean(path)
        if refusal:
            return refusal
        file = self.tree.lookup(rel)
        if file is None:
            return f"error: {rel} is a directory; use list_files" if self.tree.is_dir(rel) else self._missing(rel)
        if file.is_link:
            return self._link(file)
        try:
            with self.tree.open(file) as (size, fh):
                return self._numbered(fh, size, rel, start_line, end_line, budget)
        except Unreadable as exc:
            return self._missing(rel, str(exc))

    def list_files(self, directory: str = ".", budget: Budget | None = None) -> str:
        """Entries of a directory of the commit (links, submodules and unreadable files left out)."""
        rel, refusal = self._clean(directory, allow_root=True)
        if refusal:
            return refusal
        if self.tree.lookup(rel) is not None:
            return f"error: not a directory: {rel}; use read_file"
        if not self.tree.is_dir(rel):
            return self._missing(rel)
        base = f"{rel}/" if rel else ""
        entries: list[str] = []
        for name in self.tree.children(rel):
            file = None if name.endswith("/") else self.tree.lookup(base + name)
            if file is None or not (file.is_link or file.path in self.tree.left_out):
                entries.append(base + name)
        return listing_text(entries)

    def grep(self, pattern: str, path_glob: str | None = None, budget: Budget | None = None) -> str:
        """Lines matching a Python regular expression in the commit's files, as 'path:line: text'."""
        compiled = grep_pattern(pattern, path_glob)
        if isinstance(compiled, str):
            return compiled
        budget = budget or Budget(self.time_budget_s)
        literal: list[str] = []
        for part in PurePosixPath((path_glob or "").strip()).parts[:-1]:
            if any(c in part for c in "*?[") or part in ("..", "/", ".git"):
                break
            literal.append(part)
        start, refusal = self._clean("/".join(literal) or ".", allow_root=True)
        if refusal:
            return refusal
        if not self.tree.is_dir(start):
            return f"no matches for {pattern!r}"
        files, stopped = self._grep_files(start, path_glob)
        matches: list[str] = []
        searched = 0
        blobs = self.tree.contents(files, max_bytes=self.max_read_bytes, stop=lambda: budget.spent)
        try:
            for file, raw in blobs:
                searched += 1
                if found := self._grep_bytes(raw, file.path, compiled, budget, matches):
                    stopped = found
                    break
        finally:
            blobs.close()  # stops its git at once
        if budget.spent and not stopped:
            stopped = f"search stopped after {searched} files (time limit reached); results are incomplete"
        return self._grep_report(pattern, matches, stopped)

    def _grep_files(self, start: str, path_glob: str | None) -> tuple[list[TreeFile], str]:
        """The files below ``start`` that ``path_glob`` selects (at most ``max_grep_files`` looked at)."""
        depth = start.count("/") + 1 if start else 0
        chosen: list[TreeFile] = []
        for visited, file in enumerate(self.tree.files_under(start)):
            if any(part in _SKIP_DIRS for part in file.path.split("/")[depth:-1]):
                continue
            if visited >= self.max_grep_files:
                return chosen, f"search stopped after {visited} files (limit reached); results are incomplete"
            if not file.is_link and (not path_glob or _glob_matches(file.path, path_glob)):
                chosen.append(file)
        return chosen, ""
