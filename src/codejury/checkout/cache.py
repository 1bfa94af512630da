"""The head commit's tree for a review with no checkout (``--url``, the service, chat commands).

Per repository, a bare repository under the cache directory (``$CODEJURY_CACHE_DIR/repos``),
kept between reviews. A review fetches exactly the commit it reviews (``--depth=1``: that
commit's tree, no history), and a later review of the same repository fetches only what the
forge does not already know it has: the objects of a new push, not the repository again (each
fetched commit keeps a ref, ``KEPT_REFS``, which the next fetch offers the forge). Then
``open_head_side`` hands the analyzers the changed files and the tools the commit, as for a CI
checkout.

The forge token goes to git as an HTTP header through the environment (``GIT_CONFIG_COUNT`` and
``http.extraHeader``): never in a URL, git's argv, the repository's config, a log line or an
error (git's own error output is never shown). Bounded: one fetch has ``FETCH_TIMEOUT_S``; a
repository over ``MAX_REPO_BYTES`` after its fetch is removed and the review goes on diff-only;
past ``MAX_TOTAL_BYTES`` in all, the repositories used longest ago are removed first. A lock file
per repository (``flock``) keeps two workers of one machine from fetching into it at once; each
machine has its own cache.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from codejury.change.git import Git
from codejury.checkout.ci import FETCH_TIMEOUT_S, HeadSide, head_side_of

CACHE_ENV = "CODEJURY_REPO_CACHE"
"""``off`` turns the cache off (reviews without a checkout are then diff-only); a directory moves it."""
MAX_REPO_BYTES = 2 * 1024**3
MAX_TOTAL_BYTES = 10 * 1024**3
_LOCK_TIMEOUT_S = 300.0
KEPT_REFS = "refs/codejury/fetched/"
"""A ref per fetched commit: what the next fetch tells the forge it has, so a new push sends only its new
objects (with no ref, git's negotiation has nothing to offer and the forge sends the whole tree again)."""


@dataclass(frozen=True)
class Remote:
    """Where a repository is fetched from, and the credentials for it (never shown)."""

    url: str
    """The repository's https clone URL on the configured forge."""
    user: str
    """The user name that goes with the token in HTTP Basic (``oauth2`` on GitLab, ``x-access-token`` on GitHub)."""
    token: str

    def __repr__(self) -> str:
        return f"Remote({self.url!r})"


class RepoCache:
    """Bare repositories, one per remote, under ``root``."""

    def __init__(
        self,
        root: Path,
        *,
        max_repo_bytes: int = MAX_REPO_BYTES,
        max_total_bytes: int = MAX_TOTAL_BYTES,
        fetch_timeout_s: float = FETCH_TIMEOUT_S,
    ) -> None:
        self.root = root
        self.max_repo_bytes = max_repo_bytes
        self.max_total_bytes = max_total_bytes
        self.fetch_timeout_s = fetch_timeout_s

    def head_side(self, remote: Remote, head_sha: str, paths: Sequence[str]) -> HeadSide:
        """The tree of ``head_sha`` from ``remote`` (fetched when the cache lacks it), or why not, in one line."""
        where = self.root / (hashlib.sha256(remote.url.encode()).hexdigest()[:20] + ".git")
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            with _locked(where.with_suffix(".lock")):
                side = self._head_side(where, remote, head_sha, paths)
        except (OSError, TimeoutError) as exc:
            return HeadSide(missing=f"the repository cache {self.root} cannot be used ({_reason(exc)})")
        self._evict(keep=where)
        return side

    def _head_side(self, where: Path, remote: Remote, head_sha: str, paths: Sequence[str]) -> HeadSide:
        if not (where / "HEAD").is_file():
            shutil.rmtree(where, ignore_errors=True)
            subprocess.run(
                ["git", "init", "--quiet", "--bare", str(where)], check=True, capture_output=True, timeout=30
            )
        os.utime(where)  # the least recently used go first
        git = Git(where)
        if git.resolve(head_sha) is None:
            problem = self._fetch(git, remote, head_sha)
            if problem is not None:
                return HeadSide(missing=f"the head commit {head_sha[:12]} could not be fetched ({problem})")
            size = _size(where)
            if size > self.max_repo_bytes:
                shutil.rmtree(where, ignore_errors=True)
                return HeadSide(
                    missing=f"the repository is {size // 1024**2} MB, over the cache's "
                    f"{self.max_repo_bytes // 1024**2} MB per repository"
                )
            return head_side_of(git, head_sha, paths, fetched=True)
        return head_side_of(git, head_sha, paths)

    def _fetch(self, git: Git, remote: Remote, commit: str) -> str | None:
        """Fetch ``commit`` alone; None when git succeeded, else why (git's own words are never shown)."""
        env = {**git.env, **_auth_env(remote, git.env)}
        args = ["fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head", "--depth=1"]
        try:
            done = subprocess.run(
                git.command(*args, remote.url, f"{commit}:{KEPT_REFS}{commit}"), cwd=git.cwd, env=env,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                timeout=self.fetch_timeout_s, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return f"no answer within {self.fetch_timeout_s:g} s"
        except OSError as exc:
            return f"git could not run: {_reason(exc)}"
        if done.returncode != 0:
            return f"git fetch exited {done.returncode}"
        return None if git.resolve(commit) is not None else "the remote did not send it"

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


def _auth_env(remote: Remote, base: Mapping[str, str]) -> dict[str, str]:
    """The token as an ``http.extraHeader`` given to git through its environment, after any the caller set."""
    count = int(base.get("GIT_CONFIG_COUNT", "0") or 0)
    basic = base64.b64encode(f"{remote.user}:{remote.token}".encode()).decode()
    return {
        "GIT_CONFIG_COUNT": str(count + 2),
        f"GIT_CONFIG_KEY_{count}": "http.extraHeader",
        f"GIT_CONFIG_VALUE_{count}": f"Authorization: Basic {basic}",
        f"GIT_CONFIG_KEY_{count + 1}": "credential.helper",  # nothing asks, nothing is stored
        f"GIT_CONFIG_VALUE_{count + 1}": "",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",
    }


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
