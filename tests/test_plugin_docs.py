"""docs/plugins.md is a working plugin: its Python blocks, in order, are loaded with --plugin and
a review runs where the plugin's reviewer, output format and provider kind are all used."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from codejury_fakes.provider_server import FakeProviderServer, ToolCallReply
from pydantic_ai import models

from codejury.cli import cli
from codejury.models import registry
from tests.engine_helpers import unified_diff

DOC = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
OLD = "def total(xs):\n    return sum(xs)\n"
NEW = "def total(xs):\n    # copied from numpy/core/fromnumeric.py\n    return sum(xs)\n"
GATEWAY_KEY = "corp-key-0123456789"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)


@pytest.fixture
def house_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The doc's plugin written as ``house_plugin.py`` and importable."""
    source = "\n\n".join(_blocks("python"))
    assert "from codejury.plugin import" in source
    assert not re.search(r"^\s*(from|import) codejury(?!\.plugin\b)", source, flags=re.MULTILINE)
    (tmp_path / "house_plugin.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "house_plugin", raising=False)
    return "house_plugin"


def _finding(path: str, line: int, title: str) -> dict[str, object]:
    return {"category": "licensing", "severity": "warning", "path": path, "start_line": line, "end_line": line,
            "title": title, "body": "Keep numpy's BSD notice.", "confidence": 0.9}  # fmt: skip


def test_the_documented_plugin_adds_a_reviewer_a_format_and_a_provider_kind(
    house_plugin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)
    registry.clear_model_cache()
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff("stats.py", OLD, NEW))
    with FakeProviderServer() as server:
        server.script(
            "small-model", [ToolCallReply([("final_result", {"findings": [_finding("stats.py", 2, "Copied code")]})])]
        )
        server.script("big-model", [ToolCallReply([("final_result", {"decisions": []})])])
        server.script("*", [ToolCallReply([("final_result", {"findings": []})])])
        (config_toml,) = _blocks("toml")[:1]
        config = tmp_path / "codejury.toml"
        config.write_text(
            config_toml.replace("https://llm.example.internal/v1", server.openai_base_url)
            + '[reviewers.coordinator]\nmodel = "corp:big-model"\n'
        )
        result = CliRunner(env={"CORP_LLM_KEY": GATEWAY_KEY}).invoke(
            cli,
            [
                "review",
                "--diff",
                str(diff),
                "--config",
                str(config),
                "--plugin",
                house_plugin,
                "--format",
                "checklist",
                "--fail-on",
                "never",
            ],  # fmt: skip
            catch_exceptions=False,
        )
        requests = server.requests
    registry.clear_model_cache()
    assert result.exit_code == 0, result.stderr
    # the format: the plugin's checklist; the reviewer: licensing ran on a trivial (3-line) change
    assert result.stdout.startswith("Verdict: approved_with_comments\n")
    assert "- [ ] **warning** `stats.py:2` Copied code (licensing)" in result.stdout
    assert "tier trivial" in result.stderr and "licensing" in result.stderr
    # the provider kind: every model was built by the plugin's factory (key in X-Api-Key)
    assert {r.model for r in requests} >= {"small-model", "mid-model", "big-model"}
    assert all(r.headers.get("x-api-key") == GATEWAY_KEY for r in requests)
    assert all(GATEWAY_KEY not in r.headers.get("authorization", "") for r in requests)


def test_a_plugin_format_is_refused_without_its_plugin_in_one_line(tmp_path: Path) -> None:
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff("stats.py", OLD, NEW))
    result = CliRunner().invoke(cli, ["review", "--diff", str(diff), "--format", "checklist", "--dry-run"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "codejury: --format checklist: no such format; formats: codeclimate, json, markdown, rdjson, sarif, "
        "terminal (a plugin's format needs --plugin)"
    ]


def test_a_provider_of_the_plugins_kind_needs_its_base_url(house_plugin: str, tmp_path: Path) -> None:
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff("stats.py", OLD, NEW))
    config = tmp_path / "codejury.toml"
    config.write_text('[providers.corp]\nkind = "header-gateway"\n[models]\ntop = "corp:m"\nstandard = "corp:m"\n'
                      'light = "corp:m"\n')  # fmt: skip
    args = ["review", "--diff", str(diff), "--config", str(config), "--dry-run", "--format", "json"]
    refused = CliRunner().invoke(cli, [*args, "--plugin", house_plugin])
    assert refused.exit_code == 2
    assert "providers.corp.base_url is required for a header-gateway provider" in refused.stderr
    unknown = CliRunner().invoke(cli, args)  # without the plugin the kind is unknown, said as much
    assert unknown.exit_code == 2
    assert "providers.corp.kind must be one of" in unknown.stderr and "needs its plugin loaded" in unknown.stderr
    assert json.loads(CliRunner().invoke(cli, ["review", "--diff", str(diff), "--dry-run", "--format", "json"]).stdout)
