"""Write chosen blobs of the head commit to disk (the changed files), one at a time, never whole.

The analyzers and the noise filter read the changed files as files under ``ChangeSet.root``;
everything else in the head commit is read from git's object store only when a tool asks
(``head_tree``). The changed files are streamed out of one ``git cat-file --batch``, and every
file that cannot or should not be written is left out and listed with the reason:

- an object git reports missing, or one git dies on (the export starts again after it);
- a file larger than ``MAX_BLOB_BYTES`` (drained from the pipe in chunks, never held whole).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from codejury.bounded_io import MAX_BLOB_BYTES, MAX_GIT_OUTPUT_BYTES, copy_stream, human_size
from codejury.change.git import Git

UNREADABLE = "unreadable git object"
NOT_FETCHED = "not in this partial clone"
NO_LAZY_FETCH = {"GIT_NO_LAZY_FETCH": "1"}
"""What a partial clone lacks stays out: never fetched one object at a time."""

REGULAR_MODES = frozenset({"100644", "100755"})
NO_OBJECT = "0" * 40


@dataclass(frozen=True)
class Blob:
    """One file of a tree: its mode, object id and repository-relative path."""

    mode: str
    sha: str
    path: str


def changed_blobs(git: Git, base: str, head: str) -> list[Blob]:
    """The regular files of ``head`` that differ from ``base`` (a tree diff: no file content is read)."""
    raw = git.run(
        "diff", "--raw", "-z", "--no-abbrev", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-relative",
        "--ignore-submodules=none", base, head, "--", limit=MAX_GIT_OUTPUT_BYTES, what="the list of changed files",
    )  # fmt: skip
    return [
        Blob(e.new_mode, e.new_sha, e.path)
        for e in raw_entries(raw)
        if e.status != "D" and e.new_mode in REGULAR_MODES and e.new_sha != NO_OBJECT
    ]


@dataclass(frozen=True)
class RawEntry:
    """One line of ``git diff --raw``: the file's modes, blob ids, status letter and paths."""

    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    status: str
    old_path: str
    path: str

    @property
    def blobs(self) -> list[str]:
        """The regular-file blobs of both sides (a submodule's commit or a missing side is none)."""
        sides = ((self.old_mode, self.old_sha), (self.new_mode, self.new_sha))
        return [sha for mode, sha in sides if mode in REGULAR_MODES and sha != NO_OBJECT]


def raw_entries(raw: bytes) -> list[RawEntry]:
    """The entries of ``git diff --raw -z --no-abbrev`` output (a rename or copy names both paths)."""
    fields = raw.split(b"\0")
    entries: list[RawEntry] = []
    i = 0
    while i + 1 < len(fields):
        meta = fields[i].decode("ascii", errors="replace").lstrip(":").split(" ")
        if len(meta) != 5:
            i += 1
            continue
        two = meta[4][:1] in ("R", "C")
        names = [f.decode("utf-8", errors="replace") for f in fields[i + 1 : i + (3 if two else 2)]]
        i += 3 if two else 2
        old_path, path = (names[0], names[-1])
        entries.append(RawEntry(meta[0], meta[1], meta[2], meta[3], meta[4][:1], old_path, path))
    return entries


def too_large(size: int, limit: int = MAX_BLOB_BYTES) -> str:
    """Why a file of ``size`` bytes is not read: over ``limit``."""
    return f"too large: {human_size(size)}, over the {human_size(limit)} limit"


def export_blobs(git: Git, blobs: Sequence[Blob], dest: Path, *, limit: int = MAX_BLOB_BYTES) -> dict[str, str]:
    """Write ``blobs`` under ``dest``; return the files left out, with why."""
    dest.mkdir(parents=True, exist_ok=True)
    left_out: dict[str, str] = {}
    resolved_dest = dest.resolve()
    pending: Sequence[Blob] = blobs
    while pending:
        done = _export_batch(git, pending, resolved_dest, limit, left_out)
        if done < len(pending):  # git died on pending[done]: note it and go on after it
            left_out[pending[done].path] = UNREADABLE
            _target(resolved_dest, pending[done].path).unlink(missing_ok=True)
            done += 1
        pending = pending[done:]
    return left_out


def _target(dest: Path, path: str) -> Path:
    return (dest / path).resolve()


def _export_batch(git: Git, blobs: Sequence[Blob], dest: Path, limit: int, left_out: dict[str, str]) -> int:
    """Export ``blobs`` through one ``git cat-file --batch``; return how many were handled."""
    with tempfile.TemporaryFile() as requests:
        requests.write(b"".join(blob.sha.encode() + b"\n" for blob in blobs))
        requests.seek(0)
        env = {**git.env, **NO_LAZY_FETCH}
        with git.popen("cat-file", "--batch", env=env, stdin=requests, stderr=subprocess.DEVNULL) as proc:
            assert proc.stdout is not None
            out = proc.stdout
            for done, blob in enumerate(blobs):
                header = out.readline(256).split()
                if len(header) == 2 and header[1] == b"missing":
                    left_out[blob.path] = UNREADABLE
                    continue
                if len(header) != 3 or not header[2].isdigit():
                    return done
                size = int(header[2])
                try:
                    if size > limit:
                        copy_stream(out, size, None)
                        left_out[blob.path] = too_large(size, limit)
                    else:
                        _write_blob(out, size, dest, blob, left_out)
                    out.read(1)
                except EOFError:
                    return done
            return len(blobs)


def _write_blob(out: IO[bytes], size: int, dest: Path, blob: Blob, left_out: dict[str, str]) -> None:
    """Copy one blob from ``out`` to its place under ``dest`` (drained when it has no place there)."""
    target = _target(dest, blob.path)
    if not target.is_relative_to(dest) or target == dest:
        copy_stream(out, size, None)
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        sink = target.open("wb")
    except OSError as exc:
        copy_stream(out, size, None)
        left_out[blob.path] = f"cannot be written: {exc.strerror or exc}"
        return
    with sink:
        copy_stream(out, size, sink)
    if blob.mode == "100755":
        target.chmod(0o755)
