"""Export the head tree of a commit for the reviewers' tools, one blob at a time, never whole.

The tools read, list and grep the repository as files under ``ChangeSet.root``, so the head
commit is written out into a temporary directory. A repository is not always whole: a partial
clone whose promisor remote is gone, a missing LFS object, a corrupt pack. One file the change
does not touch must not cost the review, so the export streams ``git cat-file --batch`` and
leaves out, and lists with the reason, every file it cannot or should not write:

- an object git reports missing, or one git dies on (the export starts again after it);
- an object a partial clone does not hold (never fetched one by one: the export reads what is
  here; the changed files themselves are read by ``git diff``, which may fetch them);
- a file larger than ``MAX_BLOB_BYTES`` (drained from the pipe in chunks, never held whole).

A left-out file looks missing to the tools; the review names how many and which.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from codejury.bounded_io import MAX_BLOB_BYTES, copy_stream, human_size
from codejury.change.git import Git

UNREADABLE = "unreadable git object"
NOT_FETCHED = "not in this partial clone"


@dataclass(frozen=True)
class _Blob:
    mode: str
    sha: str
    path: str


def export_tree(git: Git, commit: str, dest: Path, *, limit: int = MAX_BLOB_BYTES) -> dict[str, str]:
    """Write the files of ``commit`` under ``dest``; return the files left out, with why."""
    dest.mkdir(parents=True, exist_ok=True)
    blobs = _list_blobs(git, commit)
    left_out: dict[str, str] = {}
    missing = UNREADABLE
    if _is_partial_clone(git):
        missing, absent = NOT_FETCHED, _absent_objects(git, commit)
        left_out.update((blob.path, NOT_FETCHED) for blob in blobs if blob.sha in absent)
        blobs = [blob for blob in blobs if blob.sha not in absent]
    resolved_dest = dest.resolve()
    pending: Sequence[_Blob] = blobs
    while pending:
        done = _export_batch(git, pending, resolved_dest, limit, left_out, missing)
        if done < len(pending):  # git died on pending[done]: note it and go on after it
            left_out[pending[done].path] = UNREADABLE
            _target(resolved_dest, pending[done].path).unlink(missing_ok=True)
            done += 1
        pending = pending[done:]
    return left_out


def _list_blobs(git: Git, commit: str) -> list[_Blob]:
    listing = git.run("ls-tree", "-r", "-z", "--full-tree", commit)
    blobs: list[_Blob] = []
    for entry in listing.split(b"\0"):
        info, _, raw_name = entry.partition(b"\t")
        fields = info.split(b" ")
        if len(fields) == 3 and fields[1] == b"blob" and fields[0] != b"120000":
            blobs.append(_Blob(fields[0].decode(), fields[2].decode(), raw_name.decode("utf-8", errors="replace")))
    return blobs


def _is_partial_clone(git: Git) -> bool:
    """Whether the repository has a promisor remote (``git clone --filter``)."""
    legacy = git.result("config", "--get", "extensions.partialClone")
    promisor = git.result("config", "--get-regexp", r"^remote\..*\.promisor$")
    return bool(legacy.stdout.strip()) or b"true" in promisor.stdout.lower()


def _absent_objects(git: Git, commit: str) -> set[str]:
    """The objects of ``commit``'s tree that this clone does not hold (listed without fetching).

    Asking ``cat-file`` for them one by one would fetch each from the promisor remote, or, with
    lazy fetching off, kill ``cat-file`` once per absent object.
    """
    result = git.result("rev-list", "--objects", "--no-walk", "--missing=print", commit)
    if result.returncode != 0:
        return set()
    return {line[1:].strip() for line in result.stdout.decode().splitlines() if line.startswith("?")}


def _target(dest: Path, path: str) -> Path:
    return (dest / path).resolve()


def _export_batch(
    git: Git, blobs: Sequence[_Blob], dest: Path, limit: int, left_out: dict[str, str], missing: str
) -> int:
    """Export ``blobs`` through one ``git cat-file --batch``; return how many were handled."""
    with tempfile.TemporaryFile() as requests:
        requests.write(b"".join(blob.sha.encode() + b"\n" for blob in blobs))
        requests.seek(0)
        env = {**git.env, "GIT_NO_LAZY_FETCH": "1"}  # what a partial clone lacks stays out: no fetch per file
        with git.popen("cat-file", "--batch", env=env, stdin=requests, stderr=subprocess.DEVNULL) as proc:
            assert proc.stdout is not None
            out = proc.stdout
            for done, blob in enumerate(blobs):
                header = out.readline(256).split()
                if len(header) == 2 and header[1] == b"missing":
                    left_out[blob.path] = missing
                    continue
                if len(header) != 3 or not header[2].isdigit():
                    return done
                size = int(header[2])
                try:
                    if size > limit:
                        copy_stream(out, size, None)
                        left_out[blob.path] = f"too large: {human_size(size)}, over the {human_size(limit)} limit"
                    else:
                        _write_blob(out, size, dest, blob, left_out)
                    out.read(1)
                except EOFError:
                    return done
            return len(blobs)


def _write_blob(out: IO[bytes], size: int, dest: Path, blob: _Blob, left_out: dict[str, str]) -> None:
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
