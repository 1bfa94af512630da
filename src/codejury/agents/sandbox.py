"""Confinement of the read-only tools to one repository root, checked on what is actually opened.

The policy, the same in every tool over a directory (``--working-tree``, ``--diff --repo``; a review
of commits reads git's object store instead, ``git_tools.py``, with the same checks on the name):

- A model-given path is relative: absolute paths, ``~``, drive letters, ``..`` and NUL bytes are
  refused, and anything under a ``.git`` directory is off limits.
- The path is resolved with every symbolic link followed (``os.path.realpath``, strict) and must
  still lie inside the root and outside any ``.git``. A symlink to a file or directory inside the
  root works; one that leaves it, at any depth (``link_root/etc/passwd`` after ``ln -s /
  link_root``), is refused, and so is a symlink loop. A missing path behind a link that leaves the
  root is reported as leaving, not as missing, so the tools tell nothing about outside files.
- The check is repeated on the descriptor, not the name, so a path replaced between the check and
  the open cannot win the race: the resolved path is opened with ``O_NOFOLLOW`` (a last component
  swapped for a symlink fails to open) and the kernel's own path of the opened descriptor
  (``/proc/self/fd`` on Linux, ``F_GETPATH`` on macOS) must lie inside the root, which catches a
  directory swapped for a symlink above it. Where the platform names no descriptor path, the
  descriptor's ``st_dev``/``st_ino`` must equal the checked path's. Files are opened non-blocking,
  so a FIFO cannot hang the open; FIFOs, devices and sockets are then refused.
- Walking (grep) uses ``os.fwalk(follow_symlinks=False)`` from a verified directory descriptor,
  and opens each file relative to its directory's descriptor with ``O_NOFOLLOW``: a symlinked
  directory is never descended (fwalk compares each directory's ``lstat`` with the descriptor it
  opened, so one swapped mid-walk is not entered either) and a symlinked file is never searched.
- Hard links: a hard link inside the root to a file outside it cannot be told apart by any path.
  Regular files with more than one link are refused by every tool. Git never creates hard links
  in a checkout, so this only hides files that a package manager
  hard-linked from its store (pnpm, uv), which are not the change under review.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_DIRECTORY", 0)


def norm(path: str) -> str:
    """A model-given path as a plain relative POSIX string ('./a//b' -> 'a/b')."""
    return str(PurePosixPath(path.strip())) if path.strip() else ""


def checked_path(path: str, *, allow_root: bool = False) -> PurePosixPath | str:
    """A model-given path as a relative path, or the ``error: ...`` refusing it (the checks on the name alone)."""
    raw = path.strip()
    if "\0" in raw:
        return "error: NUL bytes are not allowed in paths"
    rel = PurePosixPath(raw) if raw else PurePosixPath(".")
    if rel.is_absolute() or raw.startswith("~") or re.match(r"^[A-Za-z]:[\\/]", raw):
        return f"error: absolute paths are not allowed: {raw}; use a path relative to the repository root"
    if ".." in rel.parts or ".." in raw.split("\\"):
        return f"error: '..' is not allowed in paths: {raw}"
    if ".git" in rel.parts:
        return f"error: the .git directory is off limits: {raw}"
    if rel == PurePosixPath(".") and not allow_root:
        return "error: give a file path relative to the repository root"
    return rel


@dataclass(frozen=True)
class Resolved:
    """A path that passed the checks: repository-relative and absolute, every symlink followed."""

    rel: str
    real: Path


@dataclass(frozen=True)
class Missing:
    """The path names nothing (inside the root)."""

    rel: str


@dataclass(frozen=True)
class Opened:
    """An open, verified descriptor (the caller closes it) and its stat."""

    fd: int
    info: os.stat_result
    rel: str


class Sandbox:
    """Resolve, check and open paths under ``root``; every refusal is an ``error: ...`` string."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))

    def inside(self, real: Path) -> bool:
        """``real`` (already resolved) is the root or below it, and not in a ``.git`` directory."""
        if real == self.root:
            return True
        return real.is_relative_to(self.root) and ".git" not in real.relative_to(self.root).parts

    def rel(self, real: Path) -> str:
        return real.relative_to(self.root).as_posix() if real != self.root else "."

    def resolve(self, path: str, *, allow_root: bool = False) -> Resolved | Missing | str:
        """Check a model-given path and resolve it inside the root."""
        rel = checked_path(path, allow_root=allow_root)
        if isinstance(rel, str):
            return rel
        raw = path.strip()
        target = self.root.joinpath(*rel.parts)
        try:
            real = Path(os.path.realpath(target, strict=True))
        except OSError as exc:
            try:
                loose = Path(os.path.realpath(target))
            except (OSError, ValueError):
                return f"error: cannot resolve path: {raw}"
            if not self.inside(loose):
                return f"error: path leaves the repository: {raw}"
            if exc.errno == errno.ELOOP:
                return f"error: symbolic link loop: {raw}"
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return Missing(norm(raw))
            return f"error: cannot resolve path: {raw}"
        except ValueError:
            return f"error: cannot resolve path: {raw}"
        if not self.inside(real):
            return f"error: path leaves the repository: {raw}"
        return Resolved(self.rel(real), real)

    # ---- opening -----------------------------------------------------------------------

    def open(self, target: Resolved, *, directory: bool = False) -> Opened | str:
        """Open a checked path and verify the descriptor is still inside the root."""
        try:
            fd = os.open(target.real, _DIR_FLAGS if directory else _FILE_FLAGS)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(target.real):
                return f"error: {target.rel} was replaced by a symbolic link while being opened"
            if exc.errno == errno.ENOTDIR:
                return f"error: not a directory: {target.rel}; use read_file"
            return f"error: cannot open {target.rel}: {exc.strerror}"
        try:
            if not self._descriptor_inside(fd, target.real):
                os.close(fd)
                return f"error: path leaves the repository: {target.rel}"
            info = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            return f"error: cannot open {target.rel}: {exc.strerror}"
        refusal = _refusal(info, target.rel, directory=directory)
        if refusal:
            os.close(fd)
            return refusal
        return Opened(fd, info, target.rel)

    def _descriptor_inside(self, fd: int, expected: Path) -> bool:
        where = descriptor_path(fd)
        if where is not None:
            return self.inside(where)
        # No descriptor path on this platform: the descriptor must be the checked file itself.
        try:
            named = os.stat(expected, follow_symlinks=False)
        except OSError:
            return False
        opened = os.fstat(fd)
        return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino) and self.inside(
            Path(os.path.realpath(expected))
        )

    # ---- walking -----------------------------------------------------------------------

    @staticmethod
    def walk(start: Opened, base: str, skip_dirs: frozenset[str]) -> Iterator[tuple[str, str, int]]:
        """(path shown as ``base/...``, name, directory fd) of every file below ``start``, sorted.

        Symlinked directories are never descended; the directory fd is valid until the next item.
        """
        base = base.strip("/") + "/" if base.strip("/") else ""
        for dirpath, dirnames, filenames, dirfd in os.fwalk(".", dir_fd=start.fd, follow_symlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in skip_dirs)
            prefix = base + ("" if dirpath == "." else dirpath.removeprefix("./") + "/")
            for name in sorted(filenames):
                yield prefix + name, name, dirfd

    @staticmethod
    def open_in(dirfd: int, name: str, rel: str) -> Opened | None:
        """A regular, singly-linked file opened relative to a walked directory (symlinks refused)."""
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dirfd)
        except OSError:
            return None
        info = os.fstat(fd)
        if _refusal(info, rel, directory=False):
            os.close(fd)
            return None
        return Opened(fd, info, rel)


def _refusal(info: os.stat_result, rel: str, *, directory: bool) -> str:
    if directory:
        return "" if stat.S_ISDIR(info.st_mode) else f"error: not a directory: {rel}; use read_file"
    if stat.S_ISDIR(info.st_mode):
        return f"error: {rel} is a directory; use list_files"
    if not stat.S_ISREG(info.st_mode):
        return f"error: not a regular file: {rel}"
    if info.st_nlink > 1:
        return f"error: {rel} is hard-linked (its other name may lie outside the repository); not read"
    return ""


def descriptor_path(fd: int) -> Path | None:
    """The kernel's path of an open descriptor; None where the platform cannot say."""
    if sys.platform == "darwin":
        import fcntl

        raw = fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024))
        return Path(os.fsdecode(raw.split(b"\0", 1)[0]))
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    if not where.startswith("/") or where.endswith(" (deleted)"):
        return Path("/nonexistent/unlinked")  # unlinked or not a file: never inside the root
    return Path(where)
