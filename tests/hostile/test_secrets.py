"""Issue 11, class 8: a model that echoes a secret never gets it out of the process.

A scripted OpenAI-compatible server on loopback plays a security reviewer that reads a ``.env``
file (a deploy token in it) and writes the provider's own API key, the deploy token, a base64
Basic-auth header and a URL-encoded database password into its finding. Every way out is checked:
the next request to the model, the coordinator's request, every output format, the ``-o`` file,
the ``--events`` file, stderr, a forge comment and a forge failure note. Values shorter than 8
characters are not scrubbed (they would wreck ordinary text), and that is checked too.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from codejury_fakes.gitlab import FakeGitLab
from codejury_fakes.provider_server import FakeProviderServer, ToolCallReply
from pydantic_ai import models

from codejury.cli import cli
from codejury.models import registry
from codejury.secrets import REDACTED
from codejury.testing.scripted import Fail
from codejury.testing.scripted import finding as model_finding
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, unified_diff
from tests.forges.scripted_cli import scripted_review
from tests.hostile.conftest import run_codejury

PROVIDER_KEY = "gw-live-7f3a9c1e5b2d8e4a"  # read from TEAMGW_CREDENTIAL: no credential-looking suffix
DEPLOY_TOKEN = "dpl-9d8c7b6a5f4e3d2c1b0a"  # in the environment and in the repository's .env
DB_PASSWORD = "p@ss w/rd:42!x"  # scrubbed URL-encoded too
SHORT_TOKEN = "ab12cd3"  # 7 characters: below the minimum, left alone
BASIC = base64.b64encode(f"x-access-token:{DEPLOY_TOKEN}".encode()).decode()
DB_URL = f"postgres://app:{quote(DB_PASSWORD, safe='')}@db/prod"
PATH = "app/auth/users.py"
ENV = {
    "TEAMGW_CREDENTIAL": PROVIDER_KEY,
    "DEPLOY_TOKEN": DEPLOY_TOKEN,
    "DB_PASSWORD": DB_PASSWORD,
    "SHORT_TOKEN": SHORT_TOKEN,
}
LEAKS = (PROVIDER_KEY, DEPLOY_TOKEN, DB_PASSWORD, BASIC, quote(DB_PASSWORD, safe=""))
LEAKY = {
    "category": "secrets",
    "severity": "critical",
    "path": PATH,
    "start_line": 10,
    "end_line": 10,
    "title": f"Provider key {PROVIDER_KEY} is used in find_user",
    "body": f"The .env holds DEPLOY_TOKEN={DEPLOY_TOKEN} (Authorization: Basic {BASIC}); the database is "
    f"{DB_URL}; the short token {SHORT_TOKEN} is quoted too.",
    "suggestion": f'API_KEY = os.environ["TEAMGW_CREDENTIAL"]  # not "{PROVIDER_KEY}"',
    "confidence": 0.95,
}


def assert_clean(text: str, where: str) -> None:
    for leak in LEAKS:
        assert leak not in text, f"{leak!r} leaked through {where}"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProviderServer]:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)
    registry.clear_model_cache()
    with FakeProviderServer() as srv:
        srv.script("sec", [ToolCallReply([("read_file", {"path": ".env"})]), _final([LEAKY])])
        srv.script("*", [_final([])])
        srv.script("big", [ToolCallReply([("final_result", {"decisions": []})])])
        yield srv
    registry.clear_model_cache()


def _final(findings: list[dict[str, Any]]) -> ToolCallReply:
    return ToolCallReply([("final_result", {"findings": findings})])


def _workspace(tmp_path: Path, server: FakeProviderServer) -> list[str]:
    """A repository with the change and a .env, a provider config; the review's arguments."""
    repo = tmp_path / "repo"
    (repo / "app/auth").mkdir(parents=True, exist_ok=True)
    (repo / PATH).write_text(AUTH_NEW)
    (repo / ".env").write_text(f"DEPLOY_TOKEN={DEPLOY_TOKEN}\nDATABASE_URL={DB_URL}\n")
    config = tmp_path / "codejury.toml"
    config.write_text(
        f'[providers.teamgw]\nbase_url = "{server.openai_base_url}"\napi_key_env = "TEAMGW_CREDENTIAL"\n'
        '[models]\ntop = "teamgw:big"\nstandard = "teamgw:mid"\nlight = "teamgw:small"\n'
        '[reviewers.security]\nmodel = "teamgw:sec"\n'
    )
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff(PATH, AUTH_OLD, AUTH_NEW))
    return ["review", "--diff", str(diff), "--repo", str(repo), "--config", str(config), "--fail-on", "never"]


def _review(tmp_path: Path, server: FakeProviderServer, *extra: str) -> tuple[int, str, str]:
    result = CliRunner(env=ENV).invoke(cli, [*_workspace(tmp_path, server), *extra], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_the_echoed_secrets_are_replaced_in_the_finding_and_the_short_one_stays(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    code, out, err = _review(tmp_path, server, "--format", "json")
    assert code == 0, err
    [leaked] = [f for f in json.loads(out)["findings"] if f["category"] == "secrets"]
    assert leaked["title"] == f"Provider key {REDACTED} is used in find_user"
    assert f"DEPLOY_TOKEN={REDACTED}" in leaked["body"]
    # the token's part of the Basic header is replaced; the "x-access-token:" part before it stays
    assert f"{REDACTED}); the database" in leaked["body"]
    assert f"postgres://app:{REDACTED}@db/prod" in leaked["body"]
    assert leaked["suggestion"].endswith(f'# not "{REDACTED}"')
    assert f"short token {SHORT_TOKEN} is quoted" in leaked["body"]  # under 8 characters: documented, kept
    assert_clean(out + err, "stdout/stderr")


def test_a_file_read_through_a_tool_reaches_the_next_request_scrubbed(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    assert _review(tmp_path, server, "--format", "json")[0] == 0
    first, after_read = server.requests_for("sec")[:2]
    tool_results = [m for m in after_read.body["messages"] if m["role"] == "tool"]
    assert tool_results and f"DEPLOY_TOKEN={REDACTED}" in tool_results[0]["content"]
    walkthroughs = server.walkthrough_requests
    assert walkthroughs  # the walkthrough reads the patches: its requests are scrubbed too
    for request in [*server.requests, *walkthroughs]:
        assert_clean(json.dumps(request.body), f"the request to {request.model}")
        assert request.headers["authorization"] == f"Bearer {PROVIDER_KEY}"  # the key still authenticates


def test_the_coordinator_judges_the_finding_without_the_secrets(tmp_path: Path, server: FakeProviderServer) -> None:
    assert _review(tmp_path, server, "--format", "json")[0] == 0
    [judge] = server.requests_for("big")
    prompt = json.dumps(judge.body)
    assert "is used in find_user" in prompt and REDACTED in prompt  # it sees the finding, scrubbed
    assert_clean(prompt, "the coordinator's prompt")


@pytest.mark.parametrize("fmt", ["json", "markdown", "sarif", "rdjson", "codeclimate", "terminal"])
def test_no_output_format_nor_the_output_and_event_files_carry_a_secret(
    tmp_path: Path, server: FakeProviderServer, fmt: str
) -> None:
    out_file, events = tmp_path / f"review.{fmt}", tmp_path / "events.jsonl"
    code, out, err = _review(tmp_path, server, "--format", fmt, "-o", str(out_file), "--events", str(events))
    assert code == 0, err
    written = out_file.read_text(encoding="utf-8")
    assert "is used in find_user" in written and "REDACTED" in written
    assert_clean(written, f"the {fmt} file")
    assert_clean(out + err, f"stdout/stderr with --format {fmt}")
    log = events.read_text(encoding="utf-8")
    assert '"type":"review_finished"' in log
    assert_clean(log, "the event log")


def test_a_whole_run_in_a_subprocess_prints_no_secret(tmp_path: Path, server: FakeProviderServer) -> None:
    run = run_codejury([*_workspace(tmp_path, server), "--format", "sarif"], cwd=tmp_path, env=ENV, timeout_s=90)
    assert run.rc == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert "is used in find_user" in run.stdout
    assert_clean(run.stdout + run.stderr, "the process's output")
    run.assert_bounded(wall_s=60)


# -- forges: comments built from the review, and the failure note ----------------------------------------
FORGE_TOKEN = "glpat-Zq8vR2mX7kLp4NwT9cYb"


@pytest.fixture
def gl(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitLab]:
    old = "".join(f"line {n}\n" for n in range(1, 21))
    with FakeGitLab() as server:
        server.add_token(FORGE_TOKEN, FakeGitLab.BOT)
        server.add_mr(1, 7, files={"app.py": (old, old.replace("line 5\n", "line five\n"))})
        monkeypatch.setenv("CODEJURY_GITLAB_TOKEN", FORGE_TOKEN)
        monkeypatch.setenv("CODEJURY_GITLAB_URL", server.url)
        yield server


def _posted(gl: FakeGitLab) -> str:
    notes = gl.notes(1, 7, system=False)
    bodies = [n["body"] for n in notes] + [n["body"] for d in gl.discussions(1, 7) for n in d["notes"]]
    return "\n".join(bodies)


def test_a_comment_posted_on_gitlab_never_holds_the_bots_own_token(
    gl: FakeGitLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    leaky = model_finding(
        "app.py", 5, f"Token {FORGE_TOKEN} in the CI config", body=f"curl -H 'PRIVATE-TOKEN: {FORGE_TOKEN}'"
    )
    url = f"{gl.url}/acme/widgets/-/merge_requests/7"
    code, out, err, _ = scripted_review(monkeypatch, ["--url", url, "--publish"], [leaky])
    assert code == 0, err
    posted = _posted(gl)
    assert "in the CI config" in posted and REDACTED in posted  # the finding was published, scrubbed
    assert FORGE_TOKEN not in posted and FORGE_TOKEN not in out and FORGE_TOKEN not in err


def test_a_failure_quoting_a_secret_is_scrubbed_on_stderr_and_in_the_failure_note(
    gl: FakeGitLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    boom = Fail(RuntimeError(f"upstream rejected PRIVATE-TOKEN {FORGE_TOKEN}"))
    url = f"{gl.url}/acme/widgets/-/merge_requests/7"
    code, out, err, _ = scripted_review(monkeypatch, ["--url", url, "--publish"], reviewer=[boom])
    assert code == 3, err
    assert "no reviewer succeeded" in err and "upstream rejected" in err
    posted = _posted(gl)
    assert "upstream rejected" in posted  # the failure note went out, scrubbed
    assert FORGE_TOKEN not in posted and FORGE_TOKEN not in out and FORGE_TOKEN not in err
