"""Whole reviews through the real provider SDKs, talking to a fake provider on loopback.

The command line is run as a user runs it: a provider declared in ``.codejury.toml`` with a
base URL, its key in an environment variable, ``--format json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from codejury_fakes.provider_server import ErrorReply, FakeProviderServer, TokenUsage, ToolCallReply
from pydantic_ai import models

from codejury.cli import cli
from codejury.models import registry
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, unified_diff

KEY = "gw-secret-key-4242"
PATH = "app/auth/users.py"
SQLI = {
    "category": "security",
    "severity": "critical",
    "path": PATH,
    "start_line": 10,
    "end_line": 10,
    "title": "SQL injection in find_user",
    "body": "The name is formatted into the query.",
    "confidence": 0.95,
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProviderServer]:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)
    registry.clear_model_cache()
    with FakeProviderServer() as srv:
        yield srv
    registry.clear_model_cache()


def run(tmp_path: Path, server: FakeProviderServer, *extra: str) -> tuple[int, str, str]:
    repo = tmp_path / "repo"
    (repo / "app/auth").mkdir(parents=True)
    (repo / PATH).write_text(AUTH_NEW)
    config = tmp_path / "codejury.toml"
    config.write_text(
        "analyzers = false\n"  # the wire format under test, not the analyzers' checks
        f'[providers.teamgw]\nbase_url = "{server.openai_base_url}"\napi_key_env = "TEAMGW_KEY"\n'
        '[models]\ntop = "teamgw:big"\nstandard = "teamgw:mid"\nlight = "teamgw:small"\n'
        '[reviewers.security]\nmodel = "teamgw:sec"\n'
    )
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff(PATH, AUTH_OLD, AUTH_NEW))
    result = CliRunner(env={"TEAMGW_KEY": KEY}).invoke(
        cli,
        ["review", "--diff", str(diff), "--repo", str(repo), "--config", str(config), "--format", "json", *extra],
        catch_exceptions=False,
    )
    return result.exit_code, result.stdout, result.stderr


def final(findings: list[dict[str, object]], **usage: int) -> ToolCallReply:
    return ToolCallReply([("final_result", {"findings": findings})], usage=TokenUsage(**usage))


def test_review_through_the_openai_wire_format_blocks_on_a_critical(tmp_path: Path, server: FakeProviderServer) -> None:
    server.script("sec", [final([SQLI], input=3000, output=120, cached_read=2000)])
    server.script("*", [final([], input=2500, output=10)])
    server.script("big", [ToolCallReply([("final_result", {"decisions": []})])])
    code, out, err = run(tmp_path, server, "--events", str(tmp_path / "events.jsonl"))
    assert code == 1, err  # --fail-on requested_changes (the default) triggers
    review = json.loads(out)
    assert review["verdict"] == "requested_changes"
    assert [(f["path"], f["start_line"]) for f in review["findings"]] == [(PATH, 10)]
    sec = next(r for r in review["reviewers"] if r["name"] == "security")
    assert (sec["model"], sec["input_tokens"], sec["output_tokens"], sec["cache_read_tokens"]) == (
        "teamgw:sec",
        3000,
        120,
        2000,
    )
    assert {r.model for r in server.requests} == {"sec", "mid", "small", "big"}
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.requests)
    # the key never leaves through output, events or prompts
    assert KEY not in out and KEY not in err
    assert KEY not in (tmp_path / "events.jsonl").read_text()
    assert all(KEY not in json.dumps(r.body) for r in server.requests)


def test_a_provider_error_fails_one_reviewer_and_the_review_goes_on(tmp_path: Path, server: FakeProviderServer) -> None:
    server.script("sec", [ErrorReply(503, message="overloaded")])
    server.script("*", [final([{**SQLI, "severity": "warning", "title": "Query built with %"}])])
    server.script("big", [ToolCallReply([("final_result", {"decisions": []})])])
    code, out, err = run(tmp_path, server, "--fail-on", "never")
    assert code == 0, err
    review = json.loads(out)
    sec = next(r for r in review["reviewers"] if r["name"] == "security")
    assert sec["status"] == "failed" and "503" in sec["error"]
    assert any(f["title"] == "Query built with %" for f in review["findings"])
    assert "security" in review["summary"]


def test_output_cut_off_at_max_tokens_fails_that_reviewer_clearly(tmp_path: Path, server: FakeProviderServer) -> None:
    cut = ToolCallReply([("final_result", '{"findings": [{"category": "secu')], finish="length")
    server.script("sec", [cut])
    server.script("*", [final([])])
    code, out, err = run(tmp_path, server, "--fail-on", "never")
    assert code == 0, err
    sec = next(r for r in json.loads(out)["reviewers"] if r["name"] == "security")
    assert sec["status"] == "failed"
    assert "max" in sec["error"].lower() or "truncat" in sec["error"].lower() or "limit" in sec["error"].lower()


def test_every_reviewer_failing_exits_3_and_prints_no_review(tmp_path: Path, server: FakeProviderServer) -> None:
    server.script("*", [ErrorReply(500, message="boom")])
    code, out, err = run(tmp_path, server)
    assert code == 3
    assert out == ""
    assert "no reviewer succeeded" in err and KEY not in err
