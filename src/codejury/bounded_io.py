"""Capped reads of everything codejury takes from outside: files, devices, pipes, HTTP bodies.

A size check before a read (``st_size``) is not a cap: a device (``/dev/zero``) or a FIFO
reports 0, and a server may send more than its ``content-length`` says or none at all. Every
helper here stops reading at ``limit + 1`` bytes, so an endless or oversized input costs at most
the cap in memory and time, and raises ``error`` with a one-line message naming what was read
and its cap.

The caps codejury applies live here, so there is one place to see them all.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterable
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


def human_size(n: int) -> str:
    """``n`` bytes as the unit a reader expects (``20 MB``, ``256 KB``, ``17 bytes``)."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            value = round(n / size, 1) if n < 10 * size else round(n / size)
            return f"{value:g} {unit}"
    return f"{n} bytes"


def _too_large(what: str, limit: int, error: type[CodejuryError]) -> CodejuryError:
    return error(f"{what} is larger than the {human_size(limit)} limit; reading stopped there")


def read_stream(stream: IO[bytes], limit: int, what: str, error: type[CodejuryError] = InputError) -> bytes:
    """Read ``stream`` to its end, or raise ``error`` once more than ``limit`` bytes have arrived."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(min(CHUNK_BYTES, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            raise _too_large(what, limit, error)
        chunks.append(chunk)


def read_path(path: Path, limit: int, what: str, error: type[CodejuryError] = InputError) -> bytes:
    """Read the file, device or FIFO at ``path``, capped at ``limit`` bytes.

    A directory or a missing path raises ``error`` too (a cause, not an ``OSError``); a regular
    file whose size is already over the cap is refused before a byte is read.
    """
    try:
        with path.open("rb") as fh:
            info = os.fstat(fh.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise error(f"{what} is a directory")
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                raise error(f"{what} is {info.st_size:,} bytes, over the {human_size(limit)} limit")
            return read_stream(fh, limit, what, error)
    except FileNotFoundError as exc:
        raise error(f"{what} not found") from exc
    except IsADirectoryError as exc:
        raise error(f"{what} is a directory") from exc
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}") from exc


async def read_async(
    chunks: AsyncIterable[bytes], limit: int, what: str, error: type[CodejuryError] = InputError
) -> bytes:
    """Collect an async byte stream (an HTTP body), or raise ``error`` past ``limit`` bytes."""
    parts: list[bytes] = []
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise _too_large(what, limit, error)
        parts.append(chunk)
    return b"".join(parts)


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
