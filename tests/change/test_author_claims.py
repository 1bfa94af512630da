"""What is reviewed is decided by content and by the base side, never by what the change says about itself.

A change's own ``.gitattributes`` (``-diff``, ``binary``, ``diff=driver``), a forge that honours it,
and a file name (``*.min.js``, ``*.bundle.js``) are claims of the change's author. Each review here
runs with the analyzers on and scripted models, and checks that the code behind the claim reaches
them; what is skipped (a real minified file, a real binary, a file too large) is listed with its
reason, and a file of code skipped unread keeps the review from approving.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from codejury_fakes.github import FakeGitHub

from codejury.change.noise import filter_stage, unread_code
from codejury.change.sources import GitSource
from codejury.change.types import ChangeSet, FileChange, PrefetchedBase
from codejury.findings import Review
from codejury.testing.scripted import Final, Raw
from tests.change.test_sources import commit, git, write
from tests.engine_helpers import run_review, scripted_settings
from tests.forges.test_ci_checkout import BASE, HEAD, SQL, gh, merge_checkout, upstream, write_event
from tests.forges.test_ci_checkout import git as plain_git
from tests.forges.test_github_bot import ACTIONS, REPO
from tests.forges.test_github_bot import run as github_run

__all__ = ["gh"]  # the fake GitHub fixture

PATH = "shop/orders.py"
OLD = 'import sqlite3\n\n\ndef count(db: sqlite3.Connection) -> int:\n    return db.execute("SELECT 1").fetchone()[0]\n'
NEW = OLD + textwrap.dedent(
    """\


    def search(db: sqlite3.Connection, name: str) -> list[tuple[int]]:
        return db.execute("SELECT id FROM orders WHERE name = '%s'" % name).fetchall()
    """
)
SQL_LINE = 9
ATTRIBUTES = ["*.py -diff", "*.py binary", "*.py diff=foo", "shop/orders.py -text -diff"]
LIVE = "sk_live_" + "51Hx9QpLk2VbN8mWq3RtYz7AcD4eF"  # split so no scanner flags this test file itself
MINIFIED = "var a=function(b){return b+1};" * 170  # one line of 5,100 characters, as a minifier writes
NO_DECISIONS = [Raw({"decisions": []})]
GROUNDS = re.compile(r"ruff[: ]S608|rules[: ]py-sql-built-from-strings")
"""An analyzer's hit on the %-built SQL: the analyzers read the file."""


def repository(tmp_path: Path, head: dict[str, str | bytes]) -> Path:
    """main holds ``PATH`` (OLD); the checked-out branch ``feature`` writes ``head`` over it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "diff.foo.binary", "true")  # a driver this machine's git knows, as a global config may
    write(repo, PATH, OLD)
    commit(repo, "base")
    git(repo, "checkout", "-q", "-b", "feature")
    for path, content in head.items():
        if isinstance(content, bytes):
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_bytes(content)
        else:
            write(repo, path, content)
    commit(repo, "head")
    return repo


async def reviewed(change: ChangeSet) -> Review:
    scripts = {"security": [Final([])], "generalist": [Final([])], "coordinator": NO_DECISIONS}
    result, _, _ = await run_review(change, scripts, settings=scripted_settings(analyzers=True))
    assert isinstance(result, Review)
    return result


def evidence(result: Review) -> set[tuple[str, int, str]]:
    return {(f.path, f.start_line, e) for f in result.findings for e in f.evidence}


@pytest.mark.parametrize("attributes", ATTRIBUTES)
async def test_the_changes_own_gitattributes_cannot_hide_a_file(tmp_path: Path, attributes: str) -> None:
    repo = repository(tmp_path, {".gitattributes": attributes + "\n", PATH: NEW})
    with GitSource(repo) as source:
        change = source.load()
        [orders] = [f for f in change.files if f.path == PATH]
        assert not orders.is_binary and SQL_LINE in orders.added_lines  # a text diff, whatever the attributes say
        kept, skipped = filter_stage(change)
        assert PATH in {f.path for f in kept} and skipped == []
        result = await reviewed(change)
    assert any(GROUNDS.search(e) for path, line, e in evidence(result) if (path, line) == (PATH, SQL_LINE))
    assert result.verdict not in ("approved", "approved_with_comments")
    assert result.skipped_files == [] and result.approval_withheld == []


async def test_a_hand_written_file_named_minified_or_bundled_is_reviewed(tmp_path: Path) -> None:
    app = 'function run(q) {\n  return eval(q.get("code"));\n}\n'
    auth = f'export const client = {{\n  key: "{LIVE}",\n}};\n'
    repo = repository(tmp_path, {"web/app.min.js": app, "web/auth.bundle.js": auth, "web/vendor.min.js": MINIFIED})
    with GitSource(repo) as source:
        change = source.load()
        kept, skipped = filter_stage(change)
        assert {f.path for f in kept} == {"web/app.min.js", "web/auth.bundle.js"}
        minified = "minified asset (by its content: long lines, little whitespace)"
        assert [(s.path, s.reason) for s in skipped] == [("web/vendor.min.js", minified)]
        result = await reviewed(change)
    assert any(path == "web/auth.bundle.js" and e.startswith("secrets:") for path, _, e in evidence(result))
    # the real minified file stays skipped, and, new in this change, it was not read: no approval
    assert [s.path for s in result.skipped_files] == ["web/vendor.min.js"]
    [withheld] = result.approval_withheld
    assert "web/vendor.min.js" in withheld and result.verdict not in ("approved", "approved_with_comments")


def test_a_minified_file_already_minified_on_the_base_side_is_skipped_as_an_update(tmp_path: Path) -> None:
    repo = repository(tmp_path, {"web/vendor.min.js": MINIFIED})
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "feature")
    git(repo, "checkout", "-q", "feature")
    write(repo, "web/vendor.min.js", 'alert("no longer minified")\n')
    commit(repo, "update the bundle")
    with GitSource(repo) as source:
        _, skipped = filter_stage(source.load())
    assert [(s.path, s.reason) for s in skipped] == [("web/vendor.min.js", "minified asset")]


async def test_binary_and_too_large_files_are_listed_by_their_bytes_and_code_among_them_withholds(
    tmp_path: Path,
) -> None:
    line = b"x = 'a line of a generated table'\n"
    big = line * (9 * 1024 * 1024 // len(line) + 1)
    repo = repository(
        tmp_path,
        {"img/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00IHDR", "shop/loader.py": b"import os\n\x00\x01payload\n",
         "data/table.txt": big, PATH: NEW},
    )  # fmt: skip
    with GitSource(repo) as source:
        change = source.load()
        result = await reviewed(change)
    reasons = {s.path: s.reason for s in result.skipped_files}
    assert reasons == {
        "img/logo.png": "binary file",
        "shop/loader.py": "binary file",
        "data/table.txt": "too large: 9 MB, over the 8 MB limit",
    }
    [withheld] = result.approval_withheld  # the Python file with a NUL byte, not the image nor the table
    assert "shop/loader.py (binary file)" in withheld and "logo.png" not in withheld and "table" not in withheld
    assert withheld in result.summary


async def test_a_file_of_code_too_large_to_read_keeps_a_clean_review_from_approving(tmp_path: Path) -> None:
    line = b"ROWS.append(('a generated row', 1))\n"
    rows = line * (9 * 1024 * 1024 // len(line) + 1)
    repo = repository(tmp_path, {"shop/rows.py": rows, "docs/notes.md": "Rows are loaded at start-up.\n"})
    with GitSource(repo) as source:
        change = source.load()
        scripts = {"generalist": [Final([])], "coordinator": NO_DECISIONS}
        result, _, events = await run_review(change, scripts)  # the models find nothing in what they read
    assert isinstance(result, Review)
    reason = "a file of code was skipped unread: shop/rows.py (too large: 9 MB, over the 8 MB limit)"
    assert result.verdict == "significant_concerns" and result.approval_withheld == [reason]
    assert [e["reason"] for e in events.events if e["type"] == "approval_withheld"] == [reason]


@pytest.mark.parametrize("where", ["ci-merge-checkout", "url-repo-cache"])
def test_a_file_the_forge_shows_as_binary_is_reviewed_by_the_head_commits_bytes(
    gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, where: str
) -> None:
    repo, base, _ = upstream(tmp_path)  # feature: %-built SQL in reports.py
    plain_git(repo, "checkout", "-q", "feature")
    (repo / ".gitattributes").write_text("*.py -diff\n")
    plain_git(repo, "add", ".gitattributes")
    plain_git(repo, "commit", "-q", "-m", "diff Python files as binary")
    head = plain_git(repo, "rev-parse", "HEAD")
    plain_git(repo, "checkout", "-q", "main")
    files = {"reports.py": (BASE, HEAD), ".gitattributes": (None, "*.py -diff\n")}
    # GitHub honours the change's own -diff: it lists reports.py without a patch
    gh.add_pr(number=8, author="alice", files=files, head_sha=head, base_sha=base, patch_left_out=["reports.py"])
    if where == "ci-merge-checkout":
        workspace = merge_checkout(tmp_path, repo, head, shallow=True)
        for key, value in {**write_event(tmp_path, gh, number=8), "GITHUB_WORKSPACE": str(workspace)}.items():
            monkeypatch.setenv(key, value)
    else:  # --url: the head commit is fetched into the repository cache, as the service does
        gh.serve_git(REPO, repo)
        monkeypatch.setenv("CODEJURY_REPO_CACHE", str(tmp_path / "cache"))
    url = where == "url-repo-cache"
    code, out, err = github_run(gh, monkeypatch, [SQL], "--publish", token=ACTIONS, use_url=url, number=8)
    assert code == 0, err
    assert GROUNDS.search(out)  # the head commit's bytes are text: the file is reviewed whole
    assert "binary file" not in out


def test_a_file_a_forge_shows_without_text_is_judged_by_the_head_sides_bytes(tmp_path: Path) -> None:
    root = tmp_path / "head"
    heads = {
        "shop/a.py": b"x = 1\r\ny = eval(q)\n",  # the forge said binary: its bytes are text
        "shop/gl.py": b"import os\nos.system(cmd)\n",  # GitLab's empty diff for a diff it collapsed
        "img/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00IHDR",
        "shop/huge.py": b"ROWS = 1\n" * (3 * 1024 * 1024 // 9),  # text, but too much to review whole
        "empty.txt": b"",
    }
    for path, data in heads.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    files = (
        FileChange("shop/a.py", "shop/a.py", "modified", is_binary=True),
        FileChange("shop/gl.py", "shop/gl.py", "modified"),
        FileChange("img/logo.png", None, "added", is_binary=True),
        FileChange("shop/huge.py", None, "added", is_binary=True),
        FileChange("shop/big.py", None, "added", is_binary=True),  # over the export cap: not written out
        FileChange("empty.txt", None, "added"),
    )
    left_out = {"shop/big.py": "too large: 9 MB, over the 8 MB limit"}
    kept, skipped = filter_stage(ChangeSet(files=files, root=root, left_out=left_out))
    by_path = {f.path: f for f in kept}
    assert [ln.text for h in by_path["shop/a.py"].hunks for ln in h.lines] == ["x = 1", "y = eval(q)"]
    assert by_path["shop/a.py"].added_lines == {1, 2} and by_path["shop/gl.py"].added_lines == {1, 2}
    assert not by_path["empty.txt"].hunks
    assert {s.path: s.reason for s in skipped} == {
        "img/logo.png": "binary file",
        "shop/huge.py": "too large: 3 MB, over the 2 MB limit",
        "shop/big.py": "too large: 9 MB, over the 8 MB limit",
    }
    assert [s.path for s in unread_code(skipped)] == ["shop/huge.py", "shop/big.py"]
    # without a head-side tree the forge's word stands, and a file of code it calls binary is unread
    _, unread = filter_stage(ChangeSet(files=files[:1]))
    assert [(s.path, s.reason) for s in unread_code(unread)] == [("shop/a.py", "binary file")]


def test_a_move_a_forge_shows_without_text_is_diffed_against_its_old_text_when_the_base_side_has_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "head"
    (root / "new").mkdir(parents=True)
    (root / "new/same.py").write_text(OLD)  # a pure rename: GitHub sends no patch for one
    (root / "new/changed.py").write_text(NEW)  # a rename with a change under the change's own -diff
    (root / "new/unknown.py").write_text(OLD)  # its old text not at hand: every line is shown
    files = tuple(
        FileChange(f"new/{name}.py", f"old/{name}.py", "renamed", is_binary=True)
        for name in ("same", "changed", "unknown")
    )
    base = PrefetchedBase({"old/same.py": OLD, "old/changed.py": OLD})
    kept, skipped = filter_stage(ChangeSet(files=files, root=root, base=base))
    assert skipped == []
    by_path = {f.path: f for f in kept}
    assert by_path["new/same.py"].hunks == () and not by_path["new/same.py"].is_binary
    assert by_path["new/changed.py"].added_lines == {6, 7, 8, 9}  # the four lines the change adds, only
    assert by_path["new/unknown.py"].added_lines == set(range(1, 6))
