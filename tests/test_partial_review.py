"""No reviewer answered, analyzer hits present: ``codejury review`` prints the hits as a partial review and exits 3;
on a pull request the partial review is published, never an approval, its summary saying the models failed."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from codejury_fakes.github import ACTIONS_LOGIN, FakeGitHub

from codejury.forges.github import adapter as github_mod
from codejury.forges.github.api import GitHubAPI
from codejury.forges.markers import parse_summary
from codejury.testing.changes import AUTH_NEW, AUTH_OLD, unified_diff
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


APP = "web/app.js"
APP_OLD = "".join(f"const v{n} = {n};\n" for n in range(1, 21))
APP_NEW = APP_OLD.replace("const v5 = 5;\n", "const v5 = query(req.q);\n").replace("v9 = 9", "v9 = unused")


def sarif(tmp_path: Path, rule: str, level: str, line: int, security_severity: str | None = None) -> Path:
    """One result of a tool the team already runs (``--evidence``): no checkout needed to read it."""
    properties = {"security-severity": security_severity} if security_severity else {}
    doc = {
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "ESLint", "rules": [{"id": rule, "properties": properties}]}},
            "results": [{
                "ruleId": rule, "level": level, "message": {"text": f"{rule} here"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": APP}, "region": {"startLine": line}}}],
            }],
        }],
    }  # fmt: skip
    path = tmp_path / f"{rule.replace('/', '-')}.sarif"
    path.write_text(json.dumps(doc))
    return path


def review_pr(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, evidence: Path) -> str:
    """``codejury review --url --publish`` of pull request 7 with every reviewer timing out; the summary."""
    gh.add_pr(number=7, author="alice", files={APP: (APP_OLD, APP_NEW)}, body="Reads a query.")
    monkeypatch.setenv("GITHUB_TOKEN", ACTIONS)
    monkeypatch.setenv("CODEJURY_GITHUB_URL", gh.api_url)
    url = f"{gh.api_url}/{REPO}/pull/7"
    flags = ["--url", url, "--publish", "--config", str(config(tmp_path)), "--evidence", str(evidence)]
    code, _, err, _ = scripted_review(monkeypatch, flags, reviewer=STALLS)
    assert code == 3, err
    assert "review failed: no reviewer succeeded (" in err
    assert all(r.state != "APPROVED" for r in gh.reviews(7))
    assert max(gh.check_runs(), key=lambda c: c.id).conclusion != "success"
    [body] = [c.body for c in gh.issue_comments(7) if c.user == ACTIONS_LOGIN and parse_summary(c.body)]
    assert "Review failed" not in body  # not the failure note: the evidence is there
    assert (
        "approval is withheld: no reviewer succeeded" in body and "no reviewer answered to check 1 analyzer hit" in body
    )
    return body


def test_on_a_pull_request_security_evidence_is_published_and_held(
    gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = review_pr(gh, tmp_path, monkeypatch, sarif(tmp_path, "js/sql-injection", "error", 5, "8.8"))
    assert "**Verdict: Changes requested**" in body
    [thread] = [c for c in gh.review_comments(7) if c.user == ACTIONS_LOGIN]
    assert thread.line == 5 and "js/sql-injection" in thread.body


def test_on_a_pull_request_a_hit_that_alone_would_approve_does_not(
    gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = review_pr(gh, tmp_path, monkeypatch, sarif(tmp_path, "no-unused-vars", "warning", 9))
    assert "**Verdict: Significant concerns**" in body  # an advisory warning alone approves with comments
    [thread] = [c for c in gh.review_comments(7) if c.user == ACTIONS_LOGIN]
    assert thread.line == 9 and "no-unused-vars" in thread.body
