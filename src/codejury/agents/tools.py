"""Read-only tools a reviewer uses to read the repository, confined to its root and bounded.

Every method returns the text the model sees; a refusal is a string starting with
``error: `` and never an exception, so one bad call costs the model a turn, not the review.

Confinement (symlinks at any depth, loops, hard links, files replaced between check and open)
is ``sandbox.py``'s. Bounds are ``bounded.py``'s: every call has a time budget
(``time_budget_s``, never past the reviewer's deadline), its output is capped at
``max_result_chars`` and every line at 2,000 characters while the file is read (a huge one-line
file is never read whole), and every regex search has a timeout. The functions the model calls
are async: the work runs in a worker thread that the agent stops waiting for as soon as it is
cancelled (reviewer or overall timeout), and that thread's budget is stopped at the same moment,
so a timeout ends the review on time (``agent_tools.py`` gives them to the agent, fenced).
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
from collections.abc import Callable, Mapping
from io import BufferedReader
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from codejury.agents.bounded import Budget, Pattern, capped_lines, decode
from codejury.agents.sandbox import Missing, Opened, Resolved, Sandbox, norm

INDEX_TOOL_NAMES: frozenset[str] = frozenset({"search_code", "find_references"})
"""Tools over the repository index (``codejury.repocontext``), offered when the review has one."""
FORGE_TOOL_NAMES: frozenset[str] = frozenset({"get_pr_discussion"})
"""Tools over the change's forge (``agents.discussion``), offered when the review runs on one."""
TOOL_NAMES: frozenset[str] = (
    frozenset({"read_file", "read_patch", "grep", "list_files"}) | INDEX_TOOL_NAMES | FORGE_TOOL_NAMES
)

_BINARY_SNIFF = 8192
_MAX_LINE_CHARS = 2000
_MAX_LIST_ENTRIES = 500
_MAX_LIST_SCAN = 20_000
_MAX_GLOB_CHARS = 500
_MAX_NAMED_CHANGES = 20
_SKIP_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
)
_NO_CHECKOUT = "error: no repository checkout; only the patches are available: use read_patch"


def _clip(line: str, cut: bool = False) -> str:
    if len(line) <= _MAX_LINE_CHARS and not cut:
        return line
    return line[:_MAX_LINE_CHARS] + " …[line truncated]"


def _glob_matches(rel: str, glob: str) -> bool:
    glob = glob.strip().removeprefix("./")
    if fnmatch.fnmatchcase(rel, glob) or fnmatch.fnmatchcase(rel, glob.rstrip("/") + "/*"):
        return True
    return "/" not in glob and fnmatch.fnmatchcase(PurePosixPath(rel).name, glob)


def listing_text(entries: list[str]) -> str:
    """What ``list_files`` shows for a directory's entries: sorted, at most ``_MAX_LIST_ENTRIES``."""
    if not entries:
        return "(empty directory)"
    entries = sorted(entries)
    if len(entries) > _MAX_LIST_ENTRIES:
        extra = len(entries) - _MAX_LIST_ENTRIES
        entries = entries[:_MAX_LIST_ENTRIES] + [f"… {extra} more entries not shown"]
    return "\n".join(entries)


def grep_pattern(pattern: str, path_glob: str | None) -> Pattern | str:
    """``grep``'s pattern compiled, or the ``error: ...`` line for a bad pattern or a path glob too long."""
    compiled = Pattern.compile(pattern)
    if not isinstance(compiled, str) and path_glob is not None and len(path_glob) > _MAX_GLOB_CHARS:
        return f"error: path_glob too long ({len(path_glob)} characters; at most {_MAX_GLOB_CHARS})"
    return compiled


class RepoTools:
    """Read files, patches, grep and list a repository checkout (or only patches when root is None)."""

    def __init__(
        self,
        root: Path | None,
        patches: Mapping[str, str],
        *,
        max_read_bytes: int = 256_000,
        max_read_lines: int = 400,
        max_result_chars: int = 60_000,
        max_grep_matches: int = 100,
        max_grep_files: int = 20_000,
        time_budget_s: float = 10.0,
    ) -> None:
        self.sandbox = Sandbox(root) if root is not None else None
        self.root = self.sandbox.root if self.sandbox is not None else None
        self.patches = patches  # the workspace's patch files, read when a tool asks (a Mapping)
        self.max_read_bytes = max_read_bytes
        self.max_read_lines = max_read_lines
        self.max_result_chars = max_result_chars
        self.max_grep_matches = max_grep_matches
        self.max_grep_files = max_grep_files
        self.time_budget_s = time_budget_s

    def _changed_hint(self) -> str:
        names = sorted(self.patches)
        if not names:
            return "no files changed"
        shown = ", ".join(names[:_MAX_NAMED_CHANGES])
        more = len(names) - _MAX_NAMED_CHANGES
        return "changed files are: " + shown + (f" … ({more} more)" if more > 0 else "")

    def _resolve(self, sandbox: Sandbox, path: str, *, allow_root: bool = False) -> Resolved | str:
        target = sandbox.resolve(path, allow_root=allow_root)
        if isinstance(target, Missing):
            hint = "it is a changed file: use read_patch" if target.rel in self.patches else self._changed_hint()
            return f"error: no such file: {target.rel}; {hint}"
        return target

    # ---- tools -------------------------------------------------------------------------

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None, budget: Budget | None = None
    ) -> str:
        """Numbered lines of a file: at most ``max_read_lines`` lines and ``max_result_chars`` per call."""
        if self.sandbox is None:
            return _NO_CHECKOUT
        target = self._resolve(self.sandbox, path)
        if isinstance(target, str):
            return target
        opened = self.sandbox.open(target)
        if isinstance(opened, str):
            return opened
        with os.fdopen(opened.fd, "rb") as fh:
            return self._numbered(fh, opened.info.st_size, opened.rel, start_line, end_line, budget)

    def _numbered(
        self,
        fh: BufferedReader,
        size: int,
        rel: str,
        start_line: int | None,
        end_line: int | None,
        budget: Budget | None,
    ) -> str:
        """Numbered lines of one open file of ``size`` bytes, shown as ``rel``."""
        budget = budget or Budget(self.time_budget_s)
        if size > self.max_read_bytes and start_line is None and end_line is None:
            return f"error: file too large ({size} bytes); read a line range with start_line and end_line"
        if b"\0" in fh.peek(_BINARY_SNIFF)[:_BINARY_SNIFF]:
            return f"error: binary file: {rel}"
        start = start_line if start_line is not None else 1
        if start < 1 or (end_line is not None and end_line < start):
            return "error: start_line must be >= 1 and end_line >= start_line"
        end = min(end_line or start + self.max_read_lines - 1, start + self.max_read_lines - 1)
        out: list[str] = []
        used = total = 0
        follow = ""
        for total, (raw, cut) in enumerate(capped_lines(fh, budget, max_line_bytes=_MAX_LINE_CHARS * 4), start=1):
            if total > end:
                follow = f"… more lines follow; call read_file with start_line={total} to read further"
                break
            if total < start:
                continue
            line = f"{total:>5} | {_clip(decode(raw), cut)}"
            if used + len(line) > self.max_result_chars:
                follow = (
                    f"… output capped at {self.max_result_chars} characters; call read_file with start_line={total}"
                )
                break
            out.append(line)
            used += len(line) + 1
        else:
            if budget.spent:
                follow = f"… stopped at line {total}: the time limit of this call was reached"
        if total == 0 and not follow:
            return f"({rel} is empty)"
        if not out:
            return follow.replace("…", "error:", 1) if follow else f"error: {rel} has only {total} lines"
        return "\n".join(out + ([follow] if follow else []))

    def read_patch(self, path: str) -> str:
        """The numbered patch of a changed file."""
        key = norm(path)
        patch = self.patches.get(key)
        if patch is None:
            return f"error: {key or path!r} is not a changed file; {self._changed_hint()}"
        return patch

    def list_files(self, directory: str = ".", budget: Budget | None = None) -> str:
        """Entries of a directory as repository-relative paths (directories end with '/')."""
        if self.sandbox is None:
            prefix = norm(directory)
            names = [p for p in sorted(self.patches) if prefix in ("", ".") or p.startswith(prefix.rstrip("/") + "/")]
            body = "\n".join(names) if names else "(none)"
            return "(no repository checkout: only the changed files are known)\n" + body
        target = self._resolve(self.sandbox, directory, allow_root=True)
        if isinstance(target, str):
            return target
        opened = self.sandbox.open(target, directory=True)
        if isinstance(opened, str):
            return opened
        base = "" if opened.rel == "." else opened.rel + "/"
        entries: list[str] = []
        try:
            with os.scandir(opened.fd) as scan:
                budget = budget or Budget(self.time_budget_s)
                for count, entry in enumerate(scan):
                    if count >= _MAX_LIST_SCAN or budget.spent:
                        break
                    if entry.name != ".git" and (kind := self._entry_kind(self.sandbox, base + entry.name, entry)):
                        entries.append(base + entry.name + ("/" if kind == "dir" else ""))
        finally:
            os.close(opened.fd)
        return listing_text(entries)

    @staticmethod
    def _entry_kind(sandbox: Sandbox, rel: str, entry: os.DirEntry[str]) -> str:
        """'dir', 'file', or '' for a symlink that leaves the root, loops or dangles (not listed)."""
        if not entry.is_symlink():
            return "dir" if entry.is_dir(follow_symlinks=False) else "file"
        target = sandbox.resolve(rel)
        if not isinstance(target, Resolved):
            return ""
        return "dir" if target.real.is_dir() else "file"

    def grep(self, pattern: str, path_glob: str | None = None, budget: Budget | None = None) -> str:
        """Lines matching a Python regular expression, as 'path:line: text'."""
        compiled = grep_pattern(pattern, path_glob)
        if isinstance(compiled, str):
            return compiled
        budget = budget or Budget(self.time_budget_s)
        if self.sandbox is None:
            return self._grep_patches(compiled, path_glob, budget)
        start = self._grep_start(self.sandbox, path_glob)
        if isinstance(start, str):
            return start
        if start is None:
            return f"no matches for {pattern!r}"
        opened, base = start
        matches: list[str] = []
        stopped = ""
        try:
            for visited, (rel, name, dirfd) in enumerate(self.sandbox.walk(opened, base, _SKIP_DIRS)):
                if visited >= self.max_grep_files or budget.spent:
                    why = "limit reached" if visited >= self.max_grep_files else "time limit reached"
                    stopped = f"search stopped after {visited} files ({why}); results are incomplete"
                    break
                if path_glob and not _glob_matches(rel, path_glob):
                    continue
                file = Sandbox.open_in(dirfd, name, rel)
                if file is None:
                    continue
                with os.fdopen(file.fd, "rb") as fh:
                    stopped = self._grep_file(fh, file, compiled, budget, matches)
                if stopped:
                    break
        finally:
            os.close(opened.fd)
        return self._grep_report(pattern, matches, stopped)

    # ---- grep helpers ------------------------------------------------------------------

    def _grep_start(self, sandbox: Sandbox, path_glob: str | None) -> tuple[Opened, str] | str | None:
        """The directory to walk (the glob's literal directories, checked like any path) and its shown prefix."""
        literal: list[str] = []
        for part in PurePosixPath((path_glob or "").strip()).parts[:-1]:
            if any(c in part for c in "*?[") or part in ("..", "/", ".git"):
                break
            literal.append(part)
        target = self._resolve(sandbox, "/".join(literal) or ".", allow_root=True)
        if isinstance(target, str):
            return None if target.startswith("error: no such file") else target
        opened = sandbox.open(target, directory=True)
        if isinstance(opened, str):
            return None if opened.startswith("error: not a directory") else opened
        return opened, "/".join(literal)

    def _grep_file(self, fh: BinaryIO, file: Opened, pattern: Pattern, budget: Budget, matches: list[str]) -> str:
        """Search one file into ``matches``; a non-empty return says why the search must stop."""
        if file.info.st_size > self.max_read_bytes:
            return ""
        return self._grep_bytes(fh.read(self.max_read_bytes + 1), file.rel, pattern, budget, matches)

    def _grep_bytes(self, raw: bytes, rel: str, pattern: Pattern, budget: Budget, matches: list[str]) -> str:
        """Search one file's content (shown as ``rel``) into ``matches``; non-empty: why the search must stop."""
        if b"\0" in raw[:_BINARY_SNIFF] or len(raw) > self.max_read_bytes:
            return ""
        for line_no, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
            hit = pattern.search(line[: _MAX_LINE_CHARS * 2], budget)
            if hit is None:
                return self._slow(pattern, f"{rel}:{line_no}", budget)
            if hit:
                matches.append(f"{rel}:{line_no}: {_clip(line)[:300]}")
                if len(matches) >= self.max_grep_matches:
                    return f"stopped at {self.max_grep_matches} matches; narrow the pattern or path_glob"
        return ""

    @staticmethod
    def _slow(pattern: Pattern, where: str, budget: Budget) -> str:
        if budget.spent:
            return "search stopped: the time limit of this call was reached; results are incomplete"
        return (
            f"error: the pattern {pattern.pattern!r} took too long on one line ({where}); it backtracks "
            "catastrophically: simplify it (no nested quantifiers such as (a+)+)"
        )

    def _grep_report(self, pattern: str, matches: list[str], stopped: str) -> str:
        if stopped.startswith("error: "):
            return stopped
        if not matches:
            return f"no matches for {pattern!r}" + (f" ({stopped})" if stopped else "")
        return "\n".join(matches + ([f"… {stopped}"] if stopped else []))

    def _grep_patches(self, pattern: Pattern, path_glob: str | None, budget: Budget) -> str:
        matches: list[str] = []
        stopped = ""
        for path in sorted(self.patches):
            if path_glob and not _glob_matches(path, path_glob):
                continue
            for line_no, line in enumerate(self.patches[path].splitlines(), start=1):
                hit = pattern.search(line[: _MAX_LINE_CHARS * 2], budget)
                if hit is None:
                    return self._grep_report(pattern.pattern, matches, self._slow(pattern, f"{path}:{line_no}", budget))
                if hit:
                    matches.append(f"{path}: {_clip(line)[:300]}")
                    if len(matches) >= self.max_grep_matches:
                        stopped = f"stopped at {self.max_grep_matches} matches; narrow the pattern or path_glob"
                        return self._grep_report(pattern.pattern, matches, stopped)
        if matches:
            matches.insert(0, "(no repository checkout: matches in the patches, with their patch line numbers)")
        return self._grep_report(pattern.pattern, matches, stopped)

    # ---- what the model calls ----------------------------------------------------------

    async def bounded(self, work: Callable[[Budget], str], *, deadline: float | None = None) -> str:
        """Run ``work`` in a worker thread with this call's budget (never past ``deadline``, the agent run's);
        on cancellation stop waiting and stop it."""
        budget = Budget(self.time_budget_s, outer_deadline=deadline)
        try:
            return await asyncio.to_thread(work, budget)
        finally:
            budget.stop()
