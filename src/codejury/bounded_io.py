"""Capped reads of everything codejury takes from outside: files, devices, pipes, HTTP bodies.

A size check before a read (``st_size``) is not a cap: a device (``/dev/zero``) or a FIFO
reports 0, and a server may send more than its ``content-length`` says or none at all. Every
helper here stops reading at ``limit + 1`` bytes, so an endless or oversized input costs at most
the cap in memory and time, and raises ``error`` with a one-line message naming what was read
and its cap.

A silent input is bounded too: a FIFO nobody writes to, a device that never answers, a pipe
whose writer hangs. ``read_path`` opens without waiting for a writer, and it and ``read_stdin``
wait at most ``read_wait_s()`` (``READ_WAIT_S``, or ``CODEJURY_READ_TIMEOUT_S``) for each next
piece of anything that is not a regular file; a terminal (a person typing) is never cut off.

The caps codejury applies live here, so there is one place to see them all.
"""

from __future__ import annotations

import math
import os
import select
import stat
from collections.abc import AsyncIterable, Mapping
from pathlib import Path
from typing import IO

from codejury.errors import CodejuryError, InputError

MAX_DIFF_BYTES = 20 * 1024 * 1024
"""A unified diff (a ``--diff`` file, stdin, or git's own diff of the change)."""
MAX_CONFIG_BYTES = 1024 * 1024
"""A configuration file (``--config``, a base-side ``pyproject.toml``/``.codejury.toml``)."""
MAX_REPO_TEXT_BYTES = 1024 * 1024
"""A base-side text file codejury reads itself (instructions, repository reviewers, rules)."""
MAX_BLOB_BYTES = 8 * 1024 * 1024
"""One file of the head tree exported for the reviewers' tools; a larger one is left out and listed."""
MAX_INDEX_FILE_BYTES = 512 * 1024
"""One source file the repository index chunks; a larger one (generated, minified) is skipped and counted."""
MAX_GIT_OUTPUT_BYTES = 64 * 1024 * 1024
"""Any other git output (tree listings, logs)."""
CHUNK_BYTES = 64 * 1024
READ_WAIT_S = 60.0
"""The longest a read from a pipe, FIFO, socket or device waits for its first or next bytes."""
READ_WAIT_ENV = "CODEJURY_READ_TIMEOUT_S"


def read_wait_s(env: Mapping[str, str] | None = None) -> float:
    """``READ_WAIT_S``, or the seconds ``CODEJURY_READ_TIMEOUT_S`` gives (a bad value is an ``InputError``)."""
    raw = (os.environ if env is None else env).get(READ_WAIT_ENV, "").strip()
    if not raw:
        return READ_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{READ_WAIT_ENV} expects a number of seconds above 0, got {raw[:40]!r}")
    return value


def human_size(n: int) -> str:
    """``n`` bytes as the unit a reader expects (``20 MB``, ``256 KB``, ``17 bytes``)."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            value = round(n / size, 1) if n < 10 * size else round(n / size)
            return f"{value:g} {unit}"
    return f"{n} bytes"


def _too_large(what: str, limit: int, error: type[CodejuryError]) -> CodejuryError:
    return error(f"{what} is larger than the {human_size(limit)} limit; reading stopped there")


class _Capped:
    """The chunks read so far, until more than ``limit`` bytes arrive: then ``error``, naming ``what``."""

    def __init__(self, limit: int, what: str, error: type[CodejuryError]) -> None:
        self.limit, self.what, self.error = limit, what, error
        self.chunks: list[bytes] = []
        self.total = 0

    @property
    def wanted(self) -> int:
        """How much the next read asks for: a chunk, or one byte past the cap at most."""
        return min(CHUNK_BYTES, self.limit + 1 - self.total)

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.total > self.limit:
            raise _too_large(self.what, self.limit, self.error)
        self.chunks.append(chunk)

    def joined(self) -> bytes:
        return b"".join(self.chunks)


def read_stream(stream: IO[bytes], limit: int, what: str, error: type[CodejuryError] = InputError) -> bytes:
    """Read ``stream`` to its end, or raise ``error`` once more than ``limit`` bytes have arrived."""
    kept = _Capped(limit, what, error)
    while chunk := stream.read(kept.wanted):
        kept.add(chunk)
    return kept.joined()


def read_path(
    path: Path, limit: int, what: str, error: type[CodejuryError] = InputError, *, wait_s: float | None = None
) -> bytes:
    """Read the file, device or FIFO at ``path``, capped at ``limit`` bytes.

    A directory or a missing path raises ``error`` too (a cause, not an ``OSError``); a regular
    file whose size is already over the cap is refused before a byte is read. Anything else (a
    FIFO, a device) is opened without waiting for a writer and read waiting at most ``wait_s``
    (default ``read_wait_s()``) for each next piece.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a blocking open of a FIFO waits for a writer
    except FileNotFoundError as exc:
        raise error(f"{what} not found") from exc
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"{what} is a directory")
        if stat.S_ISREG(info.st_mode):
            if info.st_size > limit:
                raise error(f"{what} is {info.st_size:,} bytes, over the {human_size(limit)} limit")
            return read_fd(fd, limit, what, error, wait_s=None)
        return read_fd(fd, limit, what, error, wait_s=read_wait_s() if wait_s is None else wait_s)
    except IsADirectoryError as exc:
        raise error(f"{what} is a directory") from exc
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def read_stdin(stream: IO[bytes], limit: int, what: str, error: type[CodejuryError] = InputError) -> bytes:
    """Read standard input to its end, capped at ``limit`` bytes; from a pipe, FIFO, socket or device
    waiting at most ``read_wait_s()`` for each next piece (a terminal and a regular file never time out)."""
    try:
        fd = stream.fileno()
        waits = not os.isatty(fd) and not stat.S_ISREG(os.fstat(fd).st_mode)
    except (OSError, ValueError):  # no real descriptor (an embedding process, a test runner)
        waits = False
    if not waits:
        return read_stream(stream, limit, what, error)
    try:
        return read_fd(fd, limit, what, error, wait_s=read_wait_s())
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}") from exc


def read_fd(fd: int, limit: int, what: str, error: type[CodejuryError], *, wait_s: float | None) -> bytes:
    """Read descriptor ``fd`` to its end, capped at ``limit`` bytes, waiting at most ``wait_s`` (None: as
    long as a read takes) for each next piece; raises ``error`` past the cap or after a silent ``wait_s``."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)  # hang-up and errors are reported whatever is asked
    kept = _Capped(limit, what, error)
    while True:
        if not poller.poll(None if wait_s is None else wait_s * 1000):
            raise error(f"{what} sent nothing for {wait_s:g} s (no writer, or a stalled one); reading stopped")
        try:
            chunk = os.read(fd, kept.wanted)
        except BlockingIOError:  # a writer is there but sent nothing yet
            continue
        if not chunk:
            return kept.joined()
        kept.add(chunk)


async def read_async(
    chunks: AsyncIterable[bytes], limit: int, what: str, error: type[CodejuryError] = InputError
) -> bytes:
    """Collect an async byte stream (an HTTP body), or raise ``error`` past ``limit`` bytes."""
    kept = _Capped(limit, what, error)
    async for chunk in chunks:
        kept.add(chunk)
    return kept.joined()


def copy_stream(source: IO[bytes], size: int, sink: IO[bytes] | None) -> None:
    """Move exactly ``size`` bytes from ``source`` to ``sink`` (or drop them) in small chunks.

    Raises ``EOFError`` when ``source`` ends first.
    """
    left = size
    while left:
        chunk = source.read(min(CHUNK_BYTES, left))
        if not chunk:
            raise EOFError(f"stream ended {left} bytes early")
        if sink is not None:
            sink.write(chunk)
        left -= len(chunk)
