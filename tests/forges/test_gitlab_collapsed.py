"""A diff GitLab collapses is read all the same: what a gate passes, it read.

GitLab's diffs API leaves out the text of a diff it collapses or finds too large (``diff`` "",
``collapsed`` or ``too_large`` set). A renamed file so listed looks like a pure rename; its
changes are read from the head commit instead, diffed against the file's old text (read from the
base commit), so a rename with changes is reviewed and a pure rename still shows nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from codejury_fakes.gitlab import FakeGitLab

from tests.forges.test_ci_checkout import BASE, HEAD, git
from tests.forges.test_gitlab_bot import gl
from tests.forges.test_gitlab_bot import run as gitlab_run

__all__ = ["gl"]  # the fixture

OTHER = "def total(rows):\n    return sum(r.amount for r in rows)\n" * 3


def renaming(tmp_path: Path, old_text: str, new_text: str) -> tuple[Path, str, str, str]:
    """A repository whose feature branch renames ``reports.py`` to ``search.py`` with ``new_text`` (from
    ``old_text``): (path, base sha, head sha, the rename's diff as git shows it)."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "reports.py").write_text(old_text)
    (repo / "totals.py").write_text(OTHER)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "mv", "reports.py", "search.py")
    (repo / "search.py").write_text(new_text)
    git(repo, "commit", "-qam", "rename")
    head = git(repo, "rev-parse", "HEAD")
    diff = git(repo, "diff", "-M10%", base, head) + "\n"
    assert "rename from reports.py" in diff
    return repo, base, head, diff


def collapsed_rename(gl: FakeGitLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, old: str, new: str) -> None:
    """MR 8: ``reports.py`` renamed to ``search.py`` (``old`` -> ``new``), its diff collapsed by GitLab."""
    repo, base, head, diff = renaming(tmp_path, old, new)
    gl.add_mr(1, 8, diff=diff, head_sha=head, base_sha=base, base_files={"reports.py": old, "totals.py": OTHER})
    gl.set_repo_files(1, head, {"search.py": new, "totals.py": OTHER})
    gl.collapse(1, 8, "search.py")
    gl.serve_git("acme/widgets", repo)
    monkeypatch.setenv("CODEJURY_REPO_CACHE", str(tmp_path / "cache"))


def test_a_rename_with_changes_whose_diff_gitlab_collapsed_is_reviewed(
    gl: FakeGitLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    collapsed_rename(gl, monkeypatch, tmp_path, BASE, HEAD)
    code, out, err = gitlab_run(gl, monkeypatch, [], iid=8)
    assert code == 0, err
    assert "S608" in out and "search.py" in out  # the %-built SQL the collapsed diff hid


def test_a_pure_rename_whose_diff_gitlab_collapsed_shows_nothing(
    gl: FakeGitLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    collapsed_rename(gl, monkeypatch, tmp_path, HEAD, HEAD)  # the SQL was there before: nothing new
    code, out, err = gitlab_run(gl, monkeypatch, [], iid=8)
    assert code == 0, err
    assert "S608" not in out  # diffed against its old text (read from the base), not read as all new
