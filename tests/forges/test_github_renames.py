"""A file GitHub lists as renamed without a patch (a pure rename: GitHub sends none) is diffed against its old text,
read from the base commit through the API, so a move that changed nothing is not reviewed as a new file.

``codejury review --url --publish`` against the fake GitHub serving git, the head commit fetched into the
repository cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from codejury_fakes.github import FakeGitHub

from tests.forges.test_ci_checkout import BASE, HEAD, SQL, git, upstream
from tests.forges.test_github_bot import ACTIONS, REPO
from tests.forges.test_github_bot import gh as gh  # noqa: F401  (the fixture)
from tests.forges.test_github_bot import run as github_run

MOVED = "legacy/reports.py"


def _moved_pr(gh: FakeGitHub, tmp_path: Path, head_text: str) -> None:  # noqa: F811
    """Pull request 8: ``reports.py`` (the base's, with no SQL built from input) moved to ``MOVED`` as ``head_text``."""
    repo, base, _ = upstream(tmp_path)
    git(repo, "checkout", "-q", "-b", "move", base)
    (repo / "legacy").mkdir()
    git(repo, "mv", "reports.py", MOVED)
    (repo / MOVED).write_text(head_text)
    git(repo, "commit", "-qam", "move reports")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    files = {MOVED: (BASE, head_text)}
    gh.add_pr(number=8, author="alice", files=files, head_sha=head, base_sha=base, renamed={MOVED: "reports.py"})
    gh.serve_git(REPO, repo)


def _review(gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, object]:  # noqa: F811
    monkeypatch.setenv("CODEJURY_REPO_CACHE", str(tmp_path / "cache"))
    code, out, err = github_run(gh, monkeypatch, [SQL | {"path": MOVED}], "--format", "json", token=ACTIONS, number=8)
    assert code == 0, err
    review: dict[str, object] = json.loads(out)
    return review


def test_a_pure_rename_github_lists_without_a_patch_is_not_reviewed_as_a_new_file(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _moved_pr(gh, tmp_path, BASE)
    review = _review(gh, monkeypatch, tmp_path)
    assert review["findings"] == [], review  # no line of it is new: nothing the reviewer said can anchor there
    assert review["verdict"] == "approved"
    reads = [r for r in gh.requests if r.path.endswith("/contents/reports.py")]
    assert reads and all(r.query.get("ref") for r in reads)  # the old text, from the base commit


def test_a_rename_whose_text_changed_is_still_reviewed(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _moved_pr(gh, tmp_path, HEAD)  # GitHub sends a patch for it: the line that builds SQL from input is new
    review = _review(gh, monkeypatch, tmp_path)
    assert [(f["path"], f["start_line"]) for f in review["findings"]] == [(MOVED, 5)]  # type: ignore[index,union-attr]
