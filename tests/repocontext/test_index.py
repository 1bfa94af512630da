"""The index: BM25 search, references across files, incremental updates, the commit cache, skips, confinement."""

from __future__ import annotations

import os
from pathlib import Path

from codejury.change.git import Git
from codejury.change.head_tree import HeadTree
from codejury.repocontext import IndexCache, RepoContext, build_index

from .conftest import git, write_repo


def _found(index_paths: list[tuple[str, str]]) -> list[str]:
    return [f"{p}:{n}" for p, n in index_paths]


def test_search_finds_a_function_by_its_name_and_by_words(repo: Path) -> None:
    index = build_index(repo)
    by_name = index.search("unit_price", k=3)
    assert (index.path_of(by_name[0][0]), index.chunks[by_name[0][0]].name) == ("shop/prices.py", "unit_price")
    by_words = index.search("parse http request", k=3)  # the camelCase name split into words
    assert index.chunks[by_words[0][0]].name == "parseHttpRequest"
    assert index.search("nothing_like_this", k=3) == []


def test_find_references_lists_definitions_and_callers_in_other_files(repo: Path) -> None:
    repo_context = RepoContext(repo, use_cache=False)
    text = repo_context.find_references("unit_price")
    assert text.splitlines() == [
        "definitions:",
        "  shop/prices.py:4-6 function unit_price",
        "references (1 files):",
        "  shop/cart.py:1: from shop.prices import unit_price",
        "  shop/cart.py:9: return sum(unit_price(i) for i in self.items)",
    ]
    total = repo_context.find_references("Cart.total")
    assert "  shop/cart.py:8-9 function Cart.total" in total
    assert "  shop/checkout.py:5: amount = cart.total()" in total
    assert repo_context.find_references("no such thing!").startswith("error: not an identifier")


def test_search_code_shows_numbered_lines(repo: Path) -> None:
    text = RepoContext(repo, use_cache=False).search_code("charge card amount", k=1)
    assert text.splitlines()[:3] == [
        "1. shop/checkout.py:9-10 function charge_card (score " + text.split("(score ")[1].split(")")[0] + ")",
        "    9 | def charge_card(amount):",
        "   10 |     return round(amount, 2)",
    ]


def test_an_update_parses_only_the_files_whose_blob_changed(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = build_index(repo, cache=IndexCache(cache))
    assert (first.stats.parsed, first.stats.reused) == (4, 0)
    (repo / "shop/prices.py").write_text("def unit_price(item):\n    return item.gross\n", encoding="utf-8")
    (repo / "shop/new.py").write_text("def refund(order):\n    return unit_price(order)\n", encoding="utf-8")
    second = build_index(repo, cache=IndexCache(cache))
    assert (second.stats.parsed, second.stats.reused) == (2, 3)
    assert second.chunks[second.search("refund order", k=1)[0][0]].name == "refund"
    assert second.search("tax", k=5) == []  # the old content of prices.py is gone from the index
    third = build_index(repo, cache=IndexCache(cache))  # the same content again: its saved index
    assert (third.stats.parsed, third.stats.reused, third.stats.loaded) == (0, 5, False)


def test_the_cache_is_keyed_by_commit(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    first_sha = git(repo, "rev-parse", "HEAD")
    cache = IndexCache(tmp_path / "cache")
    first = build_index(head=HeadTree(Git(repo), first_sha), cache=cache)
    assert (first.stats.parsed, first.stats.loaded) == (4, False)
    assert (cache.root / "commits" / first_sha / "complete").is_file()
    again = build_index(head=HeadTree(Git(repo), first_sha), cache=IndexCache(cache.root))
    assert (again.stats.parsed, again.stats.loaded, again.stats.files) == (0, True, 4)
    (repo / "shop/checkout.py").write_text("def checkout(cart):\n    return 0\n", encoding="utf-8")
    git(repo, "commit", "-q", "-am", "two")
    second_sha = git(repo, "rev-parse", "HEAD")
    tree = HeadTree(Git(repo), second_sha)
    second = build_index(head=tree, cache=IndexCache(cache.root))
    assert (second.stats.parsed, second.stats.reused, second.stats.loaded) == (1, 3, False)
    assert tree.blobs_read == 1  # only the changed blob was read from git
    assert second.read_lines("shop/checkout.py") == ["def checkout(cart):", "    return 0"]


def test_binary_huge_and_unparseable_files_are_skipped_and_counted(repo: Path) -> None:
    (repo / "blob.py").write_bytes(b"\x00\x01binary" * 10)
    (repo / "huge.py").write_text("x = 1\n" * 200_000, encoding="utf-8")
    (repo / "broken.go").write_text(")))] ((( {{{ ]]] " * 30, encoding="utf-8")
    index = build_index(repo)
    assert index.stats.skipped == {"binary": 1, "too large": 1, "unparseable": 1}
    assert index.stats.files == 4
    assert "skipped: 1 binary, 1 too large, 1 unparseable" in index.stats.summary()


def test_symlinks_out_of_the_root_are_never_followed(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def leaked_secret_function():\n    return 'k'\n", encoding="utf-8")
    os.symlink(outside / "secret.py", repo / "shop" / "linked.py")
    os.symlink(outside, repo / "linked_dir")
    repo_context = RepoContext(repo, use_cache=False)
    index = repo_context.index()
    assert index is not None
    assert not any("linked" in p for p in index.paths)
    assert index.search("leaked secret function") == []
    assert "none found" in repo_context.find_references("leaked_secret_function")


def test_an_unusable_cache_never_fails_the_index(repo: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x", encoding="utf-8")
    index = build_index(repo, cache=IndexCache(blocked / "cache"))
    assert index.stats.files == 4
    assert index.stats.cache_errors >= 1


def test_without_a_checkout_the_tools_say_so() -> None:
    context = RepoContext(None)
    assert context.search_code("x").startswith("error: no repository checkout")
    assert context.find_references("x").startswith("error: no repository checkout")
