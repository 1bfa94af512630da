"""An analyzer's tool reads files the change's author wrote: it runs without codejury's secrets in its environment.

Only ``PATH``, ``HOME``, the locale (``LANG``, ``LC_*``), the temporary folder and a few others reach it, and
what its analyzer names (mypy: the interpreter's path settings); never a forge token, a webhook secret or
a model provider's key.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codejury.analyzers.base import run_tool, tool_env
from codejury.analyzers.cppcheck import CppcheckAnalyzer
from codejury.analyzers.mypy import MypyAnalyzer
from tests.analyzers.helpers import make_change

SECRETS = {
    "CODEJURY_GITHUB_TOKEN": "ghp_codejury_secret_1",
    "GITHUB_TOKEN": "ghs_actions_secret_2",
    "CODEJURY_GITLAB_TOKEN": "glpat-secret-3",
    "CI_JOB_TOKEN": "glcbt-secret-4",
    "CODEJURY_GITHUB_WEBHOOK_SECRET": "whsec-secret-5",
    "CODEJURY_GITLAB_WEBHOOK_TOKEN": "gl-hook-secret-6",
    "CODEJURY_INGEST_TOKEN": "ingest-secret-7",
    "OPENAI_API_KEY": "sk-secret-8",
    "ANTHROPIC_API_KEY": "sk-ant-secret-9",
    "CODEJURY_RECORD_URL": "postgresql://codejury:db-secret-10@db/codejury",
}
KEPT = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp", "HOME": "/home/reviewer"}


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**SECRETS, **KEPT}.items():
        monkeypatch.setenv(name, value)


def parsed(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def recorder(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A fake tool that writes its environment to a file and finds nothing (exit 0, no output)."""
    seen = tmp_path / f"{name}-env.txt"
    program = tmp_path / name
    program.write_text(f"#!/bin/sh\nenv > '{seen}'\n")
    program.chmod(0o755)
    return program, seen


@pytest.mark.usefixtures("secrets")
async def test_a_tool_gets_the_locale_and_paths_but_no_token_secret_or_key(tmp_path: Path) -> None:
    env = shutil.which("env")
    assert env is not None
    run = await run_tool([env], cwd=tmp_path, name="env")
    seen = parsed(run.stdout.decode())
    assert not SECRETS.keys() & seen.keys()
    assert not any(value in run.stdout.decode() for value in SECRETS.values())
    assert {name: seen.get(name) for name in KEPT} == KEPT and "PATH" in seen


@pytest.mark.usefixtures("secrets")
async def test_a_linter_in_a_review_sees_none_of_codejurys_secrets(tmp_path: Path) -> None:
    program, seen = recorder(tmp_path, "cppcheck")
    change = make_change(tmp_path, {"src/a.c": ("", "int main(void) { return 0; }\n")})
    assert await CppcheckAnalyzer(binary=program).analyze(change) == []
    environment = parsed(seen.read_text())
    assert not SECRETS.keys() & environment.keys() and environment["LANG"] == "C.UTF-8"


async def test_mypy_also_gets_the_interpreters_path_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/opt/codejury/lib")
    monkeypatch.setenv("CODEJURY_GITHUB_TOKEN", SECRETS["CODEJURY_GITHUB_TOKEN"])
    program, seen = recorder(tmp_path, "mypy")
    change = make_change(tmp_path, {"app.py": ("", "def f() -> int:\n    return 1\n")})
    await MypyAnalyzer(binary=program).analyze(change)
    environment = parsed(seen.read_text())
    assert environment.get("PYTHONPATH") == "/opt/codejury/lib" and "CODEJURY_GITHUB_TOKEN" not in environment


def test_the_allow_list_is_what_reaches_a_tool() -> None:
    environ = {**SECRETS, **KEPT, "PATH": "/usr/bin", "LC_MESSAGES": "C", "PYTHONPATH": "/x", "SSH_AUTH_SOCK": "/s"}
    assert tool_env(environ=environ) == {**KEPT, "PATH": "/usr/bin", "LC_MESSAGES": "C"}
    assert tool_env(("PYTHONPATH",), environ=environ)["PYTHONPATH"] == "/x"
