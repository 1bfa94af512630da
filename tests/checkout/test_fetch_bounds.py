"""A head fetch is bounded while it runs: the cap stops the download, a stall its time, a redirect is not followed,
and a failed fetch of a commit is remembered rather than downloaded again at every review."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from codejury_fakes.github import FakeGitHub

from codejury.checkout.cache import Remote, RepoCache
from tests.forges.test_ci_checkout import git, upstream
from tests.timing import FOREVER, limit

TOKEN = "ghs_fetch_bounds_token_0001"
BIG = 6 * 1024 * 1024
"""Incompressible bytes in the head commit: the pack the forge would send is at least this large."""


def big_upstream(tmp_path: Path) -> tuple[Path, str]:
    """``upstream`` with a commit on the feature branch adding ``BIG`` random bytes: (path, head sha)."""
    repo, _, _ = upstream(tmp_path)
    git(repo, "checkout", "-q", "feature")
    (repo / "blob.bin").write_bytes(os.urandom(BIG))
    git(repo, "add", "blob.bin")
    git(repo, "commit", "-qm", "a large file")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    return repo, head


@pytest.fixture
def forge() -> Iterator[FakeGitHub]:
    with FakeGitHub("octo/app") as gh:
        gh.add_token(TOKEN, kind="actions")
        yield gh


def remote(gh: FakeGitHub) -> Remote:
    return Remote(f"{gh.origin}/octo/app.git", "x-access-token", TOKEN)


def packs(gh: FakeGitHub, *, settled_within_s: float = 30.0) -> list[int]:
    """The bytes of each pack answer that reached the client, once the server has counted them: it counts a pack
    when its sending ends, which for a client that hung up is the next write after the hang-up (on a busy
    machine, after the fetch has already returned)."""
    deadline = time.monotonic() + settled_within_s
    while True:
        sent = [r.sent for r in gh.git.requests if r.method == "POST" and r.status == 200]
        if all(n > 0 for n in sent) or time.monotonic() > deadline:
            return sent
        time.sleep(0.05)


def test_the_cap_stops_the_download_as_it_is_passed(forge: FakeGitHub, tmp_path: Path) -> None:
    repo, head = big_upstream(tmp_path)
    forge.serve_git("octo/app", repo)
    forge.git.rate_bytes_s = 4 * 1024 * 1024  # a network: the pack takes seconds, not a burst
    cap = 512 * 1024
    cache = RepoCache(tmp_path / "cache", max_repo_bytes=cap)
    side = cache.head_side(remote(forge), head, ["reports.py"])
    assert side.root is None and side.missing is not None
    assert "the download was stopped at" in side.missing and "over the cache's 512 KB per repository" in side.missing
    [sent] = [n for n in packs(forge) if n > 0] or [0]
    assert cap < sent < 3 * cap, sent  # read past the cap by a few pieces at most, not the whole pack
    assert sent < BIG / 4  # the bytes, not the clock: the whole pack would take 1.5 s at this rate
    assert not list((tmp_path / "cache").glob("*.git"))  # nothing else was in it: removed with the partial pack


def test_a_fetch_that_stalls_ends_at_its_timeout(forge: FakeGitHub, tmp_path: Path) -> None:
    repo, _, head = upstream(tmp_path)
    forge.serve_git("octo/app", repo)
    forge.git.stall("octo/app")
    cache = RepoCache(tmp_path / "cache", fetch_timeout_s=1.5)
    started = time.monotonic()
    side = cache.head_side(remote(forge), head, ["reports.py"])
    assert time.monotonic() - started < limit(1.5, hung_s=FOREVER)  # the stall lasts until the test ends
    assert side.root is None and side.missing is not None and "no answer within 1.5 s" in side.missing


def test_a_redirect_is_not_followed_and_the_token_goes_nowhere_else(forge: FakeGitHub, tmp_path: Path) -> None:
    repo, _, head = upstream(tmp_path)
    forge.serve_git("octo/app", repo)
    forge.serve_git("octo/moved", repo)  # would serve the commit: only a followed redirect reaches it
    forge.git.redirect("octo/app", f"{forge.origin}/octo/moved.git/info/refs?service=git-upload-pack")
    side = RepoCache(tmp_path / "cache").head_side(remote(forge), head, ["reports.py"])
    assert side.root is None and side.missing is not None and "could not be fetched" in side.missing
    assert [r.repo for r in forge.git.requests] == ["octo/app"]
    assert [r.status for r in forge.git.requests] == [302]


def test_a_failed_fetch_is_remembered_per_repository_and_commit(forge: FakeGitHub, tmp_path: Path) -> None:
    repo, _, head = upstream(tmp_path)
    forge.serve_git("octo/app", repo)
    forge.git.stall("octo/app")
    cache = RepoCache(tmp_path / "cache", fetch_timeout_s=1)
    first = cache.head_side(remote(forge), head, ["reports.py"])
    asked = len(forge.git.requests)
    assert first.missing is not None and asked > 0
    second = cache.head_side(remote(forge), head, ["reports.py"])
    assert len(forge.git.requests) == asked  # not downloaded again
    assert second.root is None and second.missing is not None
    assert "no answer within 1 s" in second.missing and "not tried again for 15 min" in second.missing
    # another commit of the repository is not held back by it; and once the time is over, it is tried again
    forge.git.stalled.clear()
    other = git(repo, "rev-parse", "main")
    fetched = cache.head_side(remote(forge), other, ["README.md"])
    fetched.close()
    assert fetched.missing is None
    assert cache.head_side(remote(forge), head, ["reports.py"]).missing is not None  # still remembered
    cache.remember_failure_s = 0
    side = cache.head_side(remote(forge), head, ["reports.py"])
    try:
        assert side.missing is None and side.root is not None and (side.root / "reports.py").is_file()
    finally:
        side.close()


def test_a_repository_grown_past_the_cap_starts_again_for_the_next_commit(forge: FakeGitHub, tmp_path: Path) -> None:
    repo, base, head = upstream(tmp_path)
    forge.serve_git("octo/app", repo)
    cache = RepoCache(tmp_path / "cache")
    cache.head_side(remote(forge), base, ["reports.py"]).close()
    [held] = list((tmp_path / "cache").glob("*.git"))
    (held / "objects" / "pack" / "pack-earlier-pushes.pack").write_bytes(b"\0" * 256 * 1024)  # pushes since
    cache.max_repo_bytes = 128 * 1024  # full: no room left for the next commit
    side = cache.head_side(remote(forge), head, ["reports.py"])
    try:
        assert side.missing is None and side.root is not None and side.fetched
    finally:
        side.close()
    assert git(held, "for-each-ref", "--format=%(refname)") == f"refs/codejury/fetched/{head}"  # base's went
