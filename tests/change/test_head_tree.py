"""A review of commits reads what it needs from git: the changed files up front, the rest when a tool asks.

Real repositories with objects lost the ways real ones lose them (a loose object deleted, one cut
short, a partial clone whose promisor remote is gone); the tools over the commit
(``GitRepoTools``) answer as over a checkout, and an unreadable file costs only that file.
"""

from __future__ import annotations

import shutil
import tracemalloc
from pathlib import Path

import pytest

from codejury.agents.git_tools import GitRepoTools
from codejury.change.sources import GitSource
from codejury.change.types import ChangeSet
from tests.change.test_sources import commit, git, write


def loose_object(repo: Path, rev: str) -> Path:
    sha = git(repo, "rev-parse", rev).strip()
    return repo / ".git" / "objects" / sha[:2] / sha[2:]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: app.py, lib/ (three modules), docs/guide.md, a vendored node_modules file and two links;
    feature (checked out) changes app.py."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "app.py", "from lib import words\n\ndef main():\n    return 1\n")
    for name in ("a", "b", "c"):
        write(repo, f"lib/{name}.py", f"def {name}():\n    return 'needle {name}'\n")
    write(repo, "docs/guide.md", "guide\nneedle in the docs\n")
    write(repo, "web/node_modules/dep/index.js", "needle vendored\n")
    (repo / "link_etc").symlink_to("/etc")
    (repo / "link_app").symlink_to("app.py")
    commit(repo, "base")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "app.py", "from lib import words\n\ndef main():\n    return 2\n")
    commit(repo, "change main")
    return repo


def load(repo: Path, source: GitSource) -> tuple[ChangeSet, GitRepoTools]:
    change = source.load()
    assert change.head is not None
    return change, GitRepoTools(change.head, {f.path: "(patch)" for f in change.files})


def test_only_the_changed_files_are_written_and_nothing_else_is_read_up_front(repo: Path) -> None:
    with GitSource(repo, base="main") as source:
        change, tools = load(repo, source)
        assert change.root is not None and change.head is not None
        written = sorted(p.relative_to(change.root).as_posix() for p in change.root.rglob("*") if p.is_file())
        assert written == ["app.py"]
        assert change.head.blobs_read == 0
        assert tools.read_file("lib/b.py") == "    1 | def b():\n    2 |     return 'needle b'"
        assert change.head.blobs_read == 1
        assert change.left_out == {}


def test_the_tools_answer_as_over_a_checkout(repo: Path) -> None:
    with GitSource(repo, base="main") as source:
        _, tools = load(repo, source)
        assert tools.list_files() == "app.py\ndocs/\nlib/\nweb/"  # links are not listed
        assert tools.list_files("lib") == "lib/a.py\nlib/b.py\nlib/c.py"
        assert tools.read_file("app.py", 4, 4) == "    4 |     return 2"
        assert tools.read_file("lib") == "error: lib is a directory; use list_files"
        assert tools.list_files("app.py") == "error: not a directory: app.py; use read_file"
        assert tools.read_file("nope.py").startswith("error: no such file: nope.py; changed files are: app.py")
        assert tools.grep("needle") == "docs/guide.md:2: needle in the docs\n" + "\n".join(
            f"lib/{n}.py:2:     return 'needle {n}'" for n in "abc"
        )  # node_modules is skipped, as over a checkout
        assert tools.grep("needle", "lib/*") == "\n".join(f"lib/{n}.py:2:     return 'needle {n}'" for n in "abc")
        assert tools.grep("needle", "web/node_modules/dep/*") == "web/node_modules/dep/index.js:1: needle vendored"
        assert tools.grep("needle", "missing/dir/*") == "no matches for 'needle'"


@pytest.mark.parametrize(
    "path",
    ["../repo/app.py", "/etc/passwd", "~/x", ".git/config", "lib/../../x", "a\0b", "C:\\x"],
)
def test_every_tool_refuses_a_path_outside_the_commit(repo: Path, path: str) -> None:
    with GitSource(repo, base="main") as source:
        _, tools = load(repo, source)
        for answer in (tools.read_file(path), tools.list_files(path)):
            assert answer.startswith("error: "), answer
        searched = tools.grep("return", f"{path}/*")  # a glob matches paths of the commit only
        assert searched.startswith("error: ") or searched == "no matches for 'return'", searched


def test_symbolic_links_are_never_followed(repo: Path) -> None:
    with GitSource(repo, base="main") as source:
        _, tools = load(repo, source)
        refused = "error: link_etc is a symbolic link; links are not followed in a review of a commit"
        assert tools.read_file("link_etc/passwd") == refused
        assert tools.list_files("link_etc/ssh") == refused
        assert tools.read_file("link_app").startswith("error: link_app is a symbolic link")
        assert tools.grep("root:", "link_etc/*") == "no matches for 'root:'"


def test_a_lost_object_is_missing_to_every_tool_and_listed(repo: Path) -> None:
    loose_object(repo, "feature:lib/b.py").unlink()
    with GitSource(repo, base="main") as source:
        change, tools = load(repo, source)
        assert change.left_out == {}
        answer = tools.read_file("lib/b.py")
        assert answer.startswith("error: no such file: lib/b.py (unreadable git object); changed files are: app.py")
        assert change.left_out == {"lib/b.py": "unreadable git object"}
        assert tools.list_files("lib") == "lib/a.py\nlib/c.py"
        assert tools.grep("needle", "lib/*") == "lib/a.py:2:     return 'needle a'\nlib/c.py:2:     return 'needle c'"
        notice = change.left_out_notice()
        assert notice is not None and "lib/b.py (unreadable git object)" in notice


def test_grep_goes_on_after_an_object_git_dies_on(repo: Path) -> None:
    git(repo, "checkout", "-q", "main")
    write(repo, "lib/b_big.py", "".join(f"x{i} = {i * 7919 % 65521}  # needle\n" for i in range(6_000)))
    commit(repo, "a big module")
    git(repo, "checkout", "-q", "feature")
    git(repo, "merge", "-q", "--no-edit", "main")
    damaged = loose_object(repo, "feature:lib/b_big.py")
    data = damaged.read_bytes()
    damaged.chmod(0o644)
    damaged.write_bytes(data[: len(data) // 2])  # the header inflates, the content does not
    with GitSource(repo, base="main") as source:
        change, tools = load(repo, source)
        found = tools.grep("needle [bc]", "lib/*")
        assert found == "lib/b.py:2:     return 'needle b'\nlib/c.py:2:     return 'needle c'"
        assert change.left_out == {"lib/b_big.py": "unreadable git object"}
        assert tools.read_file("lib/b_big.py").startswith("error: no such file: lib/b_big.py (unreadable git object)")


def test_a_huge_file_is_read_by_its_lines_and_skipped_by_grep(repo: Path) -> None:
    line = b"x = 'a line of a generated table that nobody reviews by hand'\n"
    with (repo / "table.py").open("wb") as fh:
        fh.write(line * (12 * 1024 * 1024 // len(line)))
    commit(repo, "add a 12 MB table")
    write(repo, "app.py", "def main():\n    return 3\n")
    commit(repo, "change main again")
    with GitSource(repo, base="HEAD~1") as source:
        change, tools = load(repo, source)
        assert [f.path for f in change.files] == ["app.py"]
        tracemalloc.start()
        try:
            whole = tools.read_file("table.py")
            ranged = tools.read_file("table.py", 200_000, 200_001)
            searched = tools.grep("x = ", "*.py")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert whole.startswith("error: file too large (12582900 bytes)")
        assert ranged == f"200000 | {line.decode().rstrip()}\n200001 | {line.decode().rstrip()}\n" + (
            "… more lines follow; call read_file with start_line=200002 to read further"
        )
        assert searched == "no matches for 'x = '"  # over the grep cap: skipped unread
        assert peak < 4 * 1024 * 1024, f"peak {peak} bytes"
        assert change.left_out == {}


def test_a_repository_of_many_files_is_read_only_where_the_tools_look(tmp_path: Path) -> None:
    repo = tmp_path / "big"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for d in range(40):
        for f in range(50):
            write(repo, f"pkg{d:02}/mod{f:02}.py", f"VALUE = {d * 100 + f}\n")
    commit(repo, "2,000 modules")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "pkg00/mod00.py", "VALUE = -1\n")
    commit(repo, "change one")
    with GitSource(repo, base="main") as source:
        change, tools = load(repo, source)
        assert change.head is not None
        assert tools.read_file("pkg07/mod03.py") == "    1 | VALUE = 703"
        assert tools.grep("VALUE = 12", "pkg01/*").splitlines() == [
            f"pkg01/mod{f}.py:1: VALUE = 1{f}" for f in range(20, 30)
        ]
        assert tools.list_files("pkg39").count("\n") == 49
        assert change.head.blobs_read == 1 + 50  # one file read, one directory searched: not 2,000


def test_a_partial_clone_whose_remote_is_gone_costs_only_what_it_lacks(tmp_path: Path, repo: Path) -> None:
    git(repo, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{repo}", str(clone))
    for rev in ("origin/main:app.py", "origin/feature:app.py", "origin/feature:lib/a.py"):
        git(clone, "cat-file", "-p", rev)  # fetched while the remote was there
    shutil.rmtree(repo)
    with GitSource(clone, base="origin/main", head="origin/feature") as source:
        change, tools = load(clone, source)
        assert tools.read_file("lib/a.py") == "    1 | def a():\n    2 |     return 'needle a'"
        assert tools.read_file("lib/b.py").startswith("error: no such file: lib/b.py (not in this partial clone)")
        assert tools.grep("needle", "lib/*") == "lib/a.py:2:     return 'needle a'"
        assert change.left_out == {"lib/b.py": "not in this partial clone", "lib/c.py": "not in this partial clone"}
