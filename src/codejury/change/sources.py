"""Change sources: a git branch, range or working tree, and a unified diff file (or stdin).

``GitSource`` reviews, inside any git repository:

- by default the current branch (HEAD) against its merge base with the default branch
  (``origin/HEAD``, else ``main``, ``master``, ``origin/main``, ``origin/master``);
- with ``working_tree=True`` the working tree (staged, unstaged and untracked non-ignored
  files) against that merge base;
- with ``base``/``head`` the range ``merge-base(base, head)..head``.

Git runs through ``change.git.Git`` (neutral configuration, every output capped while it is
read). Reviewing commits, only the changed files are written out (into a temporary directory,
for the analyzers); the tools read the rest of the head commit from git's object store when
they ask (``ChangeSet.head``), so the review reads what it needs, never the whole tree. A file
that cannot be read (an unreadable object, a file over the size cap) is listed in
``ChangeSet.left_out`` and missing to the tools, never fatal. Use the source as a context
manager to remove the written files.
Every read from outside (the diff, base-side files, stdin) is capped while it is read, and a
diff from a FIFO, a device or a pipe waits at most ``bounded_io.read_wait_s()`` for its writer
(``bounded_io``).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any

from codejury.bounded_io import MAX_DIFF_BYTES, MAX_REPO_TEXT_BYTES, read_path, read_stdin, read_stream
from codejury.change.content import BINARY, blob_kinds
from codejury.change.diffparse import parse_diff
from codejury.change.git import Git
from codejury.change.head_export import Blob, RawEntry, changed_blobs, export_blobs, raw_entries
from codejury.change.head_tree import HeadTree
from codejury.change.types import BaseReader, ChangeMeta, ChangeSet, ChangeSource, FileChange, FileStatus
from codejury.cli_io import shown_path
from codejury.errors import InputError, SourceError

__all__ = ["MAX_DIFF_BYTES", "DiffFileSource", "FileBaseReader", "GitBaseReader", "GitSource"]

MAX_COMMITS = 50
_DEFAULT_BRANCH_CANDIDATES = ("refs/heads/main", "refs/heads/master", "refs/remotes/origin/main",
                              "refs/remotes/origin/master")  # fmt: skip
_DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv", "-M", "--src-prefix=a/", "--dst-prefix=b/",
               "--no-relative", "--ignore-submodules=none")  # fmt: skip


class GitBaseReader(BaseReader):
    """Reads files as they are in one commit."""

    def __init__(self, git: Git, commit: str) -> None:
        self._git = git
        self._commit = commit

    def read_text(self, path: str) -> str | None:
        path = _clean_repo_path(path)
        if not path:
            return None
        result = self._git.result(
            "cat-file", "blob", f"{self._commit}:{path}", limit=MAX_REPO_TEXT_BYTES, what=f"base-side file {path}"
        )  # fmt: skip
        return result.stdout.decode("utf-8", errors="replace") if result.returncode == 0 else None

    def list_dir(self, directory: str) -> list[str]:
        directory = _clean_repo_path(directory)
        spec = [f"{directory}/"] if directory else []
        result = self._git.result("ls-tree", "-z", "--full-tree", self._commit, "--", *spec)
        if result.returncode != 0:
            return []
        paths: list[str] = []
        for entry in result.stdout.split(b"\0"):
            info, _, name = entry.partition(b"\t")
            if name and info.split(b" ")[1:2] == [b"blob"]:
                paths.append(name.decode("utf-8", errors="replace"))
        return paths


def _clean_repo_path(path: str) -> str:
    return "/".join(part for part in path.replace("\\", "/").split("/") if part not in ("", "."))


class GitSource(ChangeSource):
    """The current branch, the working tree, or a ``base``..``head`` range of a git repository."""

    def __init__(
        self, repo: Path, *, base: str | None = None, head: str | None = None, working_tree: bool = False
    ) -> None:
        self.repo = Path(repo)
        self.base = base
        self.head = head
        self.working_tree = working_tree
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> GitSource:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Remove the exported head tree, if any."""
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def load(self) -> ChangeSet:
        if self.working_tree and self.head:
            raise InputError("--working-tree cannot be combined with --head")
        if not self.repo.is_dir():
            raise SourceError(f"not a directory: {self.repo}")
        probe = Git(self.repo).result("rev-parse", "--show-toplevel")
        if probe.returncode != 0:
            raise SourceError(f"not a git repository: {self.repo}")
        top = Path(probe.stdout.decode("utf-8", errors="replace").strip())
        git = Git(top)
        head_ref = self.head or _current_branch(git)
        head_sha = git.resolve(self.head or "HEAD")
        if head_sha is None:
            if self.head:
                raise SourceError(f"unknown git ref: {self.head}")
            raise SourceError(f"the repository has no commits yet: {top}")
        base_ref = self.base or _default_branch(git)
        base_sha = git.resolve(base_ref)
        if base_sha is None:
            raise SourceError(f"unknown git ref: {base_ref}")
        merge = git.result("merge-base", base_sha, head_sha)
        if merge.returncode != 0:
            raise SourceError(
                f"{base_ref} and {head_ref} have no common ancestor (a shallow clone? fetch more history)"
            )
        merge_base = merge.stdout.decode().strip()
        head_tree = None
        if self.working_tree:
            files = self._working_tree_diff(git, merge_base)
            root, left_out = top, {}
        else:
            files = _content_diff(git, [merge_base, head_sha], cap=_diff_cap(base_ref, head_ref))
            root = self._tempdir() / "head"
            left_out = _export(git, changed_blobs(git, merge_base, head_sha), root)
            head_tree = HeadTree(git, head_sha, left_out)  # the rest of the commit, read when a tool asks
        meta = _meta(git, merge_base, head_sha, base_ref, head_ref, working_tree=self.working_tree)
        meta = replace(meta, repository=repository_name(git, top), change_id=head_ref, head_sha=head_sha)
        return ChangeSet(
            files=files, meta=meta, root=root, base=GitBaseReader(git, merge_base), left_out=left_out, head=head_tree
        )

    def _tempdir(self) -> Path:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="codejury-src-")
        return Path(self._tmp.name)

    def _working_tree_diff(self, git: Git, merge_base: str) -> tuple[FileChange, ...]:
        """Diff the merge base against the working tree, untracked files included.

        Untracked files are staged into a throw-away copy of the index, so the real index
        is never touched and renames between tracked and untracked files are detected.
        """
        index = Path(git.text("rev-parse", "--path-format=absolute", "--git-path", "index"))
        tmp_index = self._tempdir() / "index"
        if index.is_file():
            # copy2 keeps the index's mtime: git's racy-entry check compares it with each entry's
            # mtime, and a fresh mtime would hide a same-size edit made right after a checkout.
            shutil.copy2(index, tmp_index)
        env = {**git.env, "GIT_INDEX_FILE": str(tmp_index)}
        if not index.is_file():
            git.run("read-tree", "HEAD", env=env)
        git.run("add", "--all", "--", ".", env=env)
        files = _content_diff(git, ["--cached", merge_base], env=env, cap=_diff_cap("", "working tree"))
        tmp_index.unlink(missing_ok=True)
        return files


def _content_diff(
    git: Git, revs: list[str], *, cap: dict[str, Any], env: dict[str, str] | None = None
) -> tuple[FileChange, ...]:
    """The change's files, judged by their bytes, never by the change's own ``.gitattributes``.

    The changed files are listed first (a tree diff: no content); a file whose blob on either side is
    binary by its bytes or over the size cap (``content.blob_kinds``) is listed without a text diff,
    and every other file is diffed with ``--text``, so no ``-diff``, ``binary`` or ``diff=driver``
    attribute can turn code into "Binary files differ"."""
    raw = git.run("diff", "--raw", "-z", "--no-abbrev", *_DIFF_FLAGS, *revs, "--", env=env, **cap)
    entries = raw_entries(raw)
    kinds = blob_kinds(git, [sha for e in entries for sha in e.blobs])
    unread = [(e, _unread(e, kinds)) for e in entries]
    bare = {e.path: _bare_change(e, why) for e, why in unread if why is not None}
    excluded = [f":(top,exclude,literal){p}" for e in entries if e.path in bare for p in {e.old_path, e.path}]
    diff = git.run("diff", "--text", *_DIFF_FLAGS, *revs, "--", *excluded, env=env, **cap)
    texts = {f.path: f for f in parse_diff(diff)}
    ordered = [bare.get(e.path) or texts.pop(e.path, None) for e in entries]
    return (*(f for f in ordered if f is not None), *texts.values())


def _unread(entry: RawEntry, kinds: dict[str, str]) -> str | None:
    """Why ``entry`` gets no text diff (too large before binary), or None."""
    reasons = [kinds[sha] for sha in entry.blobs if sha in kinds]
    return next((r for r in reasons if r != BINARY), None) or (reasons[0] if reasons else None)


_STATUS: dict[str, FileStatus] = {"A": "added", "D": "deleted", "R": "renamed", "C": "copied"}


def _bare_change(entry: RawEntry, why: str) -> FileChange:
    """A file listed without a text diff: binary by its bytes, or too large (``why``)."""
    status = _STATUS.get(entry.status, "modified")
    moded = entry.old_mode != entry.new_mode
    return FileChange(
        path=entry.path, old_path=entry.old_path if status in ("renamed", "copied") else None, status=status,
        is_binary=True,
        old_mode=entry.old_mode if moded and status != "added" else None,
        new_mode=entry.new_mode if moded and status != "deleted" else None,
        too_large="" if why == BINARY else why,
    )  # fmt: skip


def _diff_cap(base_ref: str, head_ref: str) -> dict[str, Any]:
    """The cap on git's diff of the change, and the words that name it."""
    what = f"the diff of {base_ref}..{head_ref}" if base_ref else f"the diff of the {head_ref}"
    return {"limit": MAX_DIFF_BYTES, "what": what, "error": InputError}


def _export(git: Git, blobs: list[Blob], dest: Path) -> dict[str, str]:
    try:
        return export_blobs(git, blobs, dest)
    except OSError as exc:
        raise SourceError(f"cannot write the changed files to {dest}: {exc.strerror or exc}") from exc


def _current_branch(git: Git) -> str:
    result = git.result("symbolic-ref", "--quiet", "--short", "HEAD")
    if result.returncode == 0:
        return result.stdout.decode("utf-8", errors="replace").strip()
    short = git.result("rev-parse", "--short", "HEAD")
    return short.stdout.decode().strip() or "HEAD"


def _default_branch(git: Git) -> str:
    """The default branch: origin/HEAD, else main, master, origin/main, origin/master."""
    origin_head = git.result("symbolic-ref", "--quiet", "refs/remotes/origin/HEAD")
    if origin_head.returncode == 0:
        ref = origin_head.stdout.decode("utf-8", errors="replace").strip()
        if git.resolve(ref):
            return ref.removeprefix("refs/remotes/")
    for ref in _DEFAULT_BRANCH_CANDIDATES:
        if git.resolve(ref):
            return ref.removeprefix("refs/heads/").removeprefix("refs/remotes/")
    raise SourceError("cannot find the default branch (no origin/HEAD, main or master); pass --base")


def repository_name(git: Git, top: Path) -> str:
    """``host/path`` of the ``origin`` remote (no scheme, user or password, no ``.git``), else the directory name."""
    result = git.result("remote", "get-url", "origin")
    url = result.stdout.decode("utf-8", errors="replace").strip() if result.returncode == 0 else ""
    if "://" in url:
        url = url.split("://", 1)[1].rpartition("@")[2]  # https://user:token@host/path → host/path
    elif ":" in url and "@" in url.split(":", 1)[0]:
        url = url.split("@", 1)[1].replace(":", "/", 1)  # git@host:group/repo.git → host/group/repo
    name = url.strip("/").removesuffix(".git")
    return name or top.name


def _meta(git: Git, merge_base: str, head: str, base_ref: str, head_ref: str, *, working_tree: bool) -> ChangeMeta:
    fields = git.run("log", "-1", "--no-color", "--format=%s%x00%b%x00%an", head).decode("utf-8", "replace")
    subject, body, author = ([*fields.split("\0"), "", ""])[:3]
    log = git.run("log", "--no-color", "-z", f"-n{MAX_COMMITS}", "--format=%s", f"{merge_base}..{head}")
    commits = tuple(reversed([s for s in log.decode("utf-8", errors="replace").split("\0") if s.strip()]))
    if working_tree:
        subject, body = f"Uncommitted changes on {head_ref}", ""
    return ChangeMeta(
        title=subject.strip(), description=body.strip(), author=author.strip(), commits=commits,
        base_ref=base_ref, head_ref=head_ref,
    )  # fmt: skip


class FileBaseReader(BaseReader):
    """Reads files under a directory, refusing paths that escape it."""

    def __init__(self, root: Path) -> None:
        self._root = root.resolve()

    def _path(self, path: str) -> Path | None:
        target = (self._root / _clean_repo_path(path)).resolve()
        return target if target.is_relative_to(self._root) else None

    def read_text(self, path: str) -> str | None:
        """The file's text; None when it is not there or cannot be read (a name too long for this system)."""
        try:
            target = self._path(path)
            if target is None or not target.is_file():
                return None
            with target.open("rb") as fh:
                data = read_stream(fh, MAX_REPO_TEXT_BYTES, f"base-side file {path}", SourceError)
        except OSError:
            return None
        return data.decode("utf-8", errors="replace")

    def list_dir(self, directory: str) -> list[str]:
        try:
            target = self._path(directory)
            if target is None or not target.is_dir():
                return []
            return sorted(
                p.relative_to(self._root).as_posix()
                for p in target.iterdir()
                if p.is_file() and self._path(p.relative_to(self._root).as_posix()) is not None
            )
        except OSError:
            return []


class DiffFileSource(ChangeSource):
    """A unified diff from a file, or from stdin when ``path`` is ``-``."""

    def __init__(self, path: str, *, root: Path | None = None) -> None:
        self.path = path
        self.root = root

    def load(self) -> ChangeSet:
        data = self._read()
        files = parse_diff(data)
        root = self.root
        if root is not None and not root.is_dir():
            raise SourceError(f"repository directory not found: {root}")
        title = "" if self.path == "-" else Path(self.path).name
        return ChangeSet(
            files=files, meta=ChangeMeta(title=title), root=root,
            base=FileBaseReader(root) if root is not None else None,
        )  # fmt: skip

    def _read(self) -> bytes:
        if self.path == "-":
            return read_stdin(sys.stdin.buffer, MAX_DIFF_BYTES, "the diff on stdin")
        return read_path(Path(self.path), MAX_DIFF_BYTES, f"diff file {shown_path(self.path)}", SourceError)
