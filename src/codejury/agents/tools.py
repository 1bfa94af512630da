"""Read-only tools a reviewer uses to read the repository, confined to its root.

Every method returns the text the model sees; a refusal is a string starting with
``error: `` and never an exception, so one bad call costs the model a turn, not the review.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic_ai import Tool

TOOL_NAMES: frozenset[str] = frozenset({"read_file", "read_patch", "grep", "list_files"})

_BINARY_SNIFF = 8192
_MAX_LINE_CHARS = 2000
_MAX_LIST_ENTRIES = 500
_MAX_NAMED_CHANGES = 20
_SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)
_NO_CHECKOUT = "error: no repository checkout; only the patches are available: use read_patch"


def _clip(line: str) -> str:
    return line if len(line) <= _MAX_LINE_CHARS else line[:_MAX_LINE_CHARS] + " …[line truncated]"


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def _norm(path: str) -> str:
    """A model-given path as a plain relative POSIX string ('./a//b' -> 'a/b')."""
    return str(PurePosixPath(path.strip())) if path.strip() else ""


def _glob_matches(rel: str, glob: str) -> bool:
    glob = glob.strip().removeprefix("./")
    if fnmatch.fnmatchcase(rel, glob) or fnmatch.fnmatchcase(rel, glob.rstrip("/") + "/*"):
        return True
    return "/" not in glob and fnmatch.fnmatchcase(PurePosixPath(rel).name, glob)


class RepoTools:
    """Read files, patches, grep and list a repository checkout (or only patches when root is None)."""

    def __init__(
        self,
        root: Path | None,
        patches: Mapping[str, str],
        *,
        max_read_bytes: int = 256_000,
        max_read_lines: int = 400,
        max_grep_matches: int = 100,
        max_grep_files: int = 20_000,
        grep_time_budget_s: float = 10.0,
    ) -> None:
        self.root = root.resolve() if root is not None else None
        self.patches = dict(patches)
        self.max_read_bytes = max_read_bytes
        self.max_read_lines = max_read_lines
        self.max_grep_matches = max_grep_matches
        self.max_grep_files = max_grep_files
        self.grep_time_budget_s = grep_time_budget_s

    # ---- confinement -------------------------------------------------------------------

    def _changed_hint(self) -> str:
        names = sorted(self.patches)
        if not names:
            return "no files changed"
        shown = ", ".join(names[:_MAX_NAMED_CHANGES])
        more = len(names) - _MAX_NAMED_CHANGES
        return "changed files are: " + shown + (f" … ({more} more)" if more > 0 else "")

    def _resolve(self, path: str, *, allow_root: bool = False) -> Path | str:
        """The confined absolute path for ``path``, or an error string."""
        assert self.root is not None
        raw = path.strip()
        rel = PurePosixPath(raw) if raw else PurePosixPath(".")
        if rel.is_absolute() or raw.startswith("~") or re.match(r"^[A-Za-z]:[\\/]", raw):
            return f"error: absolute paths are not allowed: {raw}; use a path relative to the repository root"
        if ".." in rel.parts or ".." in raw.split("\\"):
            return f"error: '..' is not allowed in paths: {raw}"
        if ".git" in rel.parts:
            return f"error: the .git directory is off limits: {raw}"
        if rel == PurePosixPath(".") and not allow_root:
            return "error: give a file path relative to the repository root"
        target = self.root.joinpath(*rel.parts)
        try:
            resolved = target.resolve()
        except (OSError, RuntimeError):
            return f"error: cannot resolve path: {raw}"
        if not resolved.is_relative_to(self.root) or ".git" in resolved.relative_to(self.root).parts:
            return f"error: path leaves the repository: {raw}"
        if not resolved.exists():
            hint = "it is a changed file: use read_patch" if _norm(raw) in self.patches else self._changed_hint()
            return f"error: no such file: {_norm(raw)}; {hint}"
        return resolved

    def _rel(self, path: Path) -> str:
        assert self.root is not None
        return path.relative_to(self.root).as_posix()

    @staticmethod
    def _is_binary(path: Path) -> bool:
        with path.open("rb") as fh:
            return b"\0" in fh.read(_BINARY_SNIFF)

    # ---- tools -------------------------------------------------------------------------

    def read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Numbered lines of a file, at most ``max_read_lines`` per call."""
        if self.root is None:
            return _NO_CHECKOUT
        target = self._resolve(path)
        if isinstance(target, str):
            return target
        if target.is_dir():
            return f"error: {self._rel(target)} is a directory; use list_files"
        if not target.is_file():
            return f"error: not a regular file: {self._rel(target)}"
        size = target.stat().st_size
        ranged = start_line is not None or end_line is not None
        if size > self.max_read_bytes and not ranged:
            return f"error: file too large ({size} bytes); read a line range with start_line and end_line"
        if self._is_binary(target):
            return f"error: binary file: {self._rel(target)}"
        start = start_line if start_line is not None else 1
        if start < 1 or (end_line is not None and end_line < start):
            return "error: start_line must be >= 1 and end_line >= start_line"
        end = min(end_line or start + self.max_read_lines - 1, start + self.max_read_lines - 1)
        out: list[str] = []
        more = False
        total = 0
        with target.open("rb") as fh:
            for total, raw in enumerate(fh, start=1):
                if total > end:
                    more = True
                    break
                if total >= start:
                    out.append(f"{total:>5} | {_clip(_decode(raw))}")
        if total == 0:
            return f"({self._rel(target)} is empty)"
        if not out:
            return f"error: {self._rel(target)} has only {total} lines"
        if more:
            out.append(f"… more lines follow; call read_file with start_line={end + 1} to read further")
        return "\n".join(out)

    def read_patch(self, path: str) -> str:
        """The numbered patch of a changed file."""
        key = _norm(path)
        patch = self.patches.get(key)
        if patch is None:
            return f"error: {key or path!r} is not a changed file; {self._changed_hint()}"
        return patch

    def list_files(self, directory: str = ".") -> str:
        """Entries of a directory as repository-relative paths (directories end with '/')."""
        if self.root is None:
            prefix = _norm(directory)
            names = [p for p in sorted(self.patches) if prefix in ("", ".") or p.startswith(prefix.rstrip("/") + "/")]
            body = "\n".join(names) if names else "(none)"
            return "(no repository checkout: only the changed files are known)\n" + body
        target = self._resolve(directory, allow_root=True)
        if isinstance(target, str):
            return target
        if not target.is_dir():
            return f"error: not a directory: {self._rel(target)}; use read_file"
        entries: list[str] = []
        for child in sorted(target.iterdir(), key=lambda p: p.name):
            if child.name == ".git":
                continue
            rel = child.relative_to(self.root).as_posix()
            entries.append(rel + "/" if child.is_dir() else rel)
        if not entries:
            return "(empty directory)"
        if len(entries) > _MAX_LIST_ENTRIES:
            extra = len(entries) - _MAX_LIST_ENTRIES
            entries = entries[:_MAX_LIST_ENTRIES] + [f"… {extra} more entries not shown"]
        return "\n".join(entries)

    def grep(self, pattern: str, path_glob: str | None = None) -> str:
        """Lines matching a Python regular expression, as 'path:line: text'."""
        try:
            regex = re.compile(pattern)
        except (re.error, RecursionError, OverflowError) as exc:
            return f"error: invalid regular expression {pattern!r}: {exc}"
        if self.root is None:
            return self._grep_patches(regex, path_glob)
        matches: list[str] = []
        stopped = ""
        deadline = time.monotonic() + self.grep_time_budget_s
        for visited, (file, wanted) in enumerate(self._walk(path_glob)):
            if visited >= self.max_grep_files or time.monotonic() > deadline:
                stopped = f"search stopped after {visited} files (limit reached); results are incomplete"
                break
            if not wanted:
                continue
            for line_no, line in self._searchable_lines(file):
                if regex.search(line):
                    matches.append(f"{self._rel(file)}:{line_no}: {_clip(line)[:300]}")
                    if len(matches) >= self.max_grep_matches:
                        break
            if len(matches) >= self.max_grep_matches:
                stopped = f"stopped at {self.max_grep_matches} matches; narrow the pattern or path_glob"
                break
        return self._grep_report(pattern, matches, stopped)

    # ---- grep helpers ------------------------------------------------------------------

    def _grep_report(self, pattern: str, matches: list[str], stopped: str) -> str:
        if not matches:
            return f"no matches for {pattern!r}" + (f" ({stopped})" if stopped else "")
        return "\n".join(matches + ([f"… {stopped}"] if stopped else []))

    def _grep_patches(self, regex: re.Pattern[str], path_glob: str | None) -> str:
        matches: list[str] = []
        for path in sorted(self.patches):
            if path_glob and not _glob_matches(path, path_glob):
                continue
            for line in self.patches[path].splitlines():
                if regex.search(line):
                    matches.append(f"{path}: {_clip(line)[:300]}")
                    if len(matches) >= self.max_grep_matches:
                        stopped = f"stopped at {self.max_grep_matches} matches; narrow the pattern or path_glob"
                        return self._grep_report(regex.pattern, matches, stopped)
        if matches:
            matches.insert(0, "(no repository checkout: matches in the patches, with their patch line numbers)")
        return self._grep_report(regex.pattern, matches, "")

    def _walk(self, path_glob: str | None) -> Iterator[tuple[Path, bool]]:
        """Non-symlink files under the root (or the glob's literal directory), sorted, with glob match."""
        assert self.root is not None
        start = self.root
        if path_glob:
            literal: list[str] = []
            for part in PurePosixPath(path_glob.strip()).parts[:-1]:
                if any(c in part for c in "*?[") or part in ("..", "/"):
                    break
                literal.append(part)
            candidate = self.root.joinpath(*literal)
            if literal and ".git" not in literal and candidate.is_dir() and not candidate.is_symlink():
                start = candidate
        for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for name in sorted(filenames):
                file = Path(dirpath, name)
                if file.is_symlink():
                    continue
                yield file, not path_glob or _glob_matches(self._rel(file), path_glob)

    def _searchable_lines(self, file: Path) -> Iterator[tuple[int, str]]:
        try:
            info = file.stat()
            if not stat.S_ISREG(info.st_mode) or info.st_size > self.max_read_bytes:
                return
            raw = file.read_bytes()
        except OSError:
            return
        if b"\0" in raw[:_BINARY_SNIFF]:
            return
        for i, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
            yield i, line[: _MAX_LINE_CHARS * 2]


def _tool_functions(tools: RepoTools) -> dict[str, Callable[..., str]]:
    """The functions the model calls, with the docstrings and parameter descriptions it reads."""

    def read_file(path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Read a file of the repository (the new side of the change) with numbered lines.

        Returns at most a few hundred lines per call; a note says how to read further.

        Args:
            path: Path relative to the repository root, e.g. 'src/app/models.py'.
            start_line: First line to return (1-based); omit to start at the top.
            end_line: Last line to return; omit to read as far as allowed.
        """
        return tools.read_file(path, start_line, end_line)

    def read_patch(path: str) -> str:
        """Read the patch of one changed file; every line carries its new-side line number.

        Args:
            path: Path of a changed file, exactly as in the change's file list.
        """
        return tools.read_patch(path)

    def grep(pattern: str, path_glob: str | None = None) -> str:
        """Search the repository for lines matching a Python regular expression.

        Returns 'path:line: text' lines; results are capped. Use (?i) for case-insensitive search.

        Args:
            pattern: Python regular expression, e.g. 'def load_config' or 'execute\\(.*%'.
            path_glob: Optional filter on the path, e.g. '*.py' or 'src/api/*'.
        """
        return tools.grep(pattern, path_glob)

    def list_files(directory: str = ".") -> str:
        """List a directory of the repository; directories end with '/'.

        Args:
            directory: Directory relative to the repository root; '.' is the root.
        """
        return tools.list_files(directory)

    return {"read_file": read_file, "read_patch": read_patch, "grep": grep, "list_files": list_files}


def as_agent_tools(tools: RepoTools, allowed: frozenset[str] = TOOL_NAMES) -> list[Tool[Any]]:
    """pydantic-ai tools for the names in ``allowed``, in a stable order."""
    functions = _tool_functions(tools)
    return [
        Tool(
            functions[name],
            takes_ctx=False,
            name=name,
            docstring_format="google",
            require_parameter_descriptions=True,
        )
        for name in sorted(allowed & TOOL_NAMES)
    ]
