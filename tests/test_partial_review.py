"""No reviewer answered, analyzer hits present: ``codejury review`` prints the hits as a partial review and exits 3;
on a pull request the partial review is published, never an approval, its summary saying the models failed."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from codejury.forges.github import adapter as github_mod
from codejury.forges.github.api import GitHubAPI
from codejury.forges.markers import parse_summary
from codejury.testing.changes import AUTH_NEW, AUTH_OLD, unified_diff
from codejury.testing.github import ACTIONS_LOGIN, FakeGitHub
from codejury.testing.scripted import Final, Sleep
from tests.forges.scripted_cli import scripted_review

PATH = "app/auth/users.py"
STALLS = [Sleep(30, Final([]))]  # every reviewer waits past its timeout
TIMEOUTS = "reviewer_timeout_s = 0.3\noverall_timeout_s = 1.0\n"  # code_quality's own 600 s: the fan-out stops it
REPO = "acme/shop"
ACTIONS = "ghs_actions_token"


def config(tmp_path: Path) -> Path:
    path = tmp_path / "codejury.toml"
    path.write_text(TIMEOUTS)
    return path


def test_a_review_no_reviewer_answered_prints_the_analyzers_hits_and_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "app/auth").mkdir(parents=True)
    (repo / PATH).write_text(AUTH_NEW)
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff(PATH, AUTH_OLD, AUTH_NEW))
    flags = ["--diff", str(diff), "--repo", str(repo), "--config", str(config(tmp_path)), "--format", "json"]
    code, out, err, _ = scripted_review(monkeypatch, flags, reviewer=STALLS)
    assert code == 3
    assert "review failed: no reviewer succeeded (" in err and "timed out" in err
    assert "the analyzers' hits are published as a partial review, never an approval" in err
    review = json.loads(out)  # the partial review, on stdout as any review
    assert review["verdict"] == "requested_changes" and review["judged"] is False
    assert [(f["start_line"], f["withholds_approval"]) for f in review["findings"]] == [(10, True), (14, True)]
    assert all(f["evidence"] for f in review["findings"])  # each names its analyzer and rule
    assert review["approval_withheld"][0].startswith("no reviewer succeeded (")


@pytest.fixture
def gh(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    monkeypatch.setattr(github_mod, "GitHubAPI", functools.partial(GitHubAPI, backoff_s=0.001))
    for name in ("GITHUB_ACTIONS", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "CODEJURY_GITHUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with FakeGitHub(REPO) as server:
        server.add_user("alice")
        server.add_token(ACTIONS, kind="actions", permissions={"contents": "write"})
        server.repo().actions_can_approve = True
        yield server


def test_on_a_pull_request_the_partial_review_is_published_never_approving(
    gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gh.add_pr(number=7, author="alice", files={PATH: (AUTH_OLD, AUTH_NEW)}, body="Adds a lookup.")
    monkeypatch.setenv("GITHUB_TOKEN", ACTIONS)
    monkeypatch.setenv("CODEJURY_GITHUB_URL", gh.api_url)
    url = f"{gh.api_url}/{REPO}/pull/7"
    flags = ["--url", url, "--publish", "--config", str(config(tmp_path))]
    code, _, err, _ = scripted_review(monkeypatch, flags, reviewer=STALLS)
    assert code == 3, err
    assert all(r.state != "APPROVED" for r in gh.reviews(7))
    [body] = [c.body for c in gh.issue_comments(7) if c.user == ACTIONS_LOGIN and parse_summary(c.body)]
    assert "Review failed" not in body  # not the failure note: the analyzers' hits are there
    assert "no reviewer succeeded" in body and "approval is withheld" in body
    assert "app/auth/users.py" in body
    latest = max(gh.check_runs(), key=lambda c: c.id)
    assert latest.conclusion != "success"
