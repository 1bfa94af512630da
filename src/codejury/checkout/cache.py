"""The head commit's tree for a review with no checkout (``--url``, the service, chat commands).

Per repository, a bare repository under the cache directory (``$CODEJURY_CACHE_DIR/repos``),
kept between reviews. A review fetches exactly the commit it reviews (``--depth=1``: that
commit's tree, no history), and a later review of the same repository fetches only what the
forge does not already know it has: the objects of a new push, not the repository again (each
fetched commit keeps a ref, ``KEPT_REFS``, which the next fetch offers the forge). Then
``open_head_side`` hands the analyzers the changed files and the tools the commit, as for a CI
checkout.

The forge token goes to git as an HTTP header through the environment, scoped to the
repository's URL, with no redirect followed (``checkout.fetch``). Bounded: one fetch has
``FETCH_TIMEOUT_S``, and its download is stopped as soon as the repository would pass
``MAX_REPO_BYTES`` (not measured after it ends); past ``MAX_TOTAL_BYTES`` in all, the repositories
used longest ago are removed first. A fetch that failed (no answer, over the cap, refused,
redirected) is remembered for ``REMEMBER_FAILURE_S``, per repository and commit (a file under
``failed/``): a later review of that commit does not download it again within that time, and
reads its changed files through the forge's API instead (``checkout.api_files``). A lock file
per repository (``flock``) keeps two workers of one machine from fetching into it at once; each
machine has its own cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from codejury.bounded_io import human_size
from codejury.change.git import Git
from codejury.checkout import fetch
from codejury.checkout.ci import HeadSide, head_side_of
from codejury.checkout.fetch import Remote, auth_env, watched_fetch

__all__ = ["CACHE_ENV", "REMEMBER_FAILURE_S", "Remote", "RepoCache", "repo_cache"]

CACHE_ENV = "CODEJURY_REPO_CACHE"
"""``off`` turns the cache off (reviews without a checkout then read the changed files through the forge's API);
a directory moves it."""
MAX_REPO_BYTES = 2 * 1024**3
MAX_TOTAL_BYTES = 10 * 1024**3
REMEMBER_FAILURE_S = 15 * 60.0
"""How long a failed fetch of one commit is remembered (and not tried again)."""
_LOCK_TIMEOUT_S = 300.0
KEPT_REFS = "refs/codejury/fetched/"
"""A ref per fetched commit: what the next fetch tells the forge it has, so a new push sends only its new
objects (with no ref, git's negotiation has nothing to offer and the forge sends the whole tree again)."""


class RepoCache:
    """Bare repositories, one per remote, under ``root``."""

    def __init__(
        self,
        root: Path,
        *,
        max_repo_bytes: int | None = None,
        max_total_bytes: int = MAX_TOTAL_BYTES,
        fetch_timeout_s: float | None = None,
        remember_failure_s: float | None = None,
    ) -> None:
        self.root = root
        self.max_repo_bytes = MAX_REPO_BYTES if max_repo_bytes is None else max_repo_bytes
        self.max_total_bytes = max_total_bytes
        self.fetch_timeout_s = fetch.FETCH_TIMEOUT_S if fetch_timeout_s is None else fetch_timeout_s
        self.remember_failure_s = REMEMBER_FAILURE_S if remember_failure_s is None else remember_failure_s

    def head_side(self, remote: Remote, head_sha: str, paths: Sequence[str]) -> HeadSide:
        """The tree of ``head_sha`` from ``remote`` (fetched when the cache lacks it), or why not, in one line."""
        key = hashlib.sha256(remote.url.encode()).hexdigest()[:20]
        where = self.root / (key + ".git")
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            with _locked(where.with_suffix(".lock")):
                side = self._head_side(where, remote, head_sha, paths, self.root / "failed" / f"{key}-{head_sha}")
        except (OSError, TimeoutError) as exc:
            return HeadSide(missing=f"the repository cache {self.root} cannot be used ({_reason(exc)})")
        self._evict(keep=where)
        return side

    def _head_side(self, where: Path, remote: Remote, head_sha: str, paths: Sequence[str], failed: Path) -> HeadSide:
        if not (where / "HEAD").is_file():
            _init(where)
        os.utime(where)  # the least recently used go first
        git = Git(where)
        if git.resolve(head_sha) is not None:
            return head_side_of(git, head_sha, paths)
        remembered = self._remembered(failed)
        if remembered is not None:
            return HeadSide(missing=remembered)
        held = _size(where)
        if held >= self.max_repo_bytes:  # grown past the cap push by push: start it again for this commit
            _init(where)
            held = _size(where)
        problem = self._fetch(git, remote, head_sha, held)
        if problem is not None:
            why = f"the head commit {head_sha[:12]} could not be fetched ({problem})"
            self._remember(failed, why)
            if not git.result("for-each-ref", "--count=1", KEPT_REFS).stdout.strip():  # nothing to keep
                shutil.rmtree(where, ignore_errors=True)
            return HeadSide(missing=why)
        size = _size(where)  # a pack too small to be seen arriving is measured here
        if size > self.max_repo_bytes:
            shutil.rmtree(where, ignore_errors=True)
            cap = human_size(self.max_repo_bytes)
            why = f"the repository is {human_size(size)}, over the cache's {cap} per repository"
            self._remember(failed, why)
            return HeadSide(missing=why)
        return head_side_of(git, head_sha, paths, fetched=True)

    def _fetch(self, git: Git, remote: Remote, commit: str, held: int) -> str | None:
        """Fetch ``commit`` alone; None when git succeeded, else why (git's own words are never shown)."""
        args = ["--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head", "--depth=1"]
        room = max(0, self.max_repo_bytes - held)
        done = watched_fetch(
            git, [*args, remote.url, f"{commit}:{KEPT_REFS}{commit}"], {**git.env, **auth_env(remote, git.env)},
            timeout_s=self.fetch_timeout_s, max_bytes=room,
        )  # fmt: skip
        if done.over_cap:
            return (
                f"the download was stopped at {human_size(done.received)}, over the cache's "
                f"{human_size(self.max_repo_bytes)} per repository"
            )
        if done.problem is not None:
            return done.problem
        return None if git.resolve(commit) is not None else "the remote did not send it"

    def _remembered(self, failed: Path) -> str | None:
        """Why the fetch of this commit failed, when it failed less than ``remember_failure_s`` ago."""
        try:
            age = time.time() - failed.stat().st_mtime
            if age >= self.remember_failure_s:
                return None
            why = failed.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None
        minutes = max(1, round((self.remember_failure_s - age) / 60))
        return f"{why}; not tried again for {minutes} min"

    def _remember(self, failed: Path, why: str) -> None:
        """Note that the fetch failed (and forget the failures older than ``remember_failure_s``)."""
        try:
            failed.parent.mkdir(exist_ok=True, mode=0o700)
            now = time.time()
            for old in failed.parent.iterdir():
                if now - old.stat().st_mtime >= self.remember_failure_s:
                    old.unlink(missing_ok=True)
            failed.write_text(why + "\n", encoding="utf-8")
        except OSError:
            return

    def _evict(self, keep: Path) -> None:
        """Remove the repositories used longest ago while the cache is over ``max_total_bytes``."""
        try:
            repos = sorted((p for p in self.root.glob("*.git") if p != keep), key=lambda p: p.stat().st_mtime)
            total = sum(_size(p) for p in [keep, *repos])
        except OSError:
            return
        for repo in repos:
            if total <= self.max_total_bytes:
                return
            size = _size(repo)
            with _locked(repo.with_suffix(".lock")):
                shutil.rmtree(repo, ignore_errors=True)
            total -= size


def repo_cache(env: Mapping[str, str]) -> RepoCache | None:
    """The cache ``CODEJURY_REPO_CACHE`` names, in ``env`` or this process's environment (default: ``repos``
    in codejury's cache, ``CODEJURY_CACHE_DIR``); None when ``off``."""
    setting = (env.get(CACHE_ENV) or os.environ.get(CACHE_ENV, "")).strip()
    if setting.lower() in ("off", "0", "false", "no"):
        return None
    if setting:
        return RepoCache(Path(setting).expanduser())
    from codejury.models.weights import cache_root

    return RepoCache(cache_root() / "repos")


def _init(where: Path) -> None:
    """An empty bare repository at ``where`` (whatever was there removed)."""
    shutil.rmtree(where, ignore_errors=True)
    subprocess.run(["git", "init", "--quiet", "--bare", str(where)], check=True, capture_output=True, timeout=30)


@contextmanager
def _locked(lock: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``lock`` (another worker of this machine waits), at most ``_LOCK_TIMEOUT_S``."""
    with lock.open("a") as handle:
        deadline = time.monotonic() + _LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another review held the repository for {_LOCK_TIMEOUT_S:g} s") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _size(path: Path) -> int:
    """The bytes of the regular files under ``path`` (links not followed): one ``stat`` a file, from a scandir
    walk (the type comes with the directory entry), as this runs after every fetch over the whole cache."""
    total = 0
    pending = [str(path)]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
        except FileNotFoundError:  # removed meanwhile (another worker's eviction)
            continue
    return total


def _reason(exc: BaseException) -> str:
    return (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__).splitlines()[0][:160]
