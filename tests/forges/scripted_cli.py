"""One whole ``codejury review`` run on the command line, with the scripted model behind it.

The forge tests (GitLab and GitHub alike) drive the real CLI against a fake forge; this is the
part they share: script the reviewer and the coordinator, register the scripted models through
the model-kind hook (``--plugin codejury.testing.scripted``), invoke ``codejury review`` with the
model flags, and hand back exit code, stdout, stderr and the scripted models (whose recorded
prompts tests read).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from codejury.cli import cli
from codejury.testing.scripted import Final, Raw, ScriptedResolver, Step

MODEL_FLAGS = [
    *("--plugin", "codejury.testing.scripted"),
    *("--model", "scripted:reviewer", "--model-for", "coordinator=scripted:coordinator"),
]


def scripted_review(
    monkeypatch: pytest.MonkeyPatch,
    flags: Sequence[str],
    findings: Sequence[dict[str, Any]] | None = None,
    *,
    reviewer: Sequence[Step] | None = None,
    coordinator: Sequence[Step] | None = None,
    tools: bool = True,
) -> tuple[int, str, str, ScriptedResolver]:
    """``codejury review FLAGS`` with every reviewer on ``reviewer`` (default: one answer with
    ``findings``) and the coordinator on ``coordinator`` (default: keep everything)."""
    script = list(reviewer) if reviewer is not None else [Final(list(findings or []))]
    judge = list(coordinator) if coordinator is not None else [Raw({"decisions": []})]
    resolver = ScriptedResolver({"reviewer": script, "coordinator": judge}, tools=tools)
    with resolver.active():
        result = CliRunner().invoke(
            cli,
            ["review", *MODEL_FLAGS, "--format", "markdown", "--fail-on", "never", *flags],
            catch_exceptions=False,
        )
    return result.exit_code, result.stdout, result.stderr, resolver


def analyzers_off(folder: Path) -> list[str]:
    """The flags of a review in which no analyzer runs (a config file in ``folder`` turns them off)."""
    config = folder / "no-analyzers.toml"
    config.write_text("analyzers = false\n")
    return ["--config", str(config)]
