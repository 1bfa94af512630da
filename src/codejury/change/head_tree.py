"""The head commit as the reviewers' tools see it: listed from git's trees, read from its object store on demand.

A git-mode review never exports the head tree. ``HeadTree`` lists the commit's files once, when a
tool first asks (``git ls-tree -r``: tree objects only, no file content), and reads a file only
when a tool reads or searches it (``git cat-file --batch``). Reads are capped while they happen: a
blob's size comes from its header before any of its content, a blob over the caller's cap is
skipped unread (or drained in chunks), and ``open`` streams a blob through a reader that stops at
its size, so a range of a huge file costs its lines, not the file.

A repository is not always whole: a partial clone whose promisor remote is gone, a missing LFS
object, a corrupt pack. An object that cannot be read costs only its file: the path goes into
``left_out`` with the reason, the tools treat it as missing, and the review names it. Objects a
partial clone does not hold are never fetched one at a time (``GIT_NO_LAZY_FETCH``); they are
listed once, without fetching, when the first blob is read.

Symbolic links and submodules are not followed: the tools see neither (a link's target is text
in the commit, never a path on this machine).
"""

from __future__ import annotations

import io
import tempfile
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from codejury.bounded_io import CHUNK_BYTES, MAX_GIT_OUTPUT_BYTES, copy_stream
from codejury.change.git import Git, first_line
from codejury.change.head_export import NO_LAZY_FETCH, NOT_FETCHED, UNREADABLE
from codejury.errors import CodejuryError, SourceError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

__all__ = ["NOT_FETCHED", "UNREADABLE", "HeadTree", "TreeFile", "Unreadable"]

UNLISTED = "(the rest of the head tree)"
"""The ``left_out`` key when the head tree itself cannot be listed."""
_DRAIN_BYTES = 1024 * 1024
"""A skipped blob up to this size is drained from the pipe; past it a new ``cat-file`` is cheaper."""
_LINK_MODE = "120000"


class Unreadable(SourceError):  # noqa: N818 - a state the tools report, not an error of ours
    """A file of the head tree whose object cannot be read (already recorded in ``left_out``)."""


class _Truncated(CodejuryError):  # noqa: N818
    """``git cat-file`` ended inside a blob: the object is corrupt."""


@dataclass(frozen=True)
class TreeFile:
    """One file of the head commit: its mode, object id and repository-relative path."""

    mode: str
    sha: str
    path: str

    @property
    def is_link(self) -> bool:
        return self.mode == _LINK_MODE


class HeadTree:
    """The files of ``commit``, listed and read on demand; thread-safe (the tools run in worker threads)."""

    def __init__(self, git: Git, commit: str, left_out: MutableMapping[str, str] | None = None) -> None:
        self._git = git
        self.commit = commit
        self.left_out: MutableMapping[str, str] = {} if left_out is None else left_out
        """Files the tools found unreadable (path → why), filled as they read: ``ChangeSet.left_out``."""
        self.blobs_read = 0
        """How many blobs were read whole or in part (a review reads what its tools ask for, not the tree)."""
        self._lock = threading.Lock()
        self._files: dict[str, TreeFile] | None = None
        self._dirs: dict[str, set[str]] = {}
        self._absent: frozenset[str] | None = None

    # ---- listing -------------------------------------------------------------------------

    def lookup(self, path: str) -> TreeFile | None:
        """The file at ``path`` (a clean relative path), or None."""
        return self._listing().get(path)

    def is_dir(self, path: str) -> bool:
        """``path`` is a directory of the commit ('' is its root)."""
        self._listing()
        return path in self._dirs

    def children(self, directory: str) -> list[str]:
        """Names directly inside ``directory`` ('' is the root), sorted; sub-directories end with '/'."""
        self._listing()
        return sorted(self._dirs.get(directory, ()))

    def files_under(self, directory: str) -> list[TreeFile]:
        """Every file below ``directory`` ('' is the root), links included, sorted by path."""
        prefix = f"{directory}/" if directory else ""
        return [f for p, f in sorted(self._listing().items()) if p.startswith(prefix)]

    def _listing(self) -> dict[str, TreeFile]:
        with self._lock:
            if self._files is None:
                self._files = self._list()
                for path in self._files:
                    parts = path.split("/")
                    for depth in range(len(parts)):
                        name = parts[depth] + ("/" if depth < len(parts) - 1 else "")
                        self._dirs.setdefault("/".join(parts[:depth]), set()).add(name)
                self._dirs.setdefault("", set())
            return self._files

    def _list(self) -> dict[str, TreeFile]:
        try:
            result = self._git.result(
                "ls-tree", "-r", "-z", "--full-tree", self.commit, env={**self._git.env, **NO_LAZY_FETCH},
                limit=MAX_GIT_OUTPUT_BYTES, what="the head tree listing",
            )  # fmt: skip
        except CodejuryError as exc:
            self.left_out[UNLISTED] = str(exc)
            return {}
        if result.returncode != 0:
            self.left_out[UNLISTED] = f"the head tree cannot be listed: {first_line(result.stderr)}"
            return {}
        files: dict[str, TreeFile] = {}
        for entry in result.stdout.split(b"\0"):
            info, _, raw_name = entry.partition(b"\t")
            fields = info.split(b" ")
            if len(fields) == 3 and fields[1] == b"blob" and raw_name:
                path = raw_name.decode("utf-8", errors="replace")
                files[path] = TreeFile(fields[0].decode(), fields[2].decode(), path)
        return files

    # ---- reading -------------------------------------------------------------------------

    def lost(self, file: TreeFile, reason: str) -> None:
        """Record ``file`` as unreadable."""
        with self._lock:
            self.left_out.setdefault(file.path, reason)

    def unavailable(self, file: TreeFile) -> str | None:
        """Why ``file`` cannot be read, when that is already known (recorded, or absent from a partial clone)."""
        known = self.left_out.get(file.path)
        if known is not None:
            return known
        if file.sha in self._absent_objects():
            self.lost(file, NOT_FETCHED)
            return NOT_FETCHED
        return None

    @contextmanager
    def open(self, file: TreeFile) -> Iterator[tuple[int, io.BufferedReader]]:
        """``file``'s size and a reader of its content that stops at that size; ``Unreadable`` when it cannot be read.

        The content streams from ``git cat-file``, which is stopped when the block ends: reading a
        few lines of a huge file never reads the rest.
        """
        reason = self.unavailable(file)
        if reason is not None:
            raise Unreadable(reason)
        with self._batch([file]) as out:
            size = _header(out)
            if not isinstance(size, int):
                self.lost(file, UNREADABLE)
                raise Unreadable(UNREADABLE)
            self._count()
            try:
                yield size, io.BufferedReader(_BlobReader(out, size), CHUNK_BYTES)
            except _Truncated:
                self.lost(file, UNREADABLE)
                raise Unreadable(UNREADABLE) from None

    def contents(
        self, files: Sequence[TreeFile], *, max_bytes: int, stop: Callable[[], bool]
    ) -> Generator[tuple[TreeFile, bytes], None, None]:
        """The content of each readable file of ``files`` up to ``max_bytes`` long, in order, until ``stop()``.

        Larger files are skipped unread; unreadable ones are recorded and skipped. One ``git
        cat-file --batch`` serves them all, started again after an object it dies on.
        """
        pending = [f for f in files if self.unavailable(f) is None]
        start = 0
        while start < len(pending):
            with self._batch(pending[start:]) as out:
                for file in pending[start:]:
                    if stop():
                        return
                    start += 1
                    size = _header(out)
                    if not isinstance(size, int):
                        self.lost(file, UNREADABLE)
                        if size is None:
                            break  # git died on it: start again after it
                        continue
                    if size > max_bytes:
                        if size > _DRAIN_BYTES:
                            break  # a new git is cheaper than draining it
                        if not _skip(out, size):
                            self.lost(file, UNREADABLE)
                            break
                        continue
                    data = out.read(size + 1)
                    if len(data) != size + 1:
                        self.lost(file, UNREADABLE)
                        break
                    self._count()
                    yield file, data[:size]

    def _count(self) -> None:
        with self._lock:
            self.blobs_read += 1

    @contextmanager
    def _batch(self, files: Iterable[TreeFile]) -> Iterator[IO[bytes]]:
        with tempfile.TemporaryFile() as requests:
            requests.write(b"".join(f.sha.encode() + b"\n" for f in files))
            requests.seek(0)
            env = {**self._git.env, **NO_LAZY_FETCH}
            with self._git.popen("cat-file", "--batch", env=env, stdin=requests) as proc:
                assert proc.stdout is not None
                yield proc.stdout

    def _absent_objects(self) -> frozenset[str]:
        """The objects of the commit's tree that this clone does not hold (empty unless a partial clone)."""
        with self._lock:
            if self._absent is None:
                self._absent = _absent_objects(self._git, self.commit) if _is_partial_clone(self._git) else frozenset()
            return self._absent


class _BlobReader(io.RawIOBase):
    """The next ``size`` bytes of a ``cat-file --batch`` output; ``_Truncated`` when it ends first."""

    def __init__(self, out: IO[bytes], size: int) -> None:
        self._out = out
        self._left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        want = min(len(view), self._left)
        if want <= 0:
            return 0
        data = self._out.read(want)
        if not data:
            raise _Truncated
        view[: len(data)] = data
        self._left -= len(data)
        return len(data)


def _header(out: IO[bytes]) -> int | str | None:
    """A ``cat-file --batch`` header: the blob's size, ``"missing"``, or None when git died."""
    fields = out.readline(256).split()
    if len(fields) == 2 and fields[1] == b"missing":
        return "missing"
    if len(fields) == 3 and fields[1] == b"blob" and fields[2].isdigit():
        return int(fields[2])
    return None


def _skip(out: IO[bytes], size: int) -> bool:
    try:
        copy_stream(out, size + 1, None)
    except EOFError:
        return False
    return True


def _is_partial_clone(git: Git) -> bool:
    """Whether the repository has a promisor remote (``git clone --filter``)."""
    legacy = git.result("config", "--get", "extensions.partialClone")
    promisor = git.result("config", "--get-regexp", r"^remote\..*\.promisor$")
    return bool(legacy.stdout.strip()) or b"true" in promisor.stdout.lower()


def _absent_objects(git: Git, commit: str) -> frozenset[str]:
    """The objects of ``commit``'s tree that this clone does not hold (listed without fetching).

    Asking ``cat-file`` for an absent object would fetch it from the promisor remote or, with lazy
    fetching off, kill ``cat-file``: the file is known missing before it is asked for.
    """
    env = {**git.env, **NO_LAZY_FETCH}
    result = git.result("rev-list", "--objects", "--no-walk", "--missing=print", commit, env=env)
    if result.returncode != 0:
        return frozenset()
    return frozenset(line[1:].strip() for line in result.stdout.decode().splitlines() if line.startswith("?"))
