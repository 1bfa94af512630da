"""The embedded model behind pydantic-ai: a fake llama.cpp server for the wiring, the real one once."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput, models
from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters

from codejury.errors import ModelSetupError
from codejury.models import local
from codejury.models.local import LocalLlamaModel, load_local_model
from codejury.models.weights import DEFAULT_WEIGHTS, SMALL_WEIGHTS, WeightsSpec
from codejury.resilience.errors import classify
from tests.hostile.conftest import run_codejury

# What llama.cpp writes when its log is left on: "llama_model_loader: ...", "load_tensors: ...",
# "0.00.012.659 I srv  init: loading model", "print_info: ...", "ggml_...", "WARNING: JSON schema ...".
LLAMA_LOG_LINE = re.compile(
    r"^(\d+\.\d+\.\d+\.\d+ [DIWE] |llama_|llm_|ggml_|gguf_|load|print_info|common_|srv |slot |main:|build:|system_info"
    r"|WARNING: JSON schema)"
)


def llama_log_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if LLAMA_LOG_LINE.match(line.strip())]


class Verdict(BaseModel):
    ok: bool
    reason: str


class FakeServer:
    """Answers like ``xllamacpp.Server.handle_chat_completions``; records calls and any overlap."""

    def __init__(
        self,
        content: str = '{"ok": true, "reason": "fine"}',
        *,
        finish_reason: str = "stop",
        delay: float = 0.0,
        cached_prefix: int = 0,
        answer: dict[str, Any] | None = None,
    ) -> None:
        self.content = content
        self.finish_reason = finish_reason
        self.delay = delay
        self.cached_prefix = cached_prefix
        self.answer = answer
        self.calls: list[dict[str, Any]] = []
        self.active = 0
        self.overlapped = False
        self.threads: set[int] = set()
        self._guard = threading.Lock()

    def handle_chat_completions(self, prompt: dict[str, Any]) -> Any:
        with self._guard:
            self.active += 1
            self.overlapped |= self.active > 1
        self.threads.add(threading.get_ident())
        try:
            time.sleep(self.delay)
            self.calls.append(json.loads(json.dumps(prompt)))  # what would cross into C++: plain JSON
            if self.answer is not None:
                return self.answer
            cached = self.cached_prefix if len(self.calls) > 1 else 0
            return {
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": self.content},
                        "finish_reason": self.finish_reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": 100,
                    "completion_tokens": 7,
                    "total_tokens": 107,
                    "prompt_tokens_details": {"cached_tokens": cached},
                },
                "timings": {"cache_n": cached, "prompt_n": 100 - cached},
            }
        finally:
            with self._guard:
                self.active -= 1


@pytest.fixture
def allow_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)


def _agent() -> Agent[None, Verdict]:
    return Agent(output_type=NativeOutput(Verdict), system_prompt="You judge changes.")


@pytest.mark.usefixtures("allow_requests")
async def test_native_output_becomes_json_schema_response_format() -> None:
    fake = FakeServer()
    result = await _agent().run("Is this fine?", model=LocalLlamaModel(fake))
    assert result.output == Verdict(ok=True, reason="fine")
    (call,) = fake.calls
    fmt = call["response_format"]
    assert fmt["type"] == "json_schema"
    assert set(fmt["json_schema"]["schema"]["properties"]) == {"ok", "reason"}
    assert fmt["json_schema"]["schema"]["additionalProperties"] is False  # no key of the model's own invention
    assert call["cache_prompt"] is True  # the slot keeps the common prefix between calls
    assert call["temperature"] == 0.0
    assert call["seed"] == 0
    assert call["max_tokens"] == local.MAX_OUTPUT_TOKENS
    assert call["messages"][0] == {"role": "system", "content": "You judge changes."}
    assert call["messages"][-1]["role"] == "user"
    assert "Is this fine?" in call["messages"][-1]["content"]
    assert fake.threads and threading.get_ident() not in fake.threads  # ran in a worker thread


@pytest.mark.usefixtures("allow_requests")
async def test_plain_text_request_has_no_response_format() -> None:
    fake = FakeServer(content="hello")
    result = await Agent(model=LocalLlamaModel(fake)).run("hi", model_settings={"max_tokens": 5})
    assert result.output == "hello"
    assert "response_format" not in fake.calls[0]
    assert fake.calls[0]["max_tokens"] == 5


@pytest.mark.usefixtures("allow_requests")
async def test_usage_maps_prompt_output_and_prefix_cache() -> None:
    fake = FakeServer(cached_prefix=60)
    model = LocalLlamaModel(fake)
    params = ModelRequestParameters()
    messages = [ModelRequest(parts=[SystemPromptPart("s"), UserPromptPart("u")])]
    first = await model.request(messages, None, params)  # type: ignore[arg-type]
    second = await model.request(messages, None, params)  # type: ignore[arg-type]
    assert first.usage.input_tokens == 100
    assert first.usage.output_tokens == 7
    assert first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == 60
    assert second.model_name == local.EMBEDDED_MODEL_NAME
    assert second.finish_reason == "stop"


@pytest.mark.usefixtures("allow_requests")
async def test_truncation_is_surfaced_as_finish_reason_length() -> None:
    fake = FakeServer(content='{"ok": tr', finish_reason="length")
    messages = [ModelRequest(parts=[UserPromptPart("u")])]
    response = await LocalLlamaModel(fake).request(messages, None, ModelRequestParameters())  # type: ignore[arg-type]
    assert response.finish_reason == "length"


@pytest.mark.parametrize(
    ("answer", "kind", "reason"),
    [
        (
            {
                "error": {
                    "code": 400,
                    "message": "request (9000 tokens) exceeds the available context size (8192 tokens)",
                    "type": "exceed_context_size_error",
                }
            },
            "fatal",
            "context length exceeded",
        ),
        ({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}, "retryable", "503"),
        ({"error": {"code": 400, "message": "bad grammar", "type": "invalid_request_error"}}, "fatal", "400"),
        ({"unexpected": True}, "retryable", "500"),
    ],
)
@pytest.mark.usefixtures("allow_requests")
async def test_server_errors_become_errors_the_failback_chain_understands(
    answer: dict[str, Any], kind: str, reason: str
) -> None:
    fake = FakeServer(answer=answer)
    messages = [ModelRequest(parts=[UserPromptPart("u")])]
    with pytest.raises(Exception) as err:
        await LocalLlamaModel(fake).request(messages, None, ModelRequestParameters())  # type: ignore[arg-type]
    found = classify(err.value)
    assert found.kind == kind
    assert reason in found.reason


@pytest.mark.usefixtures("allow_requests")
async def test_concurrent_requests_never_overlap_and_loop_stays_free() -> None:
    fake = FakeServer(delay=0.15)
    model_a, model_b = LocalLlamaModel(fake), LocalLlamaModel(fake)  # two wrappers, one server
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    tick_task = asyncio.create_task(ticker())
    try:
        results = await asyncio.gather(
            _agent().run("a", model=model_a), _agent().run("b", model=model_b), _agent().run("c", model=model_a)
        )
    finally:
        tick_task.cancel()
    assert [r.output.ok for r in results] == [True, True, True]
    assert len(fake.calls) == 3
    assert not fake.overlapped
    assert ticks >= 10  # the event loop kept running while llama.cpp worked


async def test_requests_refused_when_model_requests_are_blocked() -> None:
    fake = FakeServer()
    with pytest.raises(RuntimeError, match="ALLOW_MODEL_REQUESTS"):
        await _agent().run("x", model=LocalLlamaModel(fake))
    assert fake.calls == []


def test_missing_runtime_names_both_ways_forward(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_module(name: str) -> Any:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(local.importlib, "import_module", no_module)
    with pytest.raises(ModelSetupError) as err:
        load_local_model("qwen2.5-coder-1.5b")
    text = str(err.value)
    assert "codejury[local]" in text
    assert "CODEJURY_MODEL=openai:" in text and "OPENAI_API_KEY" in text


class FakeRuntime:
    """Stands in for the ``xllamacpp`` module: records the parameters each server was built with."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.built: list[Any] = []

    @staticmethod
    def CommonParams() -> Any:  # noqa: N802 (xllamacpp's name)
        return SimpleNamespace(
            model=SimpleNamespace(path=""), cpuparams=SimpleNamespace(n_threads=0), cpuparams_batch=SimpleNamespace()
        )

    def Server(self, params: Any) -> FakeServer:  # noqa: N802 (xllamacpp's name)
        if self.fail:
            raise RuntimeError("Failed to init server, please check the input params.")
        self.built.append(params)
        return FakeServer()


def test_gguf_path_is_loaded_once_quietly_with_profile(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    runtime = FakeRuntime()
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(local, "_import_runtime", lambda: runtime)
    monkeypatch.setattr(local, "_SERVERS", {})
    resolved = load_local_model(str(gguf))
    again = load_local_model(str(gguf))
    assert len(runtime.built) == 1  # one server per file
    assert isinstance(resolved.model, LocalLlamaModel) and again.model._server is resolved.model._server
    (params,) = runtime.built
    assert params.model.path == str(gguf.resolve())
    assert (params.n_ctx, params.n_parallel) == (8192, 1)
    assert params.cpuparams.n_threads >= 1 and params.cpuparams_batch.n_threads == params.cpuparams.n_threads
    assert params.verbosity < 0  # llama.cpp's log off
    # the loopback listener xllamacpp opens answers only a caller holding a random key
    assert len(params.api_keys) == 1 and len(params.api_keys[0]) >= 32
    assert resolved.model.model_name == "tiny"
    profile = resolved.profile
    assert (profile.supports_tools, profile.output_mode, profile.parallel_requests) == (False, "native", 1)
    assert (profile.caches_across_runs, profile.context_window) == (False, 8192)
    with pytest.raises(ModelSetupError, match="neither"):
        load_local_model(str(tmp_path / "absent.gguf"))


def test_a_named_model_is_its_own_verified_file_behind_the_same_server_and_profile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    runtime = FakeRuntime()
    assembled: list[WeightsSpec] = []

    def ensure_model_file(*, spec: WeightsSpec) -> Path:
        assembled.append(spec)
        path = tmp_path / spec.file_name
        path.write_bytes(b"GGUF")
        return path

    monkeypatch.setattr(local, "_import_runtime", lambda: runtime)
    monkeypatch.setattr(local, "_SERVERS", {})
    monkeypatch.setattr(local, "ensure_model_file", ensure_model_file)
    small = load_local_model("qwen2.5-coder-0.5b")
    embedded = load_local_model("default")
    assert assembled == [SMALL_WEIGHTS, DEFAULT_WEIGHTS]
    assert [p.model.path for p in runtime.built] == [str(tmp_path / s.file_name) for s in assembled]
    assert (small.model.model_name, embedded.model.model_name) == ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    assert (small.spec, embedded.spec) == ("local:qwen2.5-coder-0.5b", "local:default")
    assert small.profile == embedded.profile  # weak, native JSON output, one request at a time
    with pytest.raises(ModelSetupError, match="'qwen2.5-coder-0.5b'"):  # the error lists the names it knows
        load_local_model("qwen2.5-coder-7b")


def test_unloadable_model_file_is_a_setup_error_naming_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gguf = tmp_path / "broken.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(local, "_import_runtime", lambda: FakeRuntime(fail=True))
    monkeypatch.setattr(local, "_SERVERS", {})
    with pytest.raises(ModelSetupError, match=r"could not load .*broken\.gguf"):
        load_local_model(str(gguf))


def test_a_broken_model_file_is_one_line_with_no_llama_cpp_log(tmp_path: Path) -> None:
    """The real runtime, through the CLI: exit 2, one line naming the file, nothing from llama.cpp."""
    pytest.importorskip("xllamacpp", reason="the embedded model needs the 'local' extra")
    gguf = tmp_path / "broken.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 60)
    (tmp_path / "change.diff").write_text("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n")
    run = run_codejury(["review", "--diff", "change.diff", "--model", f"local:{gguf}"], cwd=tmp_path, timeout_s=60)
    run.assert_one_line_error(2, "broken.gguf")
    assert llama_log_lines(run.stderr) == [], run.stderr
    assert run.stdout == ""


def test_reviewer_schemas_become_grammars_quietly() -> None:
    """Every structured output we ask for converts to a llama.cpp grammar without a warning on stderr."""
    xllamacpp = pytest.importorskip("xllamacpp")
    code = textwrap.dedent(
        """
        import json, xllamacpp
        from codejury.findings import NotedReviewerOutput, ReviewerOutput
        from codejury.judge.coordinator import JudgeOutput
        from codejury.judge.grounding import Check, Confirmation
        from codejury.judge.naive import NaiveOutput
        from codejury.models.local import grammar_safe_schema
        for output in (NotedReviewerOutput, ReviewerOutput, JudgeOutput, Check, Confirmation, NaiveOutput):
            schema = grammar_safe_schema(output.model_json_schema())
            assert "pattern" not in json.dumps(schema)
            grammar = xllamacpp.json_schema_to_grammar(schema)
            assert grammar.strip() and "error" not in grammar.lower(), grammar[:200]
        print("ok")
        """
    )
    assert xllamacpp is not None
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert proc.stderr == ""  # an unsupported keyword would print "WARNING: JSON schema conversion ..."


def test_the_grammar_bounds_every_free_text_field_so_an_answer_always_closes() -> None:
    from codejury.findings import NotedReviewerOutput
    from codejury.judge.grounding import Check
    from codejury.models.local import FREE_TEXT_MAX_CHARS, grammar_safe_schema

    schema = grammar_safe_schema(NotedReviewerOutput.model_json_schema())
    draft = schema["$defs"]["FindingDraft"]["properties"]
    assert schema["properties"]["notes"]["maxLength"] == FREE_TEXT_MAX_CHARS["notes"]
    assert draft["title"]["maxLength"] == FREE_TEXT_MAX_CHARS["title"]
    assert draft["body"]["maxLength"] > draft["title"]["maxLength"]
    assert [o.get("maxLength") for o in draft["suggestion"]["anyOf"]] == [draft["body"]["maxLength"], None]
    assert "maxLength" not in draft["severity"]  # an enum is bounded already
    checked = grammar_safe_schema(Check.model_json_schema())
    assert checked["properties"]["quote"]["maxLength"] == Check.model_json_schema()["properties"]["quote"]["maxLength"]
    # Validation is not tightened: a cloud model's long body is still a valid answer.
    assert NotedReviewerOutput.model_validate({"notes": "n" * 5000, "findings": []}).notes == "n" * 5000


@pytest.mark.embedded
@pytest.mark.usefixtures("allow_requests")
async def test_a_real_local_model_returns_structured_output_and_reuses_the_prefix(small_local_model: str) -> None:
    resolved = load_local_model(small_local_model)
    assert resolved.model.model_name == small_local_model
    agent = Agent(
        output_type=NativeOutput(Verdict),
        system_prompt="You review code. Answer in JSON with fields ok (boolean) and reason (a few words).",
    )
    first = await agent.run("Is `x = 1 + 1` valid Python?", model=resolved.model, model_settings={"max_tokens": 96})
    assert isinstance(first.output, Verdict)
    assert first.output.reason
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    # Same system prompt, another question: the slot's KV cache answers the common prefix.
    second = await agent.run("Is `def f(:` valid Python?", model=resolved.model, model_settings={"max_tokens": 96})
    assert isinstance(second.output, Verdict)
    assert second.usage.cache_read_tokens >= 20
    assert second.usage.cache_read_tokens < second.usage.input_tokens


@pytest.mark.embedded
def test_a_real_local_call_keeps_llama_cpp_log_off_the_terminal(tmp_path: Path, small_local_model: str) -> None:
    """Load a real model and answer one request in a fresh process: stderr stays empty."""
    code = textwrap.dedent(
        f"""
        import asyncio
        from pydantic_ai import models
        from pydantic_ai.messages import ModelRequest, UserPromptPart
        from pydantic_ai.models import ModelRequestParameters
        from codejury.models.local import load_local_model
        models.ALLOW_MODEL_REQUESTS = True
        model = load_local_model({small_local_model!r}).model
        messages = [ModelRequest(parts=[UserPromptPart("Say hi.")])]
        reply = asyncio.run(model.request(messages, {{"max_tokens": 8}}, ModelRequestParameters()))
        print("tokens", reply.usage.output_tokens)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("tokens ") and int(proc.stdout.split()[1]) > 0
    assert llama_log_lines(proc.stderr) == [] and proc.stderr.strip() == "", proc.stderr
