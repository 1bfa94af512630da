"""``codejury comment`` in CI: the comment that started the job is carried out as the service would (writers only)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from codejury_fakes.github import FakeGitHub

from codejury.cli import cli
from codejury.forges.github import adapter as github_mod
from codejury.forges.github.api import GitHubAPI
from codejury.testing.scripted import Final, Raw, ScriptedResolver
from tests.service.helpers import NEW, OLD
from tests.service.test_local_reviews import FINDING

BOT, TOKEN = "codejury-bot", "ghp_codejury_bot"
ANSWER = {"answer": "It renames `line 5` to `line five` in app.py:5.", "lighthearted": False}
DRAFT = {"summary": "Renames `line 5` to `line five`.", "groups": [], "diagram": ""}


@pytest.fixture
def gh(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    monkeypatch.setattr(github_mod, "GitHubAPI", functools.partial(GitHubAPI, backoff_s=0.001))
    with FakeGitHub("octo/app") as server:
        server.add_user(BOT, permission="write")
        server.add_token(TOKEN, user=BOT)
        server.add_user("alice", permission="write")
        server.add_user("rita", permission="read")
        server.add_pr(number=7, author="alice", files={"app.py": (OLD, NEW)}, body="Adds things.")
        yield server


def comment(gh: FakeGitHub, tmp_path: Path, login: str, body: str, **payload: Any) -> Result:
    """A comment on the pull request, and ``codejury comment`` run on its event as a workflow would run it."""
    url = f"{gh.api_url}/octo/app/pull/7"
    comment_id = gh.add_issue_comment(7, body, user=login)
    event = {
        "action": "created",
        "issue": {"number": 7, "html_url": url, "pull_request": {"html_url": url}},
        "comment": {"id": comment_id, "body": body, "user": {"login": login}},
        "repository": {"full_name": "octo/app"},
        "sender": {"login": login, "type": "User"},
        **payload,
    }
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    env = {
        "GITHUB_EVENT_PATH": str(path), "GITHUB_EVENT_NAME": "issue_comment", "CODEJURY_GITHUB_TOKEN": TOKEN,
        "CODEJURY_GITHUB_API_URL": gh.api_url, "CODEJURY_RECORD_URL": "none", "CODEJURY_GITHUB_URL": gh.api_url,
    }  # fmt: skip
    resolver = ScriptedResolver(
        {"reviewer": [Final([FINDING])], "coordinator": [Raw(ANSWER)]}, walkthroughs={"coordinator": [Raw(DRAFT)]}
    )
    flags = ["--plugin", "codejury.testing.scripted", "--model", "scripted:reviewer"]
    flags += ["--model-for", "coordinator=scripted:coordinator"]
    with resolver.active():
        result = CliRunner(env=env).invoke(cli, ["comment", *flags], catch_exceptions=False)
    result.resolver = resolver  # type: ignore[attr-defined]
    return result


def bot_comments(gh: FakeGitHub) -> list[str]:
    return [c.body for c in gh.issue_comments(7) if c.user == BOT]


def test_a_writers_ask_is_answered_on_the_pull_request(gh: FakeGitHub, tmp_path: Path) -> None:
    result = comment(gh, tmp_path, "alice", "/codejury ask what does this change do?")
    assert result.exit_code == 0, result.stderr
    [answer] = bot_comments(gh)
    assert "It renames `line 5`" in answer and "> what does this change do?" in answer


def test_a_writers_review_command_reviews_and_publishes_at_once(gh: FakeGitHub, tmp_path: Path) -> None:
    result = comment(gh, tmp_path, "alice", "/codejury review")
    assert result.exit_code == 0, result.stderr
    assert result.resolver.models["reviewer"].calls >= 1  # type: ignore[attr-defined]
    assert any("codejury review" in body and "Verdict" in body for body in bot_comments(gh))
    assert "review: review " in result.stderr  # the job's outcome line


def test_a_writers_describe_gets_the_walkthrough(gh: FakeGitHub, tmp_path: Path) -> None:
    result = comment(gh, tmp_path, "alice", "/codejury describe")
    assert result.exit_code == 0, result.stderr
    [walkthrough] = bot_comments(gh)
    assert walkthrough.startswith("### Walkthrough\n\nRenames `line 5` to `line five`.")


@pytest.mark.parametrize(
    ("login", "body", "extra", "said"),
    [
        ("rita", "/codejury review", {}, "ignored: review from a user without write access"),
        ("alice", "Looks good to me", {}, "nothing to do: the comment gives codejury no command"),
        (
            "dependabot[bot]",
            "/codejury review",
            {"sender": {"login": "dependabot[bot]", "type": "Bot"}},
            "sent by a bot",
        ),
    ],
)
def test_readers_bots_and_plain_comments_get_nothing(
    gh: FakeGitHub, tmp_path: Path, login: str, body: str, extra: dict[str, Any], said: str
) -> None:
    if login not in ("rita", "alice"):
        gh.add_user(login)
    result = comment(gh, tmp_path, login, body, **extra)
    assert result.exit_code == 0, result.stderr
    assert said in result.stderr
    assert bot_comments(gh) == []
    assert result.resolver.models["reviewer"].calls == 0  # type: ignore[attr-defined]


def test_without_an_event_it_is_a_one_line_error(tmp_path: Path) -> None:
    result = CliRunner(env={"GITHUB_EVENT_PATH": "", "TRIGGER_PAYLOAD": ""}).invoke(cli, ["comment"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "codejury: no event to read: give --event FILE, or run in a GitHub workflow or a triggered GitLab pipeline"
    )


def test_a_gitlab_note_from_a_trigger_payload_is_carried_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from codejury_fakes.gitlab import FakeGitLab

    from codejury.forges.gitlab import adapter as gitlab_mod
    from codejury.forges.gitlab.api import GitLabAPI
    from tests.service.test_chat import note_delivery

    monkeypatch.setattr(gitlab_mod, "GitLabAPI", functools.partial(GitLabAPI, backoff_s=0.001))
    with FakeGitLab() as gl:
        gl.add_mr(1, 7, files={"app.py": (OLD, NEW)}, description="Adds things.")
        note = gl.add_note(1, 7, "/codejury describe", author="alice")
        body, _ = note_delivery(gl, note)
        payload = tmp_path / "payload.json"
        payload.write_bytes(body)
        env = {"TRIGGER_PAYLOAD": str(payload), "CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN,
               "CODEJURY_GITLAB_URL": gl.url, "CODEJURY_RECORD_URL": "none", "GITHUB_EVENT_PATH": ""}  # fmt: skip
        resolver = ScriptedResolver(
            {"coordinator": [Raw({"decisions": []})]}, walkthroughs={"coordinator": [Raw(DRAFT)]}
        )
        flags = ["--plugin", "codejury.testing.scripted", "--model", "scripted:coordinator"]
        with resolver.active():
            result = CliRunner(env=env).invoke(cli, ["comment", *flags], catch_exceptions=False)
        replies = [n["body"] for n in gl.notes(1, 7, system=False) if n["author"]["username"] == FakeGitLab.BOT]
    assert result.exit_code == 0, result.stderr
    assert [r.split("\n")[0] for r in replies] == ["### Walkthrough"]
