"""A review run as a user runs it on a cloud provider: ``codejury review --diff`` with a config file and the cloud's
environment, the review's JSON, stderr and event log kept for the tests to read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from click.testing import CliRunner
from codejury_fakes.provider_server import FakeProviderServer, TokenUsage, ToolCallReply
from pydantic_ai import models

from codejury.cli import cli
from codejury.models import registry
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, unified_diff
from tests.test_review_over_http import PATH, SQLI

__all__ = ["DECIDE", "PATH", "SQLI", "Run", "cloud_env", "final", "review", "serving"]

Fake = TypeVar("Fake", bound=FakeProviderServer)

# Every cloud variable a developer's shell or a CI runner may hold: unset, so only what a test gives is read.
_AMBIENT = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "AWS_BEARER_TOKEN_BEDROCK",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "OPENAI_API_VERSION",
)


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str
    events: str

    @property
    def review(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.out)
        return loaded

    def reviewer(self, name: str) -> dict[str, Any]:
        return next(r for r in self.review["reviewers"] if r["name"] == name)

    def failbacks(self) -> list[tuple[str, str]]:
        lines = [json.loads(line) for line in self.events.splitlines() if line.strip()]
        return [(e["from_model"], e["to_model"]) for e in lines if e.get("type") == "model_failback"]


def cloud_env(tmp_path: Path, env: dict[str, str]) -> dict[str, str | None]:
    """``env`` over a clean slate: no ambient cloud variables, no ``~/.aws`` files, no metadata servers."""
    clean: dict[str, str | None] = dict.fromkeys(_AMBIENT)
    clean.update(
        AWS_CONFIG_FILE=str(tmp_path / "no-aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-aws-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
        NO_GCE_CHECK="true",  # read when google-auth's metadata module is imported
        CLOUDSDK_CONFIG=str(tmp_path / "no-gcloud"),
    )
    clean.update(env)
    return clean


def review(tmp_path: Path, config: str, env: dict[str, str], *extra: str) -> Run:
    """``codejury review`` of the sample change with ``config`` (TOML) and ``env``; ``--format json``, events kept."""
    repo = tmp_path / "repo"
    (repo / "app/auth").mkdir(parents=True, exist_ok=True)
    (repo / PATH).write_text(AUTH_NEW)
    config_file = tmp_path / "codejury.toml"
    config_file.write_text("analyzers = false\n" + config)
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff(PATH, AUTH_OLD, AUTH_NEW))
    events = tmp_path / "events.jsonl"
    args = ["review", "--diff", str(diff), "--repo", str(repo), "--config", str(config_file), "--format", "json"]
    result = CliRunner(env=cloud_env(tmp_path, env)).invoke(
        cli, [*args, "--events", str(events), *extra], catch_exceptions=False
    )
    return Run(result.exit_code, result.stdout, result.stderr, events.read_text() if events.exists() else "")


def final(findings: list[dict[str, object]], **usage: int) -> ToolCallReply:
    return ToolCallReply([("final_result", {"findings": findings})], usage=TokenUsage(**usage))


DECIDE = ToolCallReply([("final_result", {"decisions": []})])


@contextmanager
def serving(fake: Fake, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fake]:
    """``fake`` started, model requests allowed, and no model built for another test's fake kept."""
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)
    registry.clear_model_cache()
    with fake:
        yield fake
    registry.clear_model_cache()
