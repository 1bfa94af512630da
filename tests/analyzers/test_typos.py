"""typos: a word the repository already uses is one of its terms, not a misspelling; an ordinary misspelling
still is, whether the head tree is on disk or read from git's object store."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codejury.analyzers.base import find_program
from codejury.analyzers.typos import TyposAnalyzer
from codejury.change.git import Git
from codejury.change.head_tree import HeadTree
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence
from tests.analyzers.helpers import make_change

pytestmark = pytest.mark.skipif(find_program("typos") is None, reason="typos has no wheel for this platform")

BASE = "fn start() {}\n"
HEAD = BASE + "// start the linera node before we recieve blocks\nfn run() {}\n"
PROJECT = {
    "Cargo.toml": '[workspace]\nmembers = ["linera-base", "linera-core"]\n',
    "linera-base/src/lib.rs": "pub struct LineraClient;\npub mod linera_base {}\n",
    "README.md": "# Linera\n",
}


def words(evidence: list[Evidence]) -> list[str]:
    """The flagged word of each hit, in order."""
    return [e.message.split("`")[1] for e in evidence]


async def test_a_word_the_repository_uses_as_an_identifier_is_not_a_finding(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"linera-core/src/node.rs": (BASE, HEAD)})
    bare = await TyposAnalyzer().analyze(change)
    assert sorted(words(bare)) == ["linera", "recieve"]  # nothing else in the tree says linera yet
    for path, text in PROJECT.items():
        (tmp_path / "head" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "head" / path).write_text(text, encoding="utf-8")
    evidence = await TyposAnalyzer().analyze(change)
    assert words(evidence) == ["recieve"]
    assert evidence[0].message == "`recieve` is a misspelling of `receive`" and evidence[0].start_line == 2


async def test_uses_on_the_added_lines_or_once_elsewhere_do_not_make_a_term(tmp_path: Path) -> None:
    head = BASE + "// we recieve it\nfn recieve() {}\nfn recieve_all() { recieve(); }\n"
    change = make_change(tmp_path, {"src/net.rs": (BASE, head), "docs/notes.md": ("", "old: recieve\n")})
    (tmp_path / "head" / "src" / "old.rs").write_text("// recieve\n", encoding="utf-8")
    evidence = await TyposAnalyzer().analyze(change)
    assert {(e.path, e.start_line) for e in evidence} == {
        ("src/net.rs", 2), ("src/net.rs", 3), ("src/net.rs", 4), ("docs/notes.md", 1),
    }  # fmt: skip
    (tmp_path / "head" / "src" / "older.rs").write_text("fn recieve_one() {}\n", encoding="utf-8")
    assert await TyposAnalyzer().analyze(change) == []  # now twice outside the change


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


async def test_the_terms_are_counted_in_the_head_commit_when_only_the_changed_files_are_on_disk(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    for path, text in {**PROJECT, "linera-core/src/node.rs": HEAD}.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text, encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "head")
    only_changed = make_change(tmp_path, {"linera-core/src/node.rs": (BASE, HEAD)})  # tmp_path/head: one file
    change = ChangeSet(
        files=only_changed.files, root=only_changed.root, head=HeadTree(Git(repo), git(repo, "rev-parse", "HEAD"))
    )
    assert words(await TyposAnalyzer().analyze(change)) == ["recieve"]
    assert words(await TyposAnalyzer().analyze(only_changed)) == ["linera", "recieve"]
