"""The repository cache: bounded, safe with several reviews at once, and never a token on disk."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codejury.checkout.cache import Remote, RepoCache, repo_cache
from codejury.testing.github import FakeGitHub
from tests.forges.test_ci_checkout import HEAD, upstream

TOKEN = "ghs_cache_test_token_0001"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[FakeGitHub, Remote, str]]:
    repo, _, head = upstream(tmp_path)
    with FakeGitHub("octo/app") as gh:
        gh.add_token(TOKEN, kind="actions")
        gh.serve_git("octo/app", repo)
        yield gh, Remote(f"{gh.origin}/octo/app.git", "x-access-token", TOKEN), head


def test_two_reviews_of_one_repository_at_once_both_read_the_head(
    served: tuple[FakeGitHub, Remote, str], tmp_path: Path
) -> None:
    gh, remote, head = served
    cache = RepoCache(tmp_path / "cache")
    sides = []

    def review() -> None:
        sides.append(cache.head_side(remote, head, ["reports.py"]))

    threads = [threading.Thread(target=review) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert len(sides) == 2 and all(s.missing is None and s.root is not None for s in sides)
        assert all((s.root / "reports.py").read_text() == HEAD for s in sides if s.root is not None)
        assert sum(1 for r in gh.git.requests if r.service == "git-upload-pack" and r.method == "POST") == 1
    finally:
        for side in sides:
            side.close()
    assert len(list((tmp_path / "cache").glob("*.git"))) == 1


def test_a_repository_over_the_cap_is_removed_and_the_review_says_so(
    served: tuple[FakeGitHub, Remote, str], tmp_path: Path
) -> None:
    _, remote, head = served
    cache = RepoCache(tmp_path / "cache", max_repo_bytes=1024)
    side = cache.head_side(remote, head, ["reports.py"])
    assert side.root is None and side.missing is not None
    assert "over the cache's" in side.missing and "\n" not in side.missing
    assert not list((tmp_path / "cache").glob("*.git"))


def test_the_least_recently_used_repository_goes_first(served: tuple[FakeGitHub, Remote, str], tmp_path: Path) -> None:
    gh, remote, head = served
    other = Remote(remote.url.replace("octo/app", "octo/other"), "x-access-token", TOKEN)
    (tmp_path / "second").mkdir()
    second, _, second_head = upstream(tmp_path / "second")
    gh.serve_git("octo/other", second)
    cache = RepoCache(tmp_path / "cache")
    cache.head_side(remote, head, ["reports.py"]).close()
    first = {p.name for p in (tmp_path / "cache").glob("*.git")}
    cache.max_total_bytes = 1  # every other repository now goes when one is used
    cache.head_side(other, second_head, ["reports.py"]).close()
    left = {p.name for p in (tmp_path / "cache").glob("*.git")}
    assert len(left) == 1 and left.isdisjoint(first)


def test_a_fetch_with_no_answer_is_one_line_within_its_timeout(tmp_path: Path) -> None:
    import socket

    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        cache = RepoCache(tmp_path / "cache", fetch_timeout_s=2)
        side = cache.head_side(Remote(f"http://127.0.0.1:{port}/octo/app.git", "x-access-token", TOKEN), "a" * 40, [])
    assert side.root is None and side.missing is not None
    assert "no answer within 2 s" in side.missing


def test_the_cache_can_be_turned_off_or_moved(tmp_path: Path) -> None:
    assert repo_cache({"CODEJURY_REPO_CACHE": "off"}) is None
    moved = repo_cache({"CODEJURY_REPO_CACHE": str(tmp_path / "elsewhere")})
    assert moved is not None and moved.root == tmp_path / "elsewhere"
