"""GitSource and DiffFileSource against real temporary repositories and diff files."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codejury.change.sources import MAX_DIFF_BYTES, DiffFileSource, GitSource
from codejury.change.types import ChangeSet
from codejury.errors import InputError, SourceError

_ENV = {
    "GIT_AUTHOR_NAME": "Ada Author",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Author",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **_ENV, "HOME": str(repo.parent), "GIT_CONFIG_GLOBAL": os.devnull}
    out = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args], cwd=repo, env=env, capture_output=True, check=True
    )
    return out.stdout.decode()


def write(repo: Path, path: str, text: str) -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: app.py, AGENTS.md, old_name.py; branch 'feature' (checked out) changes them over two commits."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "app.py", "def main():\n    return 1\n")
    write(repo, "AGENTS.md", "Base instructions\n")
    write(repo, "old_name.py", "".join(f"line {i}\n" for i in range(20)))
    write(repo, "docs/guide.md", "guide\n")
    write(repo, ".gitignore", "*.log\n")
    commit(repo, "Initial commit")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "app.py", "def main():\n    return 2\n")
    write(repo, "AGENTS.md", "Head instructions from the branch\n")
    commit(repo, "Change app")
    git(repo, "mv", "old_name.py", "new_name.py")
    commit(repo, "Rename module\n\nLonger explanation of the rename.")
    # main moves on after the branch point: its change must not appear in the review
    git(repo, "checkout", "-q", "main")
    write(repo, "main_only.py", "x = 1\n")
    commit(repo, "Main moves on")
    git(repo, "checkout", "-q", "feature")
    return repo


def by_path(change: ChangeSet) -> dict[str, object]:
    return {f.path: f for f in change.files}


def test_branch_review_diffs_against_merge_base(repo: Path) -> None:
    with GitSource(repo) as source:
        change = source.load()
        files = by_path(change)
        assert set(files) == {"app.py", "AGENTS.md", "new_name.py"}
        assert change.meta.title == "Rename module"
        assert change.meta.description == "Longer explanation of the rename."
        assert change.meta.commits == ("Change app", "Rename module")
        assert change.meta.author == "Ada Author"
        assert change.meta.base_ref == "main"
        assert change.meta.head_ref == "feature"
        assert change.root is not None
        assert (change.root / "app.py").read_text() == "def main():\n    return 2\n"
        assert not (change.root / "main_only.py").exists()
        root = change.root
    assert not root.exists(), "the exported head tree is removed on exit"


def test_rename_is_detected(repo: Path) -> None:
    with GitSource(repo) as source:
        renamed = next(f for f in source.load().files if f.path == "new_name.py")
    assert renamed.status == "renamed"
    assert renamed.old_path == "old_name.py"
    assert renamed.changed_lines == 0


def test_base_reader_reads_the_base_side(repo: Path) -> None:
    with GitSource(repo) as source:
        change = source.load()
    assert change.base is not None
    assert change.base.read_text("AGENTS.md") == "Base instructions\n"
    assert change.base.read_text("new_name.py") is None
    assert change.base.read_text("missing.txt") is None
    assert change.base.list_dir("") == [".gitignore", "AGENTS.md", "app.py", "old_name.py"]
    assert change.base.list_dir("docs") == ["docs/guide.md"]
    assert change.base.list_dir("nope") == []


def test_working_tree_includes_uncommitted_and_untracked(repo: Path) -> None:
    write(repo, "app.py", "def main():\n    return 3\n")  # unstaged
    write(repo, "staged.py", "staged = True\n")
    git(repo, "add", "staged.py")
    write(repo, "untracked.py", "fresh = 1\n")
    write(repo, "debug.log", "ignored\n")
    index_before = (repo / ".git" / "index").read_bytes()
    with GitSource(repo, working_tree=True) as source:
        change = source.load()
    files = {f.path: f for f in change.files}
    assert set(files) == {"app.py", "AGENTS.md", "new_name.py", "staged.py", "untracked.py"}
    assert files["untracked.py"].status == "added"
    assert "    return 3" in files["app.py"].patch
    assert change.root == repo.resolve()
    assert change.meta.title.startswith("Uncommitted changes")
    assert (repo / ".git" / "index").read_bytes() == index_before, "the real index is untouched"
    assert "untracked.py" in git(repo, "status", "--porcelain")


def test_working_tree_on_default_branch_reviews_uncommitted_changes(repo: Path) -> None:
    git(repo, "checkout", "-q", "main")
    write(repo, "app.py", "def main():\n    return 9\n")
    with GitSource(repo, working_tree=True) as source:
        change = source.load()
    assert [f.path for f in change.files] == ["app.py"]


def test_base_head_range(repo: Path) -> None:
    with GitSource(repo, base="main", head="feature~1") as source:
        change = source.load()
        assert {f.path for f in change.files} == {"app.py", "AGENTS.md"}
        assert change.meta.title == "Change app"
        assert change.meta.commits == ("Change app",)
        assert change.meta.head_ref == "feature~1"
        assert change.root is not None and change.head is not None
        assert sorted(p.name for p in change.root.iterdir()) == ["AGENTS.md", "app.py"]  # the changed files
        assert change.head.lookup("old_name.py") is not None  # the rest: the tools read it from git
        assert change.head.lookup("new_name.py") is None


def test_subdirectory_of_repo_works(repo: Path) -> None:
    with GitSource(repo / "docs") as source:
        assert {f.path for f in source.load().files} == {"app.py", "AGENTS.md", "new_name.py"}


def test_origin_head_is_preferred(repo: Path) -> None:
    git(repo, "update-ref", "refs/remotes/origin/trunk", "feature~1")
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
    with GitSource(repo) as source:
        change = source.load()
    assert change.meta.base_ref == "origin/trunk"
    assert {f.path for f in change.files} == {"new_name.py"}


def test_master_fallback(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "master")
    write(repo, "a.txt", "a\n")
    commit(repo, "one")
    git(repo, "checkout", "-q", "-b", "topic")
    write(repo, "a.txt", "b\n")
    commit(repo, "two")
    with GitSource(repo) as source:
        change = source.load()
    assert change.meta.base_ref == "master"
    assert [f.path for f in change.files] == ["a.txt"]


def test_no_default_branch_is_a_source_error(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "trunk")
    write(repo, "a.txt", "a\n")
    commit(repo, "one")
    with GitSource(repo) as source, pytest.raises(SourceError, match="default branch"):
        source.load()


def test_unknown_ref_is_a_source_error(repo: Path) -> None:
    with GitSource(repo, base="no-such-branch") as source, pytest.raises(SourceError) as info:
        source.load()
    assert "no-such-branch" in str(info.value)
    assert "\n" not in str(info.value)
    with GitSource(repo, head="nope") as source, pytest.raises(SourceError, match="unknown git ref: nope"):
        source.load()


def test_not_a_repository_is_a_source_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with GitSource(plain) as source, pytest.raises(SourceError, match="not a git repository"):
        source.load()


def test_git_missing_is_a_source_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo / "empty-bin"))
    with GitSource(repo) as source, pytest.raises(SourceError, match="git is not installed"):
        source.load()


def test_empty_repository_is_a_source_error(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    with GitSource(repo) as source, pytest.raises(SourceError, match="no commits"):
        source.load()


def test_binary_and_odd_paths(repo: Path) -> None:
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    write(repo, "dir with space/caf\u00e9.txt", "bonjour\n")
    commit(repo, "Add assets")
    with GitSource(repo) as source:
        change = source.load()
        files = {f.path: f for f in change.files}
        assert files["logo.png"].is_binary
        assert "dir with space/caf\u00e9.txt" in files
        assert change.root is not None
        assert (change.root / "dir with space" / "caf\u00e9.txt").read_text(encoding="utf-8") == "bonjour\n"


SAMPLE_DIFF = b"""diff --git a/x.py b/x.py
--- a/x.py
+++ b/x.py
@@ -1 +1,2 @@
 a = 1
+b = 2
"""


def test_diff_file_source_reads_a_file(tmp_path: Path) -> None:
    diff = tmp_path / "change.diff"
    diff.write_bytes(SAMPLE_DIFF)
    change = DiffFileSource(str(diff)).load()
    assert [f.path for f in change.files] == ["x.py"]
    assert change.root is None and change.base is None
    assert change.meta.title == "change.diff"


def test_diff_file_source_reads_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = io.TextIOWrapper(io.BytesIO(SAMPLE_DIFF))
    monkeypatch.setattr(sys, "stdin", fake)
    change = DiffFileSource("-").load()
    assert change.files[0].added_lines == frozenset({2})


def test_diff_file_source_with_root_gives_a_confined_base_reader(tmp_path: Path) -> None:
    diff = tmp_path / "change.diff"
    diff.write_bytes(SAMPLE_DIFF)
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "AGENTS.md").write_text("rules\n")
    (root / "sub" / "f.txt").write_text("f\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    change = DiffFileSource(str(diff), root=root).load()
    assert change.root == root
    assert change.base is not None
    assert change.base.read_text("AGENTS.md") == "rules\n"
    assert change.base.read_text("../secret.txt") is None
    assert change.base.read_text("missing") is None
    assert change.base.list_dir("") == ["AGENTS.md"]
    assert change.base.list_dir("sub") == ["sub/f.txt"]
    assert change.base.list_dir("..") == []


def test_missing_diff_file(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="diff file .*nope.diff not found"):
        DiffFileSource(str(tmp_path / "nope.diff")).load()


def test_oversize_diff_file(tmp_path: Path) -> None:
    big = tmp_path / "big.diff"
    with big.open("wb") as fh:
        fh.truncate(MAX_DIFF_BYTES + 1)
    with pytest.raises(InputError, match=f"{MAX_DIFF_BYTES + 1:,} bytes, over the 20 MB limit"):
        DiffFileSource(str(big)).load()


def test_oversize_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * (MAX_DIFF_BYTES + 5))))
    with pytest.raises(InputError, match="20 MB"):
        DiffFileSource("-").load()


def loose_object(repo: Path, rev: str) -> Path:
    sha = git(repo, "rev-parse", rev).strip()
    return repo / ".git" / "objects" / sha[:2] / sha[2:]


def test_an_unreadable_file_outside_the_change_costs_nothing_until_a_tool_reads_it(repo: Path) -> None:
    from codejury.agents.git_tools import GitRepoTools

    loose_object(repo, "feature:docs/guide.md").unlink()  # `git cat-file -p` now fails on it
    with GitSource(repo) as source:
        change = source.load()
        assert {f.path for f in change.files} == {"app.py", "AGENTS.md", "new_name.py"}
        assert change.left_out == {}  # only the changed files are read up front
        assert change.root is not None and change.head is not None
        assert (change.root / "app.py").read_text() == "def main():\n    return 2\n"
        assert not (change.root / "docs" / "guide.md").exists()
        answer = GitRepoTools(change.head, {}).read_file("docs/guide.md")
        assert answer.startswith("error: no such file: docs/guide.md (unreadable git object)")
        assert change.left_out == {"docs/guide.md": "unreadable git object"}
        notice = change.left_out_notice()
        assert notice is not None and notice.startswith("1 file of the repository left out")
        assert "docs/guide.md (unreadable git object)" in notice


def test_a_file_over_the_blob_cap_is_listed_not_loaded(repo: Path) -> None:
    import tracemalloc

    line = b"x = 'a line of a generated table that nobody reviews by hand'\n"
    with (repo / "table.py").open("wb") as fh:
        for _ in range(9 * 1024 * 1024 // len(line) + 1):
            fh.write(line)
    commit(repo, "Add a 9 MB table")
    tracemalloc.start()
    try:
        with GitSource(repo) as source:
            change = source.load()
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, f"peak {peak} bytes: the file was held whole"
    table = next(f for f in change.files if f.path == "table.py")
    assert table.is_binary and not table.hunks  # git diffs a file over the cap as binary: no 9 MB patch
    assert change.left_out == {"table.py": "too large: 9 MB, over the 8 MB limit"}


def test_a_git_diff_over_the_cap_is_refused_while_it_is_read(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import codejury.change.sources as sources

    monkeypatch.setattr(sources, "MAX_DIFF_BYTES", 200)
    with GitSource(repo) as source, pytest.raises(InputError, match="the diff of main..feature is larger than"):
        source.load()


def test_dev_zero_as_a_diff_file_is_cut_off_at_the_cap() -> None:
    with pytest.raises(InputError, match="diff file /dev/zero is larger than the 20 MB limit"):
        DiffFileSource("/dev/zero").load()


def test_base_side_files_are_capped_while_read(repo: Path, tmp_path: Path) -> None:
    git(repo, "checkout", "-q", "main")
    write(repo, "AGENTS.md", "rules\n" * 200_000)  # 1.2 MB
    commit(repo, "Huge instructions")
    git(repo, "checkout", "-q", "-b", "small-change")
    write(repo, "app.py", "def main():\n    return 3\n")
    commit(repo, "Small change")
    with GitSource(repo, base="main") as source:
        base = source.load().base
        assert base is not None
        with pytest.raises(InputError, match="base-side file AGENTS.md is larger than the 1 MB limit"):
            base.read_text("AGENTS.md")
    root = tmp_path / "root"
    root.mkdir()
    with (root / "CLAUDE.md").open("wb") as fh:
        fh.truncate(2 * 1024 * 1024 * 1024)  # sparse: 2 GB that cost nothing to make
    diff = tmp_path / "change.diff"
    diff.write_bytes(SAMPLE_DIFF)
    file_base = DiffFileSource(str(diff), root=root).load().base
    assert file_base is not None
    with pytest.raises(InputError, match="base-side file CLAUDE.md is larger than the 1 MB limit"):
        file_base.read_text("CLAUDE.md")
