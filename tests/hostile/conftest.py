"""The hostile-input suite: codejury run as a user runs it, in a subprocess, measured.

Every case asserts what a user (or a CI job) sees: the exit code, a one-line error naming the
cause, no traceback, peak memory (the child's own maximum resident set) and wall time.
Big inputs are generated at test time, never committed.

Linux keeps a process's peak resident set across ``exec``: a child forked straight from a pytest worker
that once held the embedded model (2 GB) reports at least that. So ``codejury`` is started by a small
launcher process (``_LAUNCHER``), whose own peak is a few MB, and the launcher reports its child's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.timing import BUSY_S, limit

MEMORY_LIMIT_MB = 500.0

_LAUNCHER = """
import os, sys
os.setpgrp()  # one process group: killed whole at the deadline
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, rusage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(f"{status} {rusage.ru_maxrss}")
sys.exit(0)
"""
"""Runs ``ARGV[2:]`` as its own child and writes ``wait status, peak RSS in KiB`` of it to the file ARGV[1]."""


@dataclass(frozen=True)
class Run:
    """One finished ``codejury`` process."""

    rc: int
    stdout: str
    stderr: str
    peak_rss_mb: float
    wall_s: float
    timeout_s: float
    """Its kill deadline: what a run that never ends takes."""

    def assert_one_line_error(self, rc: int, *needles: str) -> None:
        """Exit ``rc``, no traceback, and a ``codejury:`` error line naming every needle."""
        assert self.rc == rc, f"exit {self.rc}, wanted {rc}; stderr:\n{self.stderr}"
        assert "Traceback" not in self.stderr, self.stderr
        errors = [line for line in self.stderr.splitlines() if line.startswith("codejury:")]
        assert errors, f"no 'codejury:' error line in stderr:\n{self.stderr}"
        text = "\n".join(errors).lower()
        for needle in needles:
            assert needle.lower() in text, f"{needle!r} not named in: {errors}"

    def assert_bounded(self, wall_s: float, memory_mb: float = MEMORY_LIMIT_MB) -> None:
        """Peak memory under ``memory_mb``; wall time within ``wall_s`` and what a busy machine adds
        (``tests.timing.limit``), which must stay under the run's kill deadline."""
        assert self.peak_rss_mb < memory_mb, f"peak memory {self.peak_rss_mb:.0f} MB >= {memory_mb} MB"
        bound = limit(wall_s, hung_s=self.timeout_s)
        assert self.wall_s < bound, f"took {self.wall_s:.1f} s >= {wall_s} s (+{BUSY_S:g} s for a busy machine)"


def run_codejury(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    stdin_path: Path | None = None,
    timeout_s: float = 120.0,
) -> Run:
    """Run ``python -m codejury.cli ARGS`` and measure it (peak RSS from wait4, not a sampler).

    ``stdin`` bytes are written whole before waiting: keep them small; pass big or endless input
    (a generated file, ``/dev/zero``) as ``stdin_path``.
    """
    base = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN")) and not k.startswith("CI")}
    full_env = {**base, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    stdin_file = stdin_path.open("rb") if stdin_path is not None else None
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f, tempfile.TemporaryDirectory() as tmp:
        measured = Path(tmp) / "measured"
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(measured), sys.executable, "-m", "codejury.cli", *args],
            cwd=cwd,
            env=full_env,
            stdin=stdin_file
            if stdin_file is not None
            else (subprocess.PIPE if stdin is not None else subprocess.DEVNULL),
            stdout=out_f,
            stderr=err_f,
        )
        if stdin is not None and proc.stdin is not None:
            try:
                proc.stdin.write(stdin)
                proc.stdin.close()
            except BrokenPipeError:
                pass
        # The launcher reaps codejury: wait4 gives its own peak resident set, not a sampled guess.
        status, peak_kb = _wait(proc, measured, started + timeout_s)
        wall = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status) if status is not None else -9
        if stdin_file is not None:
            stdin_file.close()
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read().decode("utf-8", "replace"), err_f.read().decode("utf-8", "replace")
    if status is None:
        pytest.fail(f"codejury {' '.join(args)} still running after {timeout_s} s; stderr:\n{err[-2000:]}")
    return Run(proc.returncode, out, err, peak_kb / 1024, wall, timeout_s)


def _wait(launcher: subprocess.Popen[bytes], measured: Path, deadline: float) -> tuple[int | None, int]:
    """(wait status, peak RSS in KiB) of the launcher's child; (None, 0) after killing both at ``deadline``."""
    while launcher.poll() is None:
        if time.monotonic() > deadline:
            os.killpg(launcher.pid, 9)
            launcher.wait()
            return None, 0
        time.sleep(0.02)
    if launcher.returncode != 0:
        pytest.fail(f"the launcher of codejury exited {launcher.returncode}")
    status, peak_kb = measured.read_text().split()
    return int(status), int(peak_kb)
