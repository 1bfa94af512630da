"""A CI job's checkout is rarely the pull request's head: the review still reads the head commit's tree.

GitHub Actions checks out ``refs/pull/N/merge`` (a merge commit), GitLab's merged-results
pipelines a merge of the source branch into the target, and both clone shallow. The analyzers,
the index and the tools must read the head commit all the same, fetched when the checkout lacks
it; a review through the API alone says in its summary what it could not do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from codejury_fakes.github import ACTIONS_LOGIN, FakeGitHub
from codejury_fakes.gitlab import FakeGitLab

from codejury.checkout import open_head_side
from codejury.forges.markers import parse_summary
from codejury.testing.scripted import finding as model_finding
from tests.forges.test_github_bot import ACTIONS, REPO, gh, run, summary, write_event
from tests.forges.test_gitlab_bot import gl
from tests.forges.test_gitlab_bot import run as gitlab_run

__all__ = ["gh", "gl"]  # the fixtures, shared with the bots' tests

BASE = 'import sqlite3\n\n\ndef search(conn, name):\n    return conn.execute("SELECT 1")\n'
HEAD = (
    "import sqlite3\n\n\ndef search(conn, name):\n"
    "    query = \"SELECT * FROM reports WHERE name = '%s'\" % name\n"
    "    return conn.execute(query)\n"
)
SQL = model_finding("reports.py", 5, "Query built from input", severity="critical", category="injection")
NO_TREE = "no head-side tree to read"


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"}
    done = subprocess.run(["git", *args], cwd=cwd, env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def upstream(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository with ``main`` and a feature branch adding %-formatted SQL: (path, base sha, head sha)."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "reports.py").write_text(BASE)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "reports.py").write_text(HEAD)
    git(repo, "commit", "-qam", "search by name")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("reports\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "readme")
    return repo, base, head


def merge_checkout(tmp_path: Path, repo: Path, head: str, *, shallow: bool) -> Path:
    """What actions/checkout leaves for a pull_request run: HEAD is the merge commit, detached."""
    work = tmp_path / "work"
    git(repo, "checkout", "-q", "-b", "merge-ref", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge feature into main", head)
    git(repo, "checkout", "-q", "main")
    depth = ["--depth=1"] if shallow else []
    git(tmp_path, "clone", "-q", "--no-local", *depth, "--branch", "merge-ref", str(repo), str(work))
    git(work, "checkout", "-q", "--detach")
    (work / "reports.py").write_text("# the job's own edit, not the pull request's\n")  # a dirty tree
    return work


@pytest.mark.parametrize("shallow", [False, True], ids=["full-clone", "shallow-clone"])
def test_a_merge_commit_checkout_reviews_the_head_commit_with_its_analyzers(
    gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shallow: bool
) -> None:
    repo, base, head = upstream(tmp_path)
    gh.add_pr(number=8, author="alice", files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
    workspace = merge_checkout(tmp_path, repo, head, shallow=shallow)
    if shallow:
        assert subprocess.run(["git", "cat-file", "-e", head], cwd=workspace).returncode != 0  # fetched on demand
    for key, value in {**write_event(tmp_path, gh, number=8), "GITHUB_WORKSPACE": str(workspace)}.items():
        monkeypatch.setenv(key, value)
    code, out, err = run(gh, monkeypatch, [SQL], "--publish", token=ACTIONS, use_url=False, number=8)
    assert code == 0, err
    assert "ruff S608" in out  # the analyzer read the head commit's file, not the merge or the dirty tree
    assert NO_TREE not in out + err
    assert NO_TREE not in summary(gh, 8)


@pytest.mark.parametrize("shallow", [False, True], ids=["full-clone", "shallow-clone"])
def test_a_gitlab_merged_results_pipeline_reviews_the_head_commit_with_its_analyzers(
    gl: FakeGitLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shallow: bool
) -> None:
    repo, base, head = upstream(tmp_path)
    gl.add_mr(1, 8, files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
    workspace = merge_checkout(tmp_path, repo, head, shallow=shallow)  # the source merged into the target
    merged = git(workspace, "rev-parse", "HEAD")
    assert merged != head
    if shallow:
        assert subprocess.run(["git", "cat-file", "-e", head], cwd=workspace).returncode != 0  # fetched on demand
    else:
        assert git(workspace, "rev-parse", "HEAD^2") == head
    for name, value in {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_MERGE_REQUEST_EVENT_TYPE": "merged_result",
        "CI_API_V4_URL": gl.api_url,
        "CI_MERGE_REQUEST_PROJECT_ID": "1",
        "CI_MERGE_REQUEST_IID": "8",
        "CI_COMMIT_SHA": merged,
        "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA": head,
        "CI_PROJECT_DIR": str(workspace),
    }.items():
        monkeypatch.setenv(name, value)
    code, out, err = gitlab_run(gl, monkeypatch, [SQL], "--publish", use_url=False, iid=8)
    assert code == 0, err
    assert "ruff S608" in out  # the analyzer read the head commit's file, not the merged result or the dirty tree
    assert NO_TREE not in out + err
    [body] = [
        n["body"]
        for n in gl.notes(1, 8, system=False)
        if n["author"]["username"] == FakeGitLab.BOT and parse_summary(n["body"])
    ]
    assert NO_TREE not in body and "What this review could not do" not in body
    threads = [d["notes"][0] for d in gl.discussions(1, 8) if d["notes"][0].get("position")]
    assert [t["position"]["new_line"] for t in threads] == [5]  # the finding the evidence backs, published


def test_a_review_through_the_api_says_what_it_could_not_do(gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    gh.add_pr(number=8, author="alice", files={"reports.py": (BASE, HEAD)})
    monkeypatch.setenv("CODEJURY_REPO_CACHE", "off")
    code, out, err = run(gh, monkeypatch, [SQL], "--publish", token=ACTIONS, number=8)
    assert code == 0, err
    body = summary(gh, 8)
    assert "What this review could not do" in body
    assert "ruff skipped" in body and "CODEJURY_REPO_CACHE is off" in body


def test_a_head_commit_that_cannot_be_had_is_one_line_and_never_raises(tmp_path: Path) -> None:
    repo, _, _ = upstream(tmp_path)
    missing = "f" * 40
    side = open_head_side(str(repo), missing, ["reports.py"], fetch_timeout_s=5)
    assert side.root is None and side.head is None
    assert side.missing is not None and missing[:12] in side.missing and "\n" not in side.missing
    assert (
        open_head_side(str(tmp_path / "nowhere"), missing, []).missing
        == f"the checkout {tmp_path / 'nowhere'} does not exist"
    )
    assert open_head_side(None, missing, []).missing == "no checkout of the repository in this job"
    assert open_head_side(str(repo), "HEAD; rm -rf /", []).missing == "the forge named no head commit"


def test_the_head_side_holds_the_committed_head_not_the_working_tree(tmp_path: Path) -> None:
    repo, _, head = upstream(tmp_path)
    workspace = merge_checkout(tmp_path, repo, head, shallow=False)
    side = open_head_side(str(workspace), head, ["reports.py", "gone.py"])
    try:
        assert side.missing is None and side.root is not None and side.head is not None and not side.fetched
        assert (side.root / "reports.py").read_text() == HEAD
        assert not (side.root / "gone.py").exists()
        root = side.root
    finally:
        side.close()
    assert not root.exists()


# -- no checkout at all: --url and the service fetch the head commit into the repository cache -------
def git_logging_shim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``git`` first on PATH that writes every argv it is run with to a file, then runs the real git."""
    shim_dir, log = tmp_path / "shim", tmp_path / "git-argv.log"
    shim_dir.mkdir()
    real = shutil.which("git")
    assert real is not None
    (shim_dir / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec {real} "$@"\n')
    (shim_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def test_a_review_through_the_api_fetches_the_head_commit_and_runs_its_analyzers(
    gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo, base, head = upstream(tmp_path)
    gh.add_pr(number=8, author="alice", files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
    gh.serve_git(REPO, repo)
    cache = tmp_path / "cache"
    monkeypatch.setenv("CODEJURY_REPO_CACHE", str(cache))
    argv_log = git_logging_shim(tmp_path, monkeypatch)
    code, out, err = run(gh, monkeypatch, [SQL], "--publish", token=ACTIONS, number=8)
    assert code == 0, err
    assert "ruff S608" in out and NO_TREE not in out + err
    assert NO_TREE not in summary(gh, 8) and "What this review could not do" not in summary(gh, 8)
    fetched = [r for r in gh.git.requests if r.status == 200]
    assert fetched and {r.user for r in fetched} == {ACTIONS_LOGIN}
    # the token went as a header from the environment: never in git's argv, the cache's files or a message
    assert ACTIONS not in argv_log.read_text() and ACTIONS not in out + err
    assert all(ACTIONS.encode() not in f.read_bytes() for f in cache.rglob("*") if f.is_file())
    # a second review of the same commit fetches nothing
    before = len(gh.git.requests)
    code, out, _ = run(gh, monkeypatch, [SQL], token=ACTIONS, number=8)
    assert code == 0 and "ruff S608" in out and len(gh.git.requests) == before


def test_a_head_commit_the_forge_will_not_serve_is_one_line_in_the_summary(
    gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo, base, head = upstream(tmp_path)
    gh.add_pr(number=8, author="alice", files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    (other / "README.md").write_text("another history\n")
    git(other, "add", ".")
    git(other, "commit", "-qm", "elsewhere")
    gh.serve_git(REPO, other)  # a repository without that commit
    monkeypatch.setenv("CODEJURY_REPO_CACHE", str(tmp_path / "cache"))
    code, out, err = run(gh, monkeypatch, [SQL], "--publish", token=ACTIONS, number=8)
    body = summary(gh, 8)
    assert "What this review could not do" in body and f"the head commit {head[:12]} could not be fetched" in body
    assert [r.status for r in gh.git.requests] and "S608" in out  # the changed file came through the API
    assert ACTIONS not in out + err + body


def test_a_gitlab_merge_request_through_the_api_is_reviewed_with_its_head_commit(
    gl: FakeGitLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo, base, head = upstream(tmp_path)
    gl.add_mr(1, 8, files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
    gl.serve_git("acme/widgets", repo)
    monkeypatch.setenv("CODEJURY_REPO_CACHE", str(tmp_path / "cache"))
    code, out, err = gitlab_run(gl, monkeypatch, [SQL], iid=8)
    assert code == 0, err
    assert "ruff S608" in out and NO_TREE not in out + err
    assert {r.user for r in gl.git.requests if r.status == 200} == {FakeGitLab.BOT}
