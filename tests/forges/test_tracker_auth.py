"""The tracker's token as Jira takes it: Jira Cloud's ``email:api_token`` as basic auth, a Data Center personal
access token as a bearer token, against a fake Jira that, like each service, refuses the other scheme with 401;
neither the token nor the e-mail address appears in what the review writes."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from codejury_fakes.github import FakeGitHub
from codejury_fakes.jira import FakeJira

from codejury.change.tracker import authorization_header, read_tracker_issues
from tests.forges.test_github_bot import gh as gh  # noqa: F401  (the fixture)
from tests.forges.test_tracker_issues import CRITERIA, configured, review

EMAIL = "ann@example.com"
API_TOKEN = "ATATT3xFfGF0-cloud-api-token"
PAT = "NjM0MzQ5MjQ3OTk2OmDataCenterPAT"


def test_email_and_api_token_go_as_basic_auth_and_anything_else_as_a_bearer_token() -> None:
    basic = authorization_header(f"{EMAIL}:{API_TOKEN}")
    assert basic.startswith("Basic ") and base64.b64decode(basic[6:]).decode() == f"{EMAIL}:{API_TOKEN}"
    assert authorization_header(PAT) == f"Bearer {PAT}"
    assert authorization_header("user:secret") == "Bearer user:secret"  # no @ before the colon: not an e-mail
    assert authorization_header(f"{EMAIL}:") == f"Bearer {EMAIL}:"  # nothing after it: not a pair


@pytest.mark.parametrize(
    ("email", "token", "sent", "read"),
    [
        (EMAIL, f"{EMAIL}:{API_TOKEN}", "basic", True),  # Cloud, as Atlassian documents it
        (EMAIL, API_TOKEN, "bearer", False),  # Cloud refuses its API token as a bearer token
        (None, PAT, "bearer", True),  # Data Center's personal access token
        (None, f"{EMAIL}:{PAT}", "basic", False),  # Data Center refuses basic auth for its PAT
    ],
)
async def test_each_jira_reads_only_its_own_scheme(email: str | None, token: str, sent: str, read: bool) -> None:
    with FakeJira(token=API_TOKEN if email else PAT, email=email) as jira:
        jira.add_issue("SHOP-12", "Export orders", CRITERIA)
        issues, notes = await read_tracker_issues(["SHOP-12"], jira.url_template(version=3), token, token_env="JIRA")
    assert [r.scheme for r in jira.requests] == [sent]
    assert [i.ref for i in issues] == (["SHOP-12"] if read else [])
    if not read:
        how = "basic auth (email:api_token)" if sent == "basic" else "a bearer token"
        assert notes == [
            f"the issue tracker refused the token (401, sent as {how}; check the variable JIRA): SHOP-12 not read"
        ]
    assert API_TOKEN not in json.dumps(notes) and PAT not in json.dumps(notes) and EMAIL not in json.dumps(notes)


def test_a_review_reads_jira_cloud_with_email_and_api_token(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    with FakeJira(token=API_TOKEN, email=EMAIL) as jira:
        jira.add_issue("SHOP-12", "Export orders as CSV", CRITERIA)
        data, err, prompt = review(
            gh, monkeypatch, tmp_path, "SHOP-12: export", configured(jira, 3), jira_token=f"{EMAIL}:{API_TOKEN}"
        )
    assert "SHOP-12: Export orders as CSV" in prompt.split("<linked_issues>")[1]
    assert [(r.scheme, r.authorization) for r in jira.requests] == [("basic", "right")]
    written = json.dumps(data) + err + prompt
    assert API_TOKEN not in written and base64.b64encode(f"{EMAIL}:{API_TOKEN}".encode()).decode() not in written
