"""The embedded model's system prompts are computed once per machine: a fake llama.cpp slot API, the real one once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from codejury.models.prefix_cache import MAX_FILES, PrefixStore
from codejury.models.weights import default_models_dir

KEY = "secret-key"
RULES = [{"role": "system", "content": "Rules for every reviewer."}, {"role": "user", "content": "the change"}]
VALID_NAME = re.compile(r"^[A-Za-z0-9._-]+$")  # llama.cpp's fs_validate_filename: no separators, no '..'


class FakeLlama:
    """``handle_chat_completions`` and the slot save/restore endpoints of a llama.cpp server with one slot.

    Like llama.cpp: slot actions need the API key, a bare file name under ``slot_save_path`` (joined as
    is), and a file it wrote; what the slot holds is the last prompt (here: its system text).
    """

    def __init__(self, slot_save_path: str) -> None:
        self.slot_save_path = slot_save_path
        self.slot: str | None = None
        self.calls: list[list[dict[str, str]]] = []
        self.cached: list[int] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                url = urlparse(self.path)
                action = parse_qs(url.query).get("action", [""])[0]
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.headers.get("Authorization") != f"Bearer {KEY}":
                    return self._answer(401, {"error": {"code": 401, "message": "Invalid API Key"}})
                if url.path != "/slots/0" or not fake.slot_save_path:
                    refused = {"code": 501, "message": "This server does not support slots action."}
                    return self._answer(501, {"error": refused})
                name = str(body.get("filename", ""))
                if not VALID_NAME.match(name) or ".." in name:
                    return self._answer(400, {"error": {"code": 400, "message": "Invalid filename"}})
                path = Path(fake.slot_save_path + name)
                if action == "save":
                    path.write_text(json.dumps({"slot": fake.slot}))
                    return self._answer(200, {"id_slot": 0, "filename": name, "n_saved": 1})
                try:
                    fake.slot = json.loads(path.read_text())["slot"]
                except (OSError, ValueError, KeyError):
                    return self._answer(400, {"error": {"code": 400, "message": "Unable to restore slot"}})
                return self._answer(200, {"id_slot": 0, "filename": name, "n_restored": 1})

            def _answer(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def listening_address(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}"

    def handle_chat_completions(self, prompt: dict[str, Any]) -> dict[str, Any]:
        messages = prompt["messages"]
        self.calls.append(messages)
        system = messages[0]["content"] if messages[0]["role"] == "system" else None
        self.cached.append(len(system) if system is not None and system == self.slot else 0)
        self.slot = system
        return {"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}]}

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[FakeLlama]]:
    made: list[FakeLlama] = []
    yield made
    for server in made:
        server.close()


def process(servers: list[FakeLlama], directory: Path, key: str = "model-a") -> tuple[FakeLlama, PrefixStore]:
    """What one codejury process holds: its llama.cpp server and the store over it."""
    server = FakeLlama(f"{directory}{os.sep}")
    servers.append(server)
    return server, PrefixStore(server, directory, key, KEY)


def call(server: FakeLlama, store: PrefixStore, chat: list[dict[str, str]]) -> None:
    store.prime(chat)
    server.handle_chat_completions({"messages": chat})


def test_the_first_process_saves_its_system_prompt_and_the_next_restores_it(
    servers: list[FakeLlama], tmp_path: Path
) -> None:
    first, store = process(servers, tmp_path)
    call(first, store, RULES)
    # The system prompt alone, then the real call that reuses it: nothing is computed twice.
    assert [len(c) for c in first.calls] == [1, 2] and first.cached == [0, len(RULES[0]["content"])]
    assert store.outcome == "saved"
    [saved] = tmp_path.glob("*.bin")
    assert saved.stat().st_mode & 0o777 == 0o600
    call(first, store, [RULES[0], {"role": "user", "content": "a check"}])  # later calls are llama.cpp's own
    assert len(first.calls) == 3

    second, store = process(servers, tmp_path)
    call(second, store, [RULES[0], {"role": "user", "content": "another change"}])
    assert store.outcome == "restored"
    assert len(second.calls) == 1 and second.cached == [len(RULES[0]["content"])]  # no system-only call
    assert list(tmp_path.glob("*")) == [saved]  # no partial file left behind


def test_a_process_that_takes_turns_between_system_prompts_restores_each_instead_of_computing_it(
    servers: list[FakeLlama], tmp_path: Path
) -> None:
    """A review's generalist, its check, then the next review's generalist (the eval, a service worker)."""
    check = [{"role": "system", "content": "Check one claim."}, {"role": "user", "content": "the claim"}]
    server, store = process(servers, tmp_path)
    call(server, store, RULES)
    call(server, store, check)
    assert store.outcome == "saved" and len(list(tmp_path.glob("*.bin"))) == 2
    call(server, store, check)  # the slot starts with it already: left alone
    assert store.outcome is None
    call(server, store, [RULES[0], {"role": "user", "content": "the next change"}])
    assert store.outcome == "restored"
    call(server, store, [{"role": "user", "content": "no system prompt"}])
    call(server, store, check)
    assert store.outcome == "restored"
    # Each system prompt was computed once (the system-only calls); every later call found it in the slot.
    assert [len(c) for c in server.calls] == [1, 2, 1, 2, 2, 2, 1, 2]
    rules, checked = len(RULES[0]["content"]), len(check[0]["content"])
    assert server.cached == [0, rules, 0, checked, checked, rules, 0, checked]


def test_another_system_prompt_or_model_gets_its_own_file(servers: list[FakeLlama], tmp_path: Path) -> None:
    for key, system in [("model-a", "Rules."), ("model-a", "Other rules."), ("model-b", "Rules.")]:
        server, store = process(servers, tmp_path, key)
        call(server, store, [{"role": "system", "content": system}, {"role": "user", "content": "x"}])
        assert store.outcome == "saved"
    assert len(list(tmp_path.glob("*.bin"))) == 3
    server, store = process(servers, tmp_path)
    call(server, store, [{"role": "user", "content": "no system prompt"}])
    assert store.outcome is None and len(server.calls) == 1


def test_an_unreadable_file_is_computed_and_saved_again(servers: list[FakeLlama], tmp_path: Path) -> None:
    server, store = process(servers, tmp_path)
    (tmp_path / store.file_name(RULES[0]["content"])).write_bytes(b"\x00 from another llama.cpp build")
    call(server, store, RULES)
    assert store.outcome == "saved" and [len(c) for c in server.calls] == [1, 2]
    server, store = process(servers, tmp_path)
    call(server, store, RULES)
    assert store.outcome == "restored"


def test_a_refused_slot_action_only_means_the_prompt_is_computed(servers: list[FakeLlama], tmp_path: Path) -> None:
    server, _ = process(servers, tmp_path)
    wrong_key = PrefixStore(server, tmp_path, "model-a", "not-the-key")
    call(server, wrong_key, RULES)
    assert wrong_key.outcome is None and list(tmp_path.glob("*")) == []
    assert server.calls[-1] == RULES  # the review's call was made all the same
    server.slot_save_path = ""  # a server started without a slot directory
    store = PrefixStore(server, tmp_path, "model-a", KEY)
    call(server, store, RULES)
    assert store.outcome is None and list(tmp_path.glob("*")) == []

    def busy(prompt: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("slot busy")

    broken, _ = process(servers, tmp_path)
    broken.handle_chat_completions = busy  # type: ignore[method-assign]
    store = PrefixStore(broken, tmp_path, "model-a", KEY)
    store.prime(RULES)  # the system-only call failed: nothing raised here (the real call will say why)
    assert store.outcome is None and list(tmp_path.glob("*")) == []


def test_at_most_max_files_are_kept_the_least_recently_used_go_first(servers: list[FakeLlama], tmp_path: Path) -> None:
    server, first = process(servers, tmp_path)
    call(server, first, [{"role": "system", "content": "prompt 0"}])
    oldest = tmp_path / first.file_name("prompt 0")
    os.utime(oldest, (1, 1))
    for n in range(1, MAX_FILES + 1):
        server, store = process(servers, tmp_path)
        call(server, store, [{"role": "system", "content": f"prompt {n}"}])
    assert len(list(tmp_path.glob("*.bin"))) == MAX_FILES and not oldest.exists()


@pytest.mark.embedded
def test_a_real_local_model_restores_the_system_prompt_in_the_next_process(
    tmp_path: Path, small_local_model: str
) -> None:
    """Two processes, one cache: the second starts from the first one's saved system prompt."""
    (tmp_path / "cache").mkdir()
    # The model file was assembled where every other test finds it (small_local_model): shared, not copied.
    (tmp_path / "cache" / "models").symlink_to(default_models_dir())
    code = textwrap.dedent(
        f"""
        import asyncio
        from pydantic_ai import models
        from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart
        from pydantic_ai.models import ModelRequestParameters
        from codejury.models import local
        models.ALLOW_MODEL_REQUESTS = True
        model = local.load_local_model({small_local_model!r}).model
        rules = "You review code changes. " + "Report only real problems on changed lines. " * 20
        [store] = local._PREFIXES.values()
        # The rules, a check with a short prompt of its own, then the rules again (the next review).
        for system in (rules, "Answer yes or no.", rules):
            messages = [ModelRequest(parts=[SystemPromptPart(system), UserPromptPart("Is x = 1 fine?")])]
            reply = asyncio.run(model.request(messages, {{"max_tokens": 4}}, ModelRequestParameters()))
            print(store.outcome, reply.usage.cache_read_tokens, reply.usage.input_tokens)
        """
    )
    env = {**os.environ, "CODEJURY_CACHE_DIR": str(tmp_path / "cache")}
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr
        runs.append(
            [
                (outcome, int(cached), int(prompt))
                for outcome, cached, prompt in map(str.split, proc.stdout.splitlines())
            ]
        )
    assert [[r[0] for r in calls] for calls in runs] == [["saved", "saved", "restored"], ["restored"] * 3]
    # Every call of the rules reuses their ~200 tokens: the first computed them just before, the others read them,
    # the third after the check's prompt had taken the slot.
    assert all(150 < cached < prompt for calls in runs for cached, prompt in (calls[0][1:], calls[2][1:]))
    assert len(list((tmp_path / "cache" / "prompts").glob("*.bin"))) == 2
