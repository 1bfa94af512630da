"""Every published finding says what it stands on: the analyzer and rule, a passed check, or the model alone.

A reader of the merge request must tell a finding ruff's S608 backs from a model's guess: each inline
comment and each finding the summary lists carries its grounds (``render.grounds_phrase``), on the
fake GitHub and the fake GitLab, through the real adapters, and end to end with ruff reading the
head commit.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from codejury_fakes.github import FakeGitHub
from codejury_fakes.gitlab import FakeGitLab

from codejury.findings import Finding, Review, ReviewerReport
from codejury.forges.github import GitHubPullRequest
from codejury.forges.github import target_from_url as github_target
from codejury.forges.gitlab import GitLabMergeRequest
from codejury.forges.gitlab import target_from_url as gitlab_target
from codejury.forges.safety import check_published
from codejury.testing.scripted import finding as model_finding
from tests.forges.test_ci_checkout import BASE, HEAD, SQL, git, upstream
from tests.forges.test_github_bot import ACTIONS, REPO, bot_threads, pr_url, run, summary
from tests.forges.test_github_bot import gh as gh  # noqa: F401  (the fixture)
from tests.forges.test_gitlab_bot import gl as gl  # noqa: F401  (the fixture)
from tests.forges.test_gitlab_bot import summary as gitlab_summary
from tests.forges.test_gitlab_bot import threads as gitlab_threads
from tests.forges.test_gitlab_bot import url

RUFF = "Grounds: ruff S608; checked against the code"
CHECKED = "Grounds: model, checked against the code"
ALONE = "Grounds: model alone"


def _finding(fid: str, line: int, title: str, **extra: object) -> Finding:
    fields: dict[str, object] = {
        "id": fid,
        "reviewer": "security",
        "category": "injection",
        "severity": "warning",
        "path": "app.py",
        "start_line": line,
        "end_line": line,
        "title": title,
        "body": "Why it matters.",
        "confidence": 0.9,
    }
    return Finding.model_validate(fields | extra)


def grounded_review() -> Review:
    """A finding ruff's S608 backs and a check confirmed, one only a check confirmed, one the model alone
    reported, and one outside the diff (listed in the summary only)."""
    return Review(
        verdict="significant_concerns",
        tier="lite",
        summary="Four findings.",
        findings=[
            _finding("f1", 5, "Query built from input", evidence=["ruff:S608"], verified=True, severity="critical"),
            _finding("f2", 15, "Token compared with ==", verified=True),
            _finding("f3", 25, "Handle never closed"),
            _finding("f4", 30, "Module docstring missing"),  # line 30 is not in the diff
        ],
        reviewers=[ReviewerReport(name="security", model="scripted:reviewer", status="ok")],
    )


def publish(forge: GitHubPullRequest | GitLabMergeRequest, review: Review) -> None:
    """Publish ``review`` on the change ``forge`` stands for, through the real adapter."""

    async def go() -> None:
        async with forge as bot:
            change = await bot.load_change()
            previous = await bot.load_previous()
            await bot.publish_review(review, change.files, previous, fail_on="never", approve=True, max_inline=20)

    asyncio.run(go())


def assert_summary_grounds(body: str) -> None:
    assert check_published(body) == []
    assert "grounds: ruff S608; checked against the code · see its thread" in body
    assert "grounds: model, checked against the code · see its thread" in body
    assert "grounds: model alone · see its thread" in body
    _, _, off_diff = body.partition("**Module docstring missing** · not commented inline: outside the diff")
    assert off_diff.lstrip("\n").startswith(f"Why it matters.\n\n{ALONE}\n"), off_diff[:200]


def test_github_inline_comments_and_summary_show_each_findings_grounds(gh: FakeGitHub) -> None:  # noqa: F811
    env = {"GITHUB_TOKEN": ACTIONS, "CODEJURY_GITHUB_URL": gh.api_url}
    publish(GitHubPullRequest(github_target(pr_url(gh), env), env=env), grounded_review())
    threads = bot_threads(gh)
    assert sorted(threads) == [5, 15, 25]
    bodies = {line: t.comments[0].body for line, t in threads.items()}
    assert RUFF in bodies[5] and "model" not in bodies[5]
    assert CHECKED in bodies[15] and "ruff" not in bodies[15]
    assert ALONE in bodies[25] and "checked" not in bodies[25]
    assert all(check_published(b) == [] for b in bodies.values())
    assert_summary_grounds(summary(gh))
    check = max(gh.check_runs(), key=lambda c: c.id)  # the check run's annotations, in the threads' words
    notes = {a["start_line"]: a["message"] for a in check.annotations}
    assert notes[5] == f"Why it matters.\n\n{RUFF}"
    assert notes[15].endswith(CHECKED) and notes[25].endswith(ALONE) and notes[30].endswith(ALONE)


def test_gitlab_inline_comments_and_summary_show_each_findings_grounds(gl: FakeGitLab) -> None:  # noqa: F811
    env = {"CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN, "CODEJURY_GITLAB_URL": gl.url}
    publish(GitLabMergeRequest(gitlab_target(url(gl), env), env=env), grounded_review())
    threads = gitlab_threads(gl)
    assert sorted(threads) == [5, 15, 25]
    bodies = {line: d["notes"][0]["body"] for line, d in threads.items()}
    assert RUFF in bodies[5] and "model" not in bodies[5]
    assert CHECKED in bodies[15] and "ruff" not in bodies[15]
    assert ALONE in bodies[25] and "checked" not in bodies[25]
    assert_summary_grounds(gitlab_summary(gl)["body"])


def test_an_advisory_finding_says_why_it_does_not_block_in_its_thread(gh: FakeGitHub) -> None:  # noqa: F811
    env = {"GITHUB_TOKEN": ACTIONS, "CODEJURY_GITHUB_URL": gh.api_url}
    review = grounded_review().model_copy(
        update={"findings": [_finding("f5", 5, "Maybe a race", advisory=True, severity="suggestion")]}
    )
    publish(GitHubPullRequest(github_target(pr_url(gh), env), env=env), review)
    [thread] = bot_threads(gh).values()
    assert f"{ALONE}; advisory: not verified, does not block" in thread.comments[0].body


# -- end to end: ruff reads the head commit, its rule reaches the published text ------------------------
COUNTED = (
    HEAD + '\n\ndef count(conn):\n    rows = conn.execute("SELECT id FROM reports").fetchall()\n    return len(rows)\n'
)
IN_PYTHON = model_finding("reports.py", 10, "Rows counted in Python", severity="suggestion", category="performance")


def feature_repo(tmp_path: Path) -> tuple[Path, str, str]:
    """``upstream``'s repository with one more commit on the feature branch: a row count at line 10."""
    repo, base, _ = upstream(tmp_path)
    git(repo, "checkout", "-q", "feature")
    (repo / "reports.py").write_text(COUNTED)
    git(repo, "commit", "-qam", "count the reports")
    return repo, base, git(repo, "rev-parse", "HEAD")


def test_a_finding_ruff_backs_names_ruff_s608_on_github_and_the_others_say_model_alone(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    repo, base, head = feature_repo(tmp_path)
    gh.add_pr(number=8, author="alice", files={"reports.py": (BASE, COUNTED)}, head_sha=head, base_sha=base)
    gh.serve_git(REPO, repo)
    monkeypatch.setenv("CODEJURY_REPO_CACHE", str(tmp_path / "cache"))
    config = tmp_path / "codejury.toml"
    config.write_text('disable_analyzers = ["rules"]\n')  # ruff alone flags the query: its rule is the grounds
    code, out, err = run(
        gh, monkeypatch, [SQL, IN_PYTHON], "--publish", "--config", str(config), token=ACTIONS, number=8
    )
    assert code == 0, err
    threads = {line: t.comments[0].body for line, t in bot_threads(gh, 8).items()}
    assert "Grounds: ruff S608" in threads[5], threads
    assert "grounds: ruff S608" in summary(gh, 8)
    assert "Grounds: ruff S608" in out  # the markdown printed in the job log says the same
    assert sorted(threads) == [5, 10], out
    assert ALONE in threads[10] and "ruff" not in threads[10]
