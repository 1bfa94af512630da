"""Defect class 8, forge part: no known secret value reaches a forge, in any comment or check run.

The review published here carries an API key from the environment and the forge token itself in
its summary, a finding's title, body and suggestion (as a model that read them could write them).
Published through the real adapters against the fake GitLab and GitHub, nothing stored there holds
either value, and ``[REDACTED]`` stands in their place.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from codejury_fakes.github import FakeGitHub
from codejury_fakes.gitlab import FakeGitLab

from codejury.findings import Finding, Review, ReviewerReport
from codejury.forges.github import GitHubPullRequest
from codejury.forges.github import target_from_url as github_target
from codejury.forges.gitlab import GitLabMergeRequest
from codejury.forges.gitlab import target_from_url as gitlab_target
from codejury.forges.safety import UnsafeBody, scrub_payload, scrub_secrets
from codejury.secrets import REDACTED, Redactor
from tests.forges.test_github_bot import ACTIONS, pr_url
from tests.forges.test_github_bot import gh as gh  # noqa: F401  (the fixture)
from tests.forges.test_gitlab_bot import gl as gl  # noqa: F401  (the fixture)
from tests.forges.test_gitlab_bot import url

API_KEY = "sk-live-0123456789abcdef0123"


def leaky_review(token: str) -> Review:
    finding = Finding(
        id="f1",
        reviewer="security",
        category="secrets",
        severity="warning",
        path="app.py",
        start_line=5,
        end_line=5,
        title=f"Key {API_KEY} is committed",
        body=f"The key `{API_KEY}` and the token {token} were found; rotate both.",
        suggestion=f'KEY = os.environ["KEY"]  # was {API_KEY}\n',
        confidence=0.9,
    )
    return Review(
        verdict="approved_with_comments",
        tier="lite",
        summary=f"One finding. The process had OPENAI_API_KEY={API_KEY}.",
        findings=[finding],
        reviewers=[ReviewerReport(name="security", model="scripted:reviewer", status="ok")],
    )


def _stored(requests: list[object]) -> str:
    """Every body the fake received, as one text."""
    return "\n".join(json.dumps(getattr(r, "body", None)) for r in requests)


def test_gitlab_comments_carry_no_secret(gl: FakeGitLab) -> None:  # noqa: F811
    env = {"CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN, "CODEJURY_GITLAB_URL": gl.url, "OPENAI_API_KEY": API_KEY}

    async def publish() -> None:
        async with GitLabMergeRequest(gitlab_target(url(gl), env), env=env) as mr:
            change = await mr.load_change()
            previous = await mr.load_previous()
            review = leaky_review(FakeGitLab.BOT_TOKEN)
            await mr.publish_review(review, change.files, previous, fail_on="never", approve=True, max_inline=20)

    asyncio.run(publish())

    bodies = [n["body"] for n in gl.notes(1, 7, system=False)]
    assert len(bodies) == 2  # the inline thread and the summary
    sent = _stored(list(gl.requests))
    for secret in (API_KEY, FakeGitLab.BOT_TOKEN):
        assert all(secret not in body for body in bodies)
        assert secret not in sent
    assert all(REDACTED in body for body in bodies)


def test_github_review_summary_and_check_run_carry_no_secret(gh: FakeGitHub) -> None:  # noqa: F811
    env = {"GITHUB_TOKEN": ACTIONS, "CODEJURY_GITHUB_URL": gh.api_url, "OPENAI_API_KEY": API_KEY}

    async def publish() -> None:
        async with GitHubPullRequest(github_target(pr_url(gh), env), env=env) as pr:
            change = await pr.load_change()
            previous = await pr.load_previous()
            await pr.publish_review(
                leaky_review(ACTIONS), change.files, previous, fail_on="never", approve=True, max_inline=20
            )

    asyncio.run(publish())

    [check] = gh.check_runs()
    texts = [c.body for c in gh.issue_comments(7)] + [c.body for c in gh.review_comments(7)]
    texts += [check.title, check.summary]
    sent = _stored(list(gh.requests))
    for secret in (API_KEY, ACTIONS):
        assert all(secret not in text for text in texts)
        assert secret not in sent
    assert REDACTED in gh.issue_comments(7)[0].body and REDACTED in gh.review_comments(7)[0].body


def test_every_string_of_a_payload_is_scrubbed() -> None:
    redactor = Redactor([API_KEY])
    payload = {"body": f"key {API_KEY}", "comments": [{"body": API_KEY, "line": 5}], API_KEY: [API_KEY, 3]}

    scrubbed = scrub_payload(payload, redactor)

    assert API_KEY not in json.dumps(scrubbed)
    assert scrubbed["comments"][0] == {"body": REDACTED, "line": 5}
    assert scrub_payload(payload, None) is payload  # no secrets known: the body goes as it is


def test_a_scrub_that_would_make_a_safe_body_unsafe_is_refused() -> None:
    """The check after scrubbing: a replacement that starts a quick action is never posted."""
    redactor = Redactor(["hunter2-password-value"], replacement="/approve")
    assert scrub_secrets("the value is hunter2-password-value", redactor) == "the value is /approve"
    with pytest.raises(UnsafeBody):
        scrub_secrets("hunter2-password-value\nmore text", redactor)
