"""A change nothing reviewed (verdict ``not_reviewed``) is never approved on a forge, and says why.

Published through the real adapters against the fake GitLab and GitHub: the bot gives no approval
(and withdraws the one it gave an earlier commit), a GitHub check run concludes ``neutral``, and the
summary comment says that nothing was reviewed and lists every skipped file with its reason.
"""

from __future__ import annotations

import asyncio

import pytest
from codejury_fakes.github import FakeGitHub
from codejury_fakes.gitlab import FakeGitLab

from codejury.findings import Review, SkippedFile
from codejury.forges.github import GitHubPullRequest
from codejury.forges.github import target_from_url as github_target
from codejury.forges.gitlab import GitLabMergeRequest
from codejury.forges.gitlab import target_from_url as gitlab_target
from codejury.forges.markers import parse_summary
from codejury.forges.safety import check_published
from tests.forges.test_github_bot import ACTIONS, bot_reviews, pr_url
from tests.forges.test_github_bot import gh as gh  # noqa: F401  (the fixture)
from tests.forges.test_github_bot import run as github_run
from tests.forges.test_github_bot import summary as github_summary
from tests.forges.test_gitlab_bot import B, url
from tests.forges.test_gitlab_bot import gl as gl  # noqa: F401  (the fixture)
from tests.forges.test_gitlab_bot import run as gitlab_run
from tests.forges.test_gitlab_bot import summary as gitlab_summary

SKIPPED = [
    SkippedFile(path="vendor/auth.py", reason="vendored directory"),
    SkippedFile(path="app.py", reason="generated file (DO NOT EDIT on its first line)"),
]


def not_reviewed() -> Review:
    return Review(
        verdict="not_reviewed",
        tier="trivial",
        summary="Nothing was reviewed: every changed file was skipped before any model saw it.",
        skipped_files=SKIPPED,
    )


async def _publish_gitlab(gl: FakeGitLab) -> list[str]:
    env = {"CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN, "CODEJURY_GITLAB_URL": gl.url}
    async with GitLabMergeRequest(gitlab_target(url(gl), env), env=env) as mr:
        change = await mr.load_change()
        previous = await mr.load_previous()
        await mr.publish_review(
            not_reviewed(), change.files, previous, fail_on="requested_changes", approve=True, max_inline=20
        )
        return mr.posted


async def _publish_github(gh: FakeGitHub, fail_on: str = "requested_changes") -> list[str]:  # noqa: F811
    env = {"GITHUB_TOKEN": ACTIONS, "CODEJURY_GITHUB_URL": gh.api_url}
    async with GitHubPullRequest(github_target(pr_url(gh), env), env=env) as pr:
        change = await pr.load_change()
        previous = await pr.load_previous()
        await pr.publish_review(not_reviewed(), change.files, previous, fail_on=fail_on, approve=True, max_inline=20)
        return pr.posted


def _says_nothing_was_reviewed(body: str) -> None:
    assert "Not reviewed" in body and "Nothing was reviewed" in body
    assert "does not approve it" in body
    assert "<details open>" in body  # the skipped files are shown, not folded away
    for skipped in SKIPPED:
        assert f"`{skipped.path}`: {skipped.reason}" in body
    assert check_published(body) == []
    state = parse_summary(body)
    assert state is not None and state.verdict == "not_reviewed"


# -- GitLab ----------------------------------------------------------------------------------------------
def test_gitlab_gives_no_approval_and_the_summary_says_nothing_was_reviewed(gl: FakeGitLab) -> None:  # noqa: F811
    posted = asyncio.run(_publish_gitlab(gl))

    assert gl.approvals(1, 7) == []
    assert "approval" not in posted
    _says_nothing_was_reviewed(gitlab_summary(gl)["body"])


def test_gitlab_withdraws_the_approval_it_gave_an_earlier_commit(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, _, err = gitlab_run(gl, monkeypatch, [B], "--publish")
    assert code == 0, err
    assert gl.approvals(1, 7) == ["project_1_bot"]

    posted = asyncio.run(_publish_gitlab(gl))

    assert gl.approvals(1, 7) == []
    assert "approval withdrawn" in posted
    _says_nothing_was_reviewed(gitlab_summary(gl)["body"])


# -- GitHub ----------------------------------------------------------------------------------------------
def test_github_check_run_is_neutral_and_no_approval_is_given(gh: FakeGitHub) -> None:  # noqa: F811
    asyncio.run(_publish_github(gh))

    [check] = gh.check_runs()
    assert check.conclusion == "neutral"
    assert check.title.startswith("not reviewed: 2 file(s) skipped")
    assert "APPROVED" not in bot_reviews(gh)
    _says_nothing_was_reviewed(github_summary(gh))


def test_github_dismisses_its_earlier_approval(gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    code, _, err = github_run(gh, monkeypatch, [B], "--publish")
    assert code == 0, err
    assert bot_reviews(gh) == ["APPROVED"]

    posted = asyncio.run(_publish_github(gh))

    assert "approval withdrawn" in posted
    assert [r.state for r in gh.reviews(7) if r.state == "APPROVED"] == []
    assert sorted(c.conclusion or "" for c in gh.check_runs()) == ["neutral", "success"]  # the first run's, then this


def test_github_check_run_fails_when_fail_on_unreviewed(gh: FakeGitHub) -> None:  # noqa: F811
    asyncio.run(_publish_github(gh, fail_on="unreviewed"))

    [check] = gh.check_runs()
    assert check.conclusion == "failure"
