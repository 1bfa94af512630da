"""The changed files of a head commit that git could not fetch, read one by one through the forge's API.

When the head commit cannot be fetched (no answer, over the cache's cap, a redirect, a refused
token) the per-file analyzers still need the changed files. The forge serves each file's bytes
at a commit (GitHub's contents API as raw, GitLab's repository files ``raw``), through the
review's API client: its configured host alone gets the token, and no redirect is followed.
Bounded: at most ``MAX_API_FILES`` files and ``MAX_API_BYTES`` in all, each read stopped at
``MAX_BLOB_BYTES`` (a larger file is left out as too large, as in a checkout), ``CONCURRENCY`` at
once. The reviewers' tools then see only the changed files (``left_out`` says so).

A changed file the API does not give either (refused, gone, past the bounds) is in
``HeadSide.unread``: the analyzers did not read it, so the review may not approve.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from codejury.bounded_io import MAX_BLOB_BYTES, human_size
from codejury.change.head_tree import UNLISTED
from codejury.checkout.ci import HeadSide
from codejury.errors import CodejuryError

ReadFile = Callable[[str, int], Awaitable[bytes | None]]
"""``read(path, max_bytes)``: the file's bytes at the head commit, None when it is larger than ``max_bytes``;
raises a ``CodejuryError`` (a forge error) when the forge does not give it."""
MAX_API_FILES = 300
MAX_API_BYTES = 64 * 1024 * 1024
CONCURRENCY = 8


async def read_through_api(
    read: ReadFile, paths: Sequence[str], why: str, *, max_files: int = MAX_API_FILES,
    max_bytes: int = MAX_API_BYTES, max_file_bytes: int = MAX_BLOB_BYTES,
) -> HeadSide:  # fmt: skip
    """The changed ``paths`` read through ``read`` into a temporary directory; ``why`` the commit itself is missing."""
    wanted = sorted(set(paths))
    tmp = tempfile.TemporaryDirectory(prefix="codejury-head-")
    root = Path(tmp.name) / "head"
    root.mkdir()
    left_out: dict[str, str] = {}
    unread: dict[str, str] = {p: f"past the {max_files} files read through the API" for p in wanted[max_files:]}
    budget = [max_bytes]
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(path: str) -> None:
        target = (root / path).resolve()
        if not target.is_relative_to(root.resolve()) or target == root.resolve():
            unread[path] = "not a path inside the repository"
            return
        async with gate:
            allowed = min(max_file_bytes, budget[0])
            if allowed <= 0:
                unread[path] = f"past the {human_size(max_bytes)} read through the API"
                return
            budget[0] -= allowed
            try:
                data = await read(path, allowed)
            except CodejuryError as exc:
                budget[0] += allowed
                unread[path] = _one_line(str(exc))
                return
            budget[0] += allowed - (len(data) if data is not None else 0)
        if data is None:
            if allowed < max_file_bytes:
                unread[path] = f"past the {human_size(max_bytes)} read through the API"
            else:
                left_out[path] = f"too large: over the {human_size(max_file_bytes)} limit"
            return
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as exc:
            left_out[path] = f"cannot be written: {exc.strerror or exc}"

    try:
        await asyncio.gather(*(one(p) for p in wanted[:max_files]))
    except BaseException:
        tmp.cleanup()
        raise
    if unread and len(unread) == len(wanted):
        tmp.cleanup()
        reason = _first(unread)
        return HeadSide(
            missing=f"{why}; the forge's API did not give the changed files either ({reason})",
            unread=f"no changed file could be read: {why}, and the forge's API did not give them ({reason})",
        )
    left_out[UNLISTED] = f"{why}; only the changed files were read, through the forge's API"
    left_out.update(unread)
    return HeadSide(root, None, left_out, unread=_unread(unread, why), _tmp=tmp)


def _unread(unread: dict[str, str], why: str) -> str | None:
    if not unread:
        return None
    count = len(unread)
    names = ", ".join(sorted(unread)[:3]) + (f" and {count - 3} more" if count > 3 else "")
    noun = "file" if count == 1 else "files"
    return f"{count} changed {noun} could not be read ({names}): {why}, and the forge's API did not give them " \
        f"({_first(unread)})"  # fmt: skip


def _first(reasons: dict[str, str]) -> str:
    return reasons[sorted(reasons)[0]]


def _one_line(text: str) -> str:
    return " ".join(text.split())[:240] or "no reason given"
