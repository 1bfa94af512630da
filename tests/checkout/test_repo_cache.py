"""The repository cache: bounded, safe with several reviews at once, and never a token on disk."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from codejury_fakes.github import FakeGitHub

from codejury.checkout.cache import Remote, RepoCache, repo_cache
from tests.forges.test_ci_checkout import HEAD, git, upstream

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


@pytest.mark.waits
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


def test_a_later_push_fetches_only_its_new_objects(tmp_path: Path) -> None:
    """The second fetch tells the forge what the cache holds, so it gets the changed file, not the tree again."""
    repo, _, _ = upstream(tmp_path)
    for n in range(300):  # a tree worth sending: 300 files the push does not touch
        (repo / f"data/file{n:03d}.py").parent.mkdir(exist_ok=True)
        (repo / f"data/file{n:03d}.py").write_text(f"VALUE_{n} = {n * 7919 % 10007}  # {'x' * (n % 97)}\n" * 20)
    git(repo, "checkout", "-q", "feature")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "data")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "reports.py").write_text(HEAD + "\n# one more line\n")
    git(repo, "commit", "-qam", "a small push")
    second = git(repo, "rev-parse", "HEAD")
    with FakeGitHub("octo/app") as gh:
        gh.add_token(TOKEN, kind="actions")
        gh.serve_git("octo/app", repo)
        remote = Remote(f"{gh.origin}/octo/app.git", "x-access-token", TOKEN)
        cache = RepoCache(tmp_path / "cache")
        for sha in (first, second):
            side = cache.head_side(remote, sha, ["reports.py"])
            assert side.fetched and side.missing is None
            side.close()
            if sha == first:
                size_first = _bytes(tmp_path / "cache")
        added = _bytes(tmp_path / "cache") - size_first
    assert added < size_first / 10, (added, size_first)


def _bytes(root: Path) -> int:
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
