"""`codejury eval` on the embedded model: every case in one process, one llama.cpp server for all.

The llama.cpp runtime (``xllamacpp``) is replaced by a fake that counts the servers it starts and
answers each chat completion from the JSON schema it is asked to follow: the reviewers report the
SQL injection of the ``py-find-user`` case (tests/eval/test_eval_e2e.py), every other request gets
the smallest answer its schema allows.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic_ai import models

from codejury.cli import cli
from codejury.models import local, registry
from tests.eval.test_eval_e2e import SQL_FINDING, write_dataset


def minimal(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """The smallest instance of ``schema``: required properties only, empty lists, first choices."""
    if "$ref" in schema:
        return minimal(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return minimal(schema[key][0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: minimal(props[name], defs) for name in schema.get("required", [])}
    if kind == "array":
        return []
    if kind == "string":
        return "x" * int(schema.get("minLength", 1))
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return True
    return None


class SchemaServer:
    """Answers like ``xllamacpp.Server.handle_chat_completions``: JSON that fits the requested schema."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def handle_chat_completions(self, prompt: dict[str, Any]) -> Any:
        text = json.dumps(prompt["messages"])
        with self._lock:
            self.calls.append(text)
        schema = prompt["response_format"]["json_schema"]["schema"]
        answer = minimal(schema, schema.get("$defs", {}))
        if "findings" in schema.get("properties", {}) and "app/db.py" in text:
            answer["findings"] = [SQL_FINDING]
        return {
            "choices": [{"message": {"role": "assistant", "content": json.dumps(answer)}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": 40, "prompt_tokens_details": {}},
        }


class CountingRuntime:
    """Stands in for the ``xllamacpp`` module; ``servers`` holds every server it started."""

    def __init__(self) -> None:
        self.servers: list[SchemaServer] = []

    @staticmethod
    def CommonParams() -> Any:  # noqa: N802 (xllamacpp's name)
        return SimpleNamespace(
            model=SimpleNamespace(path=""), cpuparams=SimpleNamespace(n_threads=0), cpuparams_batch=SimpleNamespace()
        )

    def Server(self, params: Any) -> SchemaServer:  # noqa: N802 (xllamacpp's name)
        server = SchemaServer()
        self.servers.append(server)
        return server


def test_every_case_is_reviewed_in_one_process_by_one_embedded_model_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = CountingRuntime()
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)
    monkeypatch.setattr(local, "_import_runtime", lambda: runtime)
    monkeypatch.setattr(local, "_SERVERS", {})
    monkeypatch.setattr(local, "_PREFIXES", {})
    monkeypatch.setattr(local, "prefix_cache_dir", lambda: None)
    registry.clear_model_cache()
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    dataset = write_dataset(tmp_path / "set")
    report = tmp_path / "eval.json"
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    args = ["eval", str(dataset), "--model", f"local:{gguf}", "--baseline", "naive", "--json", str(report)]
    result = CliRunner(env=env).invoke(cli, [*args, "--jobs", "2"], catch_exceptions=False)
    registry.clear_model_cache()

    assert result.exit_code == 0, result.stderr
    assert "--jobs 1" in result.stderr  # the embedded model runs one review at a time
    doc = json.loads(report.read_text())
    assert (doc["overall"]["cases"], doc["overall"]["failed_cases"]) == (3, 0), doc["cases"]
    assert doc["baseline"]["overall"]["failed_cases"] == 0, doc["baseline"]["cases"]
    # Six reviews (three cases, panel and baseline), one model load: one server answered them all.
    assert len(runtime.servers) == 1
    (server,) = runtime.servers
    for changed in ("app/db.py", "svc/retry.go", "web/render.js"):
        assert sum(changed in call for call in server.calls) >= 2, changed  # the panel's and the baseline's
    py = next(c for c in doc["cases"] if c["id"] == "py-find-user")
    assert py["matched"] == 1 and py["verdict"] == "requested_changes"
