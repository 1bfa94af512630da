"""What every analyzer shares: the contract, the changed lines, the head-side files, a bounded tool run.

An analyzer is any object with ``async analyze(change) -> list[Evidence]`` (``Analyzer``). It
raises ``AnalyzerSkipped`` when it cannot run here (its tool is not installed, the change has no
head-side tree to read): the review shows that as one line and goes on. Any other exception, or
running past its time, is a crash, also one line (``runner.collect_evidence``).

External tools run through ``run_tool``: no shell, a wall-clock limit, output capped while it is
read, and the process killed on timeout or cancellation, so a hung or chatty tool costs at most
its limits. A tool reads the change's files, which its author wrote, so it gets a minimal
environment (``tool_env``): the variables named in ``TOOL_ENV`` and every ``LC_*`` one, plus those
its analyzer names (``inherit``); never a forge token, a webhook secret or a model provider's key.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from codejury.bounded_io import human_size
from codejury.change.types import ChangeSet, FileChange
from codejury.errors import CodejuryError
from codejury.evidence import Evidence

MAX_TOOL_OUTPUT_BYTES = 16 * 1024 * 1024
"""What one analyzer process may print (JSON of its hits) before it is stopped."""
MAX_ANALYZED_FILE_BYTES = 2 * 1024 * 1024
"""A head-side file larger than this is not handed to an analyzer (generated or data, not code)."""
TOOL_TIMEOUT_S = 60.0
"""Wall-clock limit of one analyzer process."""


class AnalyzerSkipped(CodejuryError):
    """The analyzer cannot run on this change here (not installed, nothing to read); never fatal."""


class AnalyzerFailed(CodejuryError):
    """The analyzer ran and failed (bad exit, unreadable output, over its limits); never fatal."""


@runtime_checkable
class Analyzer(Protocol):
    """An analyzer registered through ``codejury_register_analyzers``."""

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        """Return evidence about the change's changed lines (raise ``AnalyzerSkipped`` when it cannot run)."""
        ...


def added_lines(change: ChangeSet) -> dict[str, frozenset[int]]:
    """New-side numbers of the added lines of every file that still exists, by path."""
    return {f.path: f.added_lines for f in change.files if f.status != "deleted" and not f.is_binary and f.hunks}


def added_text(file: FileChange) -> Iterator[tuple[int, str]]:
    """The added lines of ``file``: new-side number and text."""
    for hunk in file.hunks:
        for line in hunk.lines:
            if line.kind == "+" and line.new_no:
                yield line.new_no, line.text


def on_changed_lines(evidence: Iterable[Evidence], changed: Mapping[str, frozenset[int]]) -> list[Evidence]:
    """Keep the evidence whose line range touches an added line of its file."""
    kept: list[Evidence] = []
    for item in evidence:
        lines = changed.get(item.path)
        if lines and any(item.start_line <= n <= item.end_line for n in lines):
            kept.append(item)
    return kept


def head_files(change: ChangeSet, suffixes: Sequence[str] | None = None) -> list[str]:
    """Changed files (with added lines) that exist as regular files inside ``change.root``.

    Paths stay relative to the root; a path that leaves the root (``..``, a symlink out), cannot be
    looked up (a name too long) or names a file over ``MAX_ANALYZED_FILE_BYTES`` is left out.
    ``suffixes`` filters by file name ending.
    """
    if change.root is None:
        return []
    root = change.root.resolve()
    found: list[str] = []
    for file in files_with_additions(change):
        if suffixes is not None and not file.path.lower().endswith(tuple(suffixes)):
            continue
        try:
            target = (root / file.path).resolve()
            if not target.is_relative_to(root) or not target.is_file():
                continue
            if target.stat().st_size > MAX_ANALYZED_FILE_BYTES:
                continue
        except OSError:  # a name too long for this file system: not on disk, so no analyzer reads it
            continue
        found.append(file.path)
    return found


def read_head_text(root: Path, path: str) -> str | None:
    """The text of ``path`` under ``root``; None when it leaves the root, is not a file, is over the size cap
    or cannot be read."""
    base = root.resolve()
    target = (base / path).resolve()
    try:
        if not target.is_relative_to(base) or not target.is_file() or target.stat().st_size > MAX_ANALYZED_FILE_BYTES:
            return None
        return target.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def head_bytes(change: ChangeSet, path: str) -> bytes | None:
    """The head side's bytes of ``path`` (the checkout's, or the head commit's), within the size cap; None when
    they cannot be had."""
    if change.root is not None:
        text = read_head_text(change.root, path)
        return text.encode("utf-8") if text is not None else None
    if change.head is not None:
        found = change.head.lookup(path)
        if found is None:
            return None
        for _, data in change.head.contents([found], max_bytes=MAX_ANALYZED_FILE_BYTES, stop=lambda: False):
            return data
    return None


def files_with_additions(change: ChangeSet) -> list[FileChange]:
    """The changed text files that still exist and have added lines: what an analyzer reads."""
    return [f for f in change.files if f.status != "deleted" and not f.is_binary and f.additions]


def find_program(name: str) -> Path | None:
    """The program ``name`` installed beside this Python interpreter (a wheel's script), else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return beside
    found = shutil.which(name)
    return Path(found) if found else None


TOOL_ENV = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP", "XDG_CACHE_HOME"}
    | {"SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT"}  # what a program needs to start on Windows
)
"""What an analyzer's tool inherits of codejury's environment, besides every ``LC_*`` variable (``tool_env``)."""


def tool_env(inherit: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a tool runs in: of ``environ`` (the process's), only ``TOOL_ENV``, ``LC_*`` and the
    names in ``inherit`` (what this tool needs, e.g. ``PYTHONPATH`` for a Python program)."""
    source = os.environ if environ is None else environ
    wanted = TOOL_ENV | set(inherit)
    return {name: value for name, value in source.items() if name in wanted or name.startswith("LC_")}


@dataclass(frozen=True)
class ToolRun:
    """What a finished tool process returned."""

    returncode: int
    stdout: bytes
    stderr: bytes

    def stderr_line(self) -> str:
        """The last non-blank line of stderr (what a tool says when it fails), shortened."""
        lines = [ln.strip() for ln in self.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1][:200] if lines else "no message"


async def run_tool(
    argv: Sequence[str | Path],
    *,
    cwd: Path | None,
    name: str,
    timeout_s: float = TOOL_TIMEOUT_S,
    limit: int = MAX_TOOL_OUTPUT_BYTES,
    inherit: Iterable[str] = (),
) -> ToolRun:
    """Run ``argv`` without a shell, in a minimal environment (``tool_env(inherit)``); raise ``AnalyzerFailed``
    past ``timeout_s`` or ``limit`` bytes of output."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *map(str, argv),
            cwd=cwd,
            env=tool_env(inherit),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group: a timeout stops whatever it started too
        )
    except OSError as exc:
        raise AnalyzerFailed(f"{name} could not start: {exc.strerror or exc}") from exc
    assert proc.stdout is not None and proc.stderr is not None
    try:
        async with asyncio.timeout(timeout_s):
            stdout, stderr = await asyncio.gather(
                _read_capped(proc.stdout, limit, name), _read_capped(proc.stderr, 64 * 1024, name, keep_tail=True)
            )
            returncode = await proc.wait()
    except TimeoutError as exc:
        raise AnalyzerFailed(f"{name} ran past its {timeout_s:g} s limit and was stopped") from exc
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                await asyncio.shield(proc.wait())
    return ToolRun(returncode, stdout, stderr)


async def _read_capped(stream: asyncio.StreamReader, limit: int, name: str, *, keep_tail: bool = False) -> bytes:
    data = bytearray()
    while chunk := await stream.read(64 * 1024):
        data += chunk
        if len(data) > limit:
            if keep_tail:
                del data[: len(data) - limit]
                continue
            raise AnalyzerFailed(f"{name} printed more than {human_size(limit)}; stopped")
    return bytes(data)
