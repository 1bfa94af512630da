"""The embedded model behind pydantic-ai: a fake ``Llama`` for the wiring, the real one once."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput, models
from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters

from codejury.errors import ModelSetupError
from codejury.models import local
from codejury.models.local import LocalLlamaModel, load_local_model


class Verdict(BaseModel):
    ok: bool
    reason: str


class FakeLlama:
    """Answers canned text; records calls and whether two ever overlapped."""

    def __init__(
        self,
        content: str = '{"ok": true, "reason": "fine"}',
        *,
        finish_reason: str = "stop",
        delay: float = 0.0,
        cached_prefix: int = 0,
    ) -> None:
        self.content = content
        self.finish_reason = finish_reason
        self.delay = delay
        self.cached_prefix = cached_prefix
        self.calls: list[dict[str, Any]] = []
        self.active = 0
        self.overlapped = False
        self.threads: set[int] = set()
        self._tokens: list[int] = []
        self._guard = threading.Lock()

    @property
    def eval_tokens(self) -> Sequence[int]:
        return list(self._tokens)

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(range(len(text.split())))

    def create_chat_completion(self, **kwargs: Any) -> Any:
        with self._guard:
            self.active += 1
            self.overlapped |= self.active > 1
        self.threads.add(threading.get_ident())
        try:
            time.sleep(self.delay)
            self.calls.append(kwargs)
            prompt = 100
            # The first ``cached_prefix`` prompt tokens stay the same between calls.
            self._tokens = list(range(self.cached_prefix)) + [1000 + len(self.calls)] * (prompt - self.cached_prefix)
            return {
                "choices": [
                    {"message": {"role": "assistant", "content": self.content}, "finish_reason": self.finish_reason}
                ],
                "usage": {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7},
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
    fake = FakeLlama()
    result = await _agent().run("Is this fine?", model=LocalLlamaModel(fake))
    assert result.output == Verdict(ok=True, reason="fine")
    (call,) = fake.calls
    fmt = call["response_format"]
    assert fmt["type"] == "json_object"
    assert set(fmt["schema"]["properties"]) == {"ok", "reason"}
    assert call["temperature"] == 0.0
    assert call["seed"] == 0
    assert call["max_tokens"] == local.MAX_OUTPUT_TOKENS
    assert call["messages"][0] == {"role": "system", "content": "You judge changes."}
    assert call["messages"][-1]["role"] == "user"
    assert "Is this fine?" in call["messages"][-1]["content"]
    assert fake.threads and threading.get_ident() not in fake.threads  # ran in a worker thread


@pytest.mark.usefixtures("allow_requests")
async def test_plain_text_request_has_no_response_format() -> None:
    fake = FakeLlama(content="hello")
    result = await Agent(model=LocalLlamaModel(fake)).run("hi", model_settings={"max_tokens": 5})
    assert result.output == "hello"
    assert "response_format" not in fake.calls[0]
    assert fake.calls[0]["max_tokens"] == 5


@pytest.mark.usefixtures("allow_requests")
async def test_usage_maps_prompt_output_and_prefix_cache() -> None:
    fake = FakeLlama(cached_prefix=60)
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
    fake = FakeLlama(content='{"ok": tr', finish_reason="length")
    messages = [ModelRequest(parts=[UserPromptPart("u")])]
    response = await LocalLlamaModel(fake).request(messages, None, ModelRequestParameters())  # type: ignore[arg-type]
    assert response.finish_reason == "length"


@pytest.mark.usefixtures("allow_requests")
async def test_concurrent_requests_never_overlap_and_loop_stays_free() -> None:
    fake = FakeLlama(delay=0.15)
    model_a, model_b = LocalLlamaModel(fake), LocalLlamaModel(fake)  # two wrappers, one Llama
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
    fake = FakeLlama()
    with pytest.raises(RuntimeError, match="ALLOW_MODEL_REQUESTS"):
        await _agent().run("x", model=LocalLlamaModel(fake))
    assert fake.calls == []


def test_missing_llama_cpp_names_both_ways_forward(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_module(name: str) -> Any:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(local.importlib, "import_module", no_module)
    with pytest.raises(ModelSetupError) as err:
        load_local_model("qwen2.5-coder-1.5b")
    text = str(err.value)
    assert "codejury[local]" in text
    assert "CODEJURY_MODEL=openai:" in text and "OPENAI_API_KEY" in text


def test_gguf_path_is_loaded_with_profile(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    created: list[dict[str, Any]] = []

    class FakeModule:
        @staticmethod
        def Llama(**kwargs: Any) -> FakeLlama:
            created.append(kwargs)
            return FakeLlama()

    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(local, "_import_llama_cpp", lambda: FakeModule)
    monkeypatch.setattr(local, "_LLAMAS", {})
    resolved = load_local_model(str(gguf))
    again = load_local_model(str(gguf))
    assert len(created) == 1  # one Llama per file
    assert isinstance(resolved.model, LocalLlamaModel) and again.model._llama is resolved.model._llama
    assert created[0]["n_ctx"] == 8192 and created[0]["n_threads"] >= 1
    assert resolved.model.model_name == "tiny"
    profile = resolved.profile
    assert (profile.supports_tools, profile.output_mode, profile.parallel_requests) == (False, "native", 1)
    assert (profile.caches_across_runs, profile.context_window) == (False, 8192)
    with pytest.raises(ModelSetupError, match="neither"):
        load_local_model(str(tmp_path / "absent.gguf"))


@pytest.mark.embedded
@pytest.mark.usefixtures("allow_requests")
async def test_real_embedded_model_returns_structured_output() -> None:
    pytest.importorskip("llama_cpp")
    resolved = load_local_model("qwen2.5-coder-1.5b")
    agent = Agent(
        output_type=NativeOutput(Verdict),
        system_prompt="You review code. Answer in JSON with fields ok (boolean) and reason (short string).",
    )
    result = await agent.run("Is `x = 1 + 1` valid Python?", model=resolved.model, model_settings={"max_tokens": 64})
    assert isinstance(result.output, Verdict)
    assert result.output.reason
    usage = result.usage
    assert usage.input_tokens > 0 and usage.output_tokens > 0


def test_reviewer_schemas_become_grammars_llama_cpp_can_build() -> None:
    """Length bounds inside repeated objects blow up llama.cpp's grammar: they are left out."""
    import json

    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    from codejury.findings import NotedReviewerOutput, ReviewerOutput
    from codejury.judge.coordinator import JudgeOutput
    from codejury.models.local import grammar_safe_schema

    for output in (NotedReviewerOutput, ReviewerOutput, JudgeOutput):
        schema = grammar_safe_schema(output.model_json_schema())
        assert "maxLength" not in json.dumps(schema)
        grammar = llama_grammar.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        assert grammar is not None
