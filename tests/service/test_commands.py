"""``codejury serve`` and ``codejury worker`` on bad input: one line, exit 2, nothing started."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from codejury.cli import cli


def test_a_worker_without_a_database_says_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEJURY_DATABASE_URL", raising=False)
    result = CliRunner().invoke(cli, ["worker"])
    assert result.exit_code == 2
    assert "codejury worker needs --database postgresql://" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_database_that_is_not_postgresql_is_refused_in_one_line(command: str) -> None:
    result = CliRunner().invoke(cli, [command, "--database", "mysql://root:hunter2@db/reviews"])
    assert result.exit_code == 2
    assert "--database expects postgresql://" in result.stderr
    assert "hunter2" not in result.stderr


def test_a_github_app_without_its_key_is_refused_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEJURY_GITHUB_APP_ID", "4242")
    monkeypatch.setenv("CODEJURY_GITHUB_APP_PRIVATE_KEY", "not a key")
    result = CliRunner().invoke(cli, ["serve", "--port", "1"])
    assert result.exit_code == 2
    assert "CODEJURY_GITHUB_APP_PRIVATE_KEY" in result.stderr and "not a key" not in result.stderr


def test_the_help_names_the_secrets_and_the_worker_flags() -> None:
    serve = CliRunner().invoke(cli, ["serve", "--help"]).output
    assert "CODEJURY_GITHUB_WEBHOOK_SECRET" in serve and "--database" in serve
    worker = CliRunner().invoke(cli, ["worker", "--help"]).output
    assert "--stalled-after" in worker and "--heartbeat" in worker


def test_the_container_image_runs_the_service_on_every_address_by_default() -> None:
    import json
    from pathlib import Path

    root = Path(__file__).parents[2]
    lines = [line.strip() for line in (root / "Dockerfile").read_text().splitlines()]
    [cmd] = [line.removeprefix("CMD ") for line in lines if line.startswith("CMD ")]
    argv = json.loads(cmd)
    assert argv == ["codejury", "serve", "--host", "0.0.0.0"]  # reachable from outside the container
    assert not [line for line in lines if line.startswith("ENTRYPOINT")]  # a CI job's script: still runs as given
    result = CliRunner().invoke(cli, [*argv[1:], "--help"])  # the command and its flags exist
    assert result.exit_code == 0 and "--host" in result.output
