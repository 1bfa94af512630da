"""Real reviews whose model calls our tools: a git repository, a config, a scripted provider on loopback.

The model (``FakeProviderServer``) asks for the tool calls a test gives, then returns no
findings; what the tools answered is read back from the next request the server received,
exactly as a provider would see it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from codejury_fakes.provider_server import FakeProviderServer, RecordedRequest, ToolCallReply

from tests.engine_helpers import AUTH_NEW, AUTH_OLD

CHANGED = "app/auth/users.py"
KEY_ENV = "TEAMGW_KEY"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def make_repo(tmp_path: Path) -> Path:
    """A repository on branch ``feature``: one commit on ``main``, one that changes ``CHANGED``."""
    repo = tmp_path / "repo"
    (repo / "app/auth").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / CHANGED).write_text(AUTH_OLD)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / CHANGED).write_text(AUTH_NEW)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    return repo


def write_config(tmp_path: Path, server: FakeProviderServer, **settings: float) -> Path:
    """Every tier on the scripted provider; ``settings`` are top-level numbers (timeouts)."""
    config = tmp_path / "codejury.toml"
    lines = [f"{key} = {value}" for key, value in settings.items()]
    config.write_text(
        "\n".join(lines) + f'\n[providers.teamgw]\nbase_url = "{server.openai_base_url}"\napi_key_env = "{KEY_ENV}"\n'
        '[models]\ntop = "teamgw:big"\nstandard = "teamgw:mid"\nlight = "teamgw:small"\n'
    )
    return config


def script_tools(server: FakeProviderServer, calls: list[tuple[str, dict[str, Any]]]) -> None:
    """Each reviewer first calls every tool in ``calls`` (one request), then finds nothing."""
    server.script("*", [ToolCallReply(list(calls)), ToolCallReply([("final_result", {"findings": []})])])


def tool_answers(server: FakeProviderServer) -> list[str]:
    """The tool results of the reviewer that called tools, in call order, as the model was sent them."""
    best: list[str] = []
    for request in server.requests:
        answers = [m.get("content") for m in _messages(request) if m.get("role") == "tool"]
        if len(answers) > len(best):
            best = [a if isinstance(a, str) else json.dumps(a) for a in answers]
    return best


def _messages(request: RecordedRequest) -> list[dict[str, Any]]:
    body = request.body if isinstance(request.body, dict) else {}
    messages = body.get("messages", [])
    return [m for m in messages if isinstance(m, dict)]
