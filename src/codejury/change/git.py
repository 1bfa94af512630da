"""Running git for a change source: list arguments, neutral configuration, capped output.

User configuration that could change git's output (colour, external diff tools, path quoting)
is switched off, and files larger than ``MAX_BLOB_BYTES`` diff as binary
(``core.bigFileThreshold``), so a huge committed file never becomes a huge text diff. Every
output is read through a cap while it arrives; git is killed when it passes it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from codejury.bounded_io import MAX_BLOB_BYTES, MAX_GIT_OUTPUT_BYTES, read_stream
from codejury.errors import CodejuryError, SourceError

_STDERR_BYTES = 64 * 1024


def first_line(text: bytes | str) -> str:
    """The first non-blank line of an error output, or a placeholder."""
    raw = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    lines = [ln.strip() for ln in raw.splitlines() if ln.strip()]
    return lines[0] if lines else "no error message"


class Git:
    """Runs git in one repository; failures become SourceError."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.env = {
            **os.environ,
            "LC_ALL": "C",
            "GIT_PAGER": "cat",
            "GIT_TERMINAL_PROMPT": "0",
        }
        for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
            self.env.pop(name, None)

    def command(self, *args: str) -> list[str]:
        """The full command line for ``git args``."""
        return [
            "git", "--no-pager", "-c", "core.quotepath=off", "-c", "color.ui=false",
            "-c", f"core.bigFileThreshold={MAX_BLOB_BYTES}", *args,
        ]  # fmt: skip

    def run(
        self,
        *args: str,
        ok: Sequence[int] = (0,),
        env: dict[str, str] | None = None,
        limit: int = MAX_GIT_OUTPUT_BYTES,
        what: str | None = None,
        error: type[CodejuryError] = SourceError,
    ) -> bytes:
        """Run ``git args`` and return stdout; raise SourceError on an unexpected exit status."""
        result = self.result(*args, env=env, limit=limit, what=what, error=error)
        if result.returncode not in ok:
            raise SourceError(f"git {args[0]} failed: {first_line(result.stderr)}")
        return result.stdout

    def result(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        limit: int = MAX_GIT_OUTPUT_BYTES,
        what: str | None = None,
        error: type[CodejuryError] = SourceError,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``git args``; stdout is capped at ``limit`` bytes (``error`` naming ``what`` past it)."""
        with tempfile.TemporaryFile() as err, self.popen(*args, env=env, stderr=err) as proc:
            assert proc.stdout is not None
            try:
                out = read_stream(proc.stdout, limit, what or f"the output of git {args[0]}", error)
            except CodejuryError:
                proc.kill()
                raise
            returncode = proc.wait()
            err.seek(0)
            stderr = err.read(_STDERR_BYTES)
        return subprocess.CompletedProcess(args, returncode, out, stderr)

    @contextmanager
    def popen(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        stdin: IO[bytes] | int = subprocess.DEVNULL,
        stderr: IO[bytes] | int = subprocess.DEVNULL,
    ) -> Iterator[subprocess.Popen[bytes]]:
        """Start ``git args`` with stdout as a pipe; it is killed if still running on exit."""
        try:
            proc = subprocess.Popen(
                self.command(*args), cwd=self.cwd, env=env or self.env, stdin=stdin,
                stdout=subprocess.PIPE, stderr=stderr,
            )  # fmt: skip
        except FileNotFoundError as exc:
            raise SourceError("git is not installed or not on PATH") from exc
        except NotADirectoryError as exc:
            raise SourceError(f"not a directory: {self.cwd}") from exc
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
            if proc.stdout is not None:
                proc.stdout.close()
            proc.wait()

    def text(self, *args: str) -> str:
        return self.run(*args).decode("utf-8", errors="replace").strip()

    def resolve(self, ref: str) -> str | None:
        """The commit id ``ref`` names, or None."""
        result = self.result("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        return result.stdout.decode().strip() if result.returncode == 0 else None
