"""A head commit that cannot be had is never approved around.

With ``--url`` (as in the service) a head fetch that stalls, passes the cache's cap or is
redirected leaves the review without the commit: its changed files are then read through the
forge's API, so the per-file analyzers still run; when even that fails, the review is not an
approval (no approving review, a neutral check) and says what did not run and why. A failed
fetch is remembered: the next review of that commit does not download it again.

In a CI job whose checkout kept no credentials (``persist-credentials: false``), the head commit
is fetched with the job's token, as a header: never in git's argv, a URL or ``.git/config``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from codejury_fakes.github import ACTIONS_LOGIN, FakeGitHub
from codejury_fakes.gitlab import FakeGitLab

from codejury.checkout import cache as cache_mod
from codejury.checkout import fetch as fetch_mod
from tests.checkout.test_fetch_bounds import BIG, big_upstream
from tests.forges.test_ci_checkout import BASE, HEAD, git, git_logging_shim, merge_checkout, upstream
from tests.forges.test_github_bot import ACTIONS, REPO, bot_reviews, gh, run, summary, write_event
from tests.forges.test_gitlab_bot import gl
from tests.forges.test_gitlab_bot import run as gitlab_run

__all__ = ["gh", "gl"]  # the fixtures

VIA_API = "only the changed files were read, through the forge's API"
WITHHELD = "approval is withheld"


def setup_unfetchable(gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, how: str) -> str:
    """PR 8 adding %-built SQL, whose head commit the forge's git endpoint will not give in the way ``how``
    says; returns the head commit."""
    monkeypatch.setenv("CODEJURY_REPO_CACHE", str(tmp_path / "cache"))
    if how == "over the cap":
        repo, head = big_upstream(tmp_path)
        gh.git.rate_bytes_s = 4 * 1024 * 1024
        monkeypatch.setattr(cache_mod, "MAX_REPO_BYTES", 512 * 1024)
    else:
        repo, _, head = upstream(tmp_path)
    base = git(repo, "rev-parse", "main~1")
    gh.add_pr(number=8, author="alice", files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
    gh.serve_git(REPO, repo)
    if how == "stalls":
        gh.git.stall(REPO)
        monkeypatch.setattr(fetch_mod, "FETCH_TIMEOUT_S", 1.5)
    elif how == "redirects":
        gh.serve_git("octo/elsewhere", repo)
        gh.git.redirect(REPO, f"{gh.origin}/octo/elsewhere.git/info/refs?service=git-upload-pack")
    return head


@pytest.mark.parametrize("how", ["stalls", "over the cap", "redirects"])
def test_the_changed_files_come_through_the_api_and_the_analyzers_still_run(
    gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, how: str
) -> None:
    head = setup_unfetchable(gh, monkeypatch, tmp_path, how)
    code, out, err = run(gh, monkeypatch, [], "--publish", number=8)
    assert code == 0, err
    assert "S608" in out  # ruff read reports.py as the head commit has it
    body = summary(gh, 8)
    assert VIA_API in body and f"the head commit {head[:12]} could not be fetched" in body
    assert WITHHELD not in body.lower()
    raw = [r for r in gh.requests if r.path.endswith("/contents/reports.py") and r.query.get("ref") == head]
    assert [r.status for r in raw] == [200] and "vnd.github.raw" in raw[0].headers.get("accept", "")
    assert {r.repo for r in gh.git.requests} == {REPO}  # a redirect is not followed
    if how == "over the cap":
        sent = sum(r.sent for r in gh.git.requests)
        assert 512 * 1024 < sent < BIG / 4, sent  # the download stopped at the cap, not at the pack's end


def test_when_the_api_fails_too_the_review_is_not_an_approval_and_says_why(
    gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    head = setup_unfetchable(gh, monkeypatch, tmp_path, "redirects")
    gh.fail_next(40, 502, path="/contents/reports.py")  # GitHub keeps failing to serve the file
    code, out, err = run(gh, monkeypatch, [], "--publish", number=8)  # the model finds nothing
    assert code == 0, err
    body = summary(gh, 8)
    assert WITHHELD in body.lower() and "no changed file could be read" in body
    assert "ruff skipped" in body and "could not be fetched" in body  # what did not run, and why
    assert "APPROVED" not in bot_reviews(gh, 8)
    [check] = [c for c in gh.check_runs() if c.head_sha == head]
    assert check.conclusion == "neutral" and "Approval withheld" in check.summary


def test_a_failed_fetch_is_not_downloaded_again_at_the_next_review(
    gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    setup_unfetchable(gh, monkeypatch, tmp_path, "stalls")
    code, out, err = run(gh, monkeypatch, [], "--publish", number=8)
    assert code == 0 and "S608" in out, err
    asked = len(gh.git.requests)
    assert asked > 0
    code, out, err = run(gh, monkeypatch, [], "--publish", number=8)
    assert code == 0 and "S608" in out, err  # still analysed, through the API
    assert len(gh.git.requests) == asked
    assert "could not be fetched (no answer within 1.5 s); not tried again for 15 min" in out


def test_a_checkout_without_credentials_fetches_the_head_with_the_job_token_as_a_header(
    gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo, base, head = upstream(tmp_path)
    gh.add_pr(number=8, author="alice", files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
    gh.serve_git(REPO, repo)
    workspace = merge_checkout(tmp_path, repo, head, shallow=True)
    origin = f"{gh.origin}/{REPO}.git"
    git(workspace, "remote", "set-url", "origin", origin)  # actions/checkout, persist-credentials: false
    assert subprocess.run(["git", "cat-file", "-e", head], cwd=workspace).returncode != 0
    for key, value in {**write_event(tmp_path, gh, number=8), "GITHUB_WORKSPACE": str(workspace)}.items():
        monkeypatch.setenv(key, value)
    argv_log = git_logging_shim(tmp_path, monkeypatch)
    code, out, err = run(gh, monkeypatch, [], "--publish", token=ACTIONS, use_url=False, number=8)
    assert code == 0, err
    assert "S608" in out and VIA_API not in summary(gh, 8)  # the analyzers read the fetched head commit
    git(workspace, "cat-file", "-e", f"{head}^{{tree}}")
    statuses = [(r.user, r.status) for r in gh.git.requests if r.method == "POST"]
    assert (ACTIONS_LOGIN, 200) in statuses  # the pack came to the job's token
    assert ACTIONS not in argv_log.read_text() and ACTIONS not in out + err
    config = (workspace / ".git" / "config").read_text()
    assert ACTIONS not in config and "extraheader" not in config.lower()
    assert git(workspace, "remote", "get-url", "origin") == origin  # no token in the URL either


def test_a_gitlab_head_that_cannot_be_fetched_is_read_through_the_api(
    gl: FakeGitLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo, base, head = upstream(tmp_path)
    gl.add_mr(1, 8, files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
    gl.serve_git("acme/widgets", repo)
    gl.git.stall("acme/widgets")
    monkeypatch.setattr(fetch_mod, "FETCH_TIMEOUT_S", 1.5)
    monkeypatch.setenv("CODEJURY_REPO_CACHE", str(tmp_path / "cache"))
    code, out, err = gitlab_run(gl, monkeypatch, [], iid=8)
    assert code == 0, err
    assert "S608" in out and VIA_API in out and "no answer within 1.5 s" in out
    assert [r.status for r in gl.git.requests if r.method == "POST"] == [0]  # the stalled pack request, once


def test_a_gitlab_job_without_a_repository_fetches_the_head_with_the_token_as_a_header(
    gl: FakeGitLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo, base, head = upstream(tmp_path)
    gl.add_mr(1, 8, files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
    gl.serve_git("acme/widgets", repo)
    project_dir = tmp_path / "builds" / "acme" / "widgets"
    project_dir.mkdir(parents=True)  # GIT_STRATEGY: none: the job's directory holds no repository
    cache = tmp_path / "cache"
    for name, value in {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_API_V4_URL": gl.api_url,
        "CI_MERGE_REQUEST_PROJECT_ID": "1",
        "CI_MERGE_REQUEST_IID": "8",
        "CI_COMMIT_SHA": head,
        "CI_PROJECT_DIR": str(project_dir),
        "CODEJURY_REPO_CACHE": str(cache),
    }.items():
        monkeypatch.setenv(name, value)
    argv_log = git_logging_shim(tmp_path, monkeypatch)
    code, out, err = gitlab_run(gl, monkeypatch, [], "--publish", use_url=False, iid=8)
    assert code == 0, err
    assert "S608" in out and VIA_API not in out  # the analyzers read the fetched head commit
    assert {r.user for r in gl.git.requests if r.status == 200} == {FakeGitLab.BOT}
    assert FakeGitLab.BOT_TOKEN not in argv_log.read_text() and FakeGitLab.BOT_TOKEN not in out + err
    assert all(FakeGitLab.BOT_TOKEN.encode() not in f.read_bytes() for f in cache.rglob("*") if f.is_file())
    assert not list(project_dir.iterdir())  # nothing written into the job's directory
