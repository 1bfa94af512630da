"""Failback chains: scripted models behind ResilientModel, then the real OpenAI/Anthropic SDKs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from codejury_fakes.provider_server import ErrorReply, FakeProviderServer, TextReply
from pydantic import BaseModel
from pydantic_ai import Agent, models
from pydantic_ai.exceptions import (
    ModelAuthenticationError,
    ModelHTTPError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelUnavailableError,
)
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from codejury.errors import ConfigError
from codejury.models import registry
from codejury.models.profiles import CapabilityProfile, ResolvedModel
from codejury.models.providers import merge_providers
from codejury.resilience.breaker import BreakerBoard
from codejury.resilience.chain import (
    DEFAULT_FAILBACK,
    AgentWatch,
    ResilienceSettings,
    ResilientModel,
    build_chain,
)
from codejury.resilience.errors import ChainExhausted
from tests.timing import bounded

T = TypeVar("T")


class Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Scripted:
    """A model that answers its script in order (the last step repeats) and records the max_tokens it got."""

    spec: str
    steps: list[Exception | str | ModelResponse]
    calls: int = 0
    max_tokens: list[int | None] = field(default_factory=list)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        self.max_tokens.append((info.model_settings or {}).get("max_tokens"))
        if isinstance(step, Exception):
            raise step
        if isinstance(step, ModelResponse):
            return step
        return ModelResponse(parts=[TextPart(step)])

    def resolved(self) -> ResolvedModel:
        model = FunctionModel(self, model_name=self.spec.partition(":")[2])
        return ResolvedModel(self.spec, model, CapabilityProfile(max_output_tokens=1000))


def http(status: int, category: Any = ModelUnavailableError, *, retry_after: float | None = None) -> ModelHTTPError:
    headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else None
    return ModelHTTPError.for_category(category, status_code=status, model_name="m", headers=headers)


@dataclass
class Harness:
    board: BreakerBoard
    clock: Clock
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    sleeps: list[float] = field(default_factory=list)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.clock.now += seconds

    def event(self, name: str, **fields: Any) -> None:
        self.events.append((name, fields))

    def model(self, *scripts: Scripted, **settings: Any) -> ResilientModel:
        return ResilientModel(
            [s.resolved() for s in scripts],
            board=self.board,
            settings=ResilienceSettings(**settings),
            clock=self.clock,
            sleep=self.sleep,
            on_event=self.event,
        )

    def named(self, name: str) -> list[dict[str, Any]]:
        return [f for n, f in self.events if n == name]


@pytest.fixture
def h() -> Harness:
    clock = Clock()
    return Harness(BreakerBoard(failure_threshold=3, cooldown_s=120, clock=clock), clock)


async def run(model: ResilientModel) -> str:
    result = await Agent(model).run("review this")
    return result.output


async def run_recording(model: ResilientModel) -> tuple[str, list[str]]:
    """The output, and the models that answered (what the scheduler records per reviewer)."""
    watch = AgentWatch()
    return await run(model.watched(watch)), watch.answered


# -- failback and no-failback ---------------------------------------------------------------------


async def test_503_fails_back_to_the_next_model(h: Harness) -> None:
    a = Scripted("openai:gpt-5.1", [http(503)])
    b = Scripted("openai:gpt-5", ["from B"])
    model = h.model(a, b)

    output, used = await run_recording(model)
    assert output == "from B"
    assert (a.calls, b.calls) == (1, 1)
    assert used == ["openai:gpt-5"]
    assert h.named("model_failback") == [
        {"from_model": "openai:gpt-5.1", "to_model": "openai:gpt-5", "reason": "HTTP 503 unavailable"}
    ]
    assert h.named("model_attempt_failed") == [
        {"model": "openai:gpt-5.1", "kind": "retryable", "reason": "HTTP 503 unavailable"}
    ]
    assert h.board.get("openai:gpt-5.1").consecutive_failures == 1


@pytest.mark.parametrize(
    ("error", "error_type"),
    [
        (http(401, ModelAuthenticationError), ModelAuthenticationError),
        (http(429, ModelQuotaExceededError), ModelQuotaExceededError),
    ],
    ids=["401", "quota"],
)
async def test_no_failback_on_auth_or_quota(h: Harness, error: Exception, error_type: type[Exception]) -> None:
    a = Scripted("openai:gpt-5.1", [error])
    b = Scripted("openai:gpt-5", ["from B"])

    with pytest.raises(error_type):
        await run(h.model(a, b))

    assert (a.calls, b.calls) == (1, 0)
    assert h.named("model_failback") == []
    assert h.board.get("openai:gpt-5.1").consecutive_failures == 0  # not the model's health


async def test_retry_after_is_honoured_once_on_the_same_model(h: Harness) -> None:
    a = Scripted("openai:gpt-5.1", [http(429, ModelRateLimitError, retry_after=7), "after the wait"])
    b = Scripted("openai:gpt-5", ["from B"])
    model = h.model(a, b)

    output, used = await run_recording(model)
    assert output == "after the wait"
    assert h.sleeps == [7.0]
    assert (a.calls, b.calls) == (1 + 1, 0)
    assert used == ["openai:gpt-5.1"]


async def test_retry_after_only_once_then_failback(h: Harness) -> None:
    a = Scripted("openai:gpt-5.1", [http(429, ModelRateLimitError, retry_after=2)])
    b = Scripted("openai:gpt-5", ["from B"])

    assert await run(h.model(a, b)) == "from B"
    assert h.sleeps == [2.0]
    assert a.calls == 2


async def test_long_retry_after_moves_on_without_waiting(h: Harness) -> None:
    a = Scripted("openai:gpt-5.1", [http(429, ModelRateLimitError, retry_after=45)])
    b = Scripted("openai:gpt-5", ["from B"])

    assert await run(h.model(a, b, max_retry_after_s=30)) == "from B"
    assert h.sleeps == []
    assert a.calls == 1


async def test_open_breaker_skips_the_model(h: Harness) -> None:
    for _ in range(3):
        h.board.get("openai:gpt-5.1").record_failure()
    a = Scripted("openai:gpt-5.1", ["from A"])
    b = Scripted("openai:gpt-5", ["from B"])

    assert await run(h.model(a, b)) == "from B"
    assert a.calls == 0
    assert h.named("model_failback") == [
        {"from_model": "openai:gpt-5.1", "to_model": "openai:gpt-5", "reason": "circuit open"}
    ]


async def test_breaker_opens_then_probes_once_after_the_cooldown_and_closes(h: Harness) -> None:
    transitions: list[tuple[str, str, str]] = []
    h.board.add_listener(lambda *t: transitions.append(t))
    a = Scripted("openai:gpt-5.1", [http(503), http(503), http(503), "A is back"])
    b = Scripted("openai:gpt-5", ["from B"])
    model = h.model(a, b)

    for _ in range(4):
        assert await run(model) == "from B"
    assert a.calls == 3  # the fourth review skipped A
    h.clock.now += 120
    assert await run(model) == "A is back"
    assert transitions == [
        ("openai:gpt-5.1", "closed", "open"),
        ("openai:gpt-5.1", "open", "half_open"),
        ("openai:gpt-5.1", "half_open", "closed"),
    ]


async def test_truncation_is_retried_once_with_a_doubled_budget(h: Harness) -> None:
    cut = ModelResponse(parts=[TextPart("half a rev")], finish_reason="length")
    a = Scripted("openai:gpt-5.1", [cut, "the whole review"])
    b = Scripted("openai:gpt-5", ["from B"])

    assert await run(h.model(a, b)) == "the whole review"
    assert a.max_tokens == [None, 2000]
    assert h.named("model_truncated") == [{"model": "openai:gpt-5.1", "max_tokens": 2000}]
    assert b.calls == 0


async def test_truncation_retried_only_once(h: Harness) -> None:
    cut = ModelResponse(parts=[TextPart("half a rev")], finish_reason="length")
    a = Scripted("openai:gpt-5.1", [cut])

    result = await Agent(h.model(a)).run("review this", model_settings={"max_tokens": 300})

    assert result.output == "half a rev"  # plain text cut off is the output; structured output would raise
    assert a.max_tokens == [300, 600]


async def test_no_retry_with_less_than_the_window_before_the_deadline(h: Harness) -> None:
    a = Scripted("openai:gpt-5.1", [http(503)])
    b = Scripted("openai:gpt-5", ["from B"])

    with pytest.raises(ChainExhausted) as info:
        await run(h.model(a, b, min_retry_window_s=120).watched(AgentWatch(deadline=h.clock.now + 90)))

    assert (a.calls, b.calls) == (1, 0)
    assert "under the 120s retry window" in str(info.value)
    assert isinstance(info.value.__cause__, ModelUnavailableError)


async def test_no_retry_after_wait_that_would_eat_the_window(h: Harness) -> None:
    a = Scripted("openai:gpt-5.1", [http(429, ModelRateLimitError, retry_after=20)])
    b = Scripted("openai:gpt-5", ["from B"])

    model = h.model(a, b, min_retry_window_s=120).watched(AgentWatch(deadline=h.clock.now + 130))
    assert await run(model) == "from B"
    assert h.sleeps == []


async def test_end_of_chain_raises_with_what_each_model_did(h: Harness) -> None:
    for _ in range(3):
        h.board.get("openai:gpt-5").record_failure()
    a = Scripted("openai:gpt-5.1", [http(503)])
    b = Scripted("openai:gpt-5", ["from B"])
    c = Scripted("openai:gpt-4.1", [http(500, None)])

    with pytest.raises(ChainExhausted) as info:
        await run(h.model(a, b, c))

    assert str(info.value) == (
        "no model could answer: openai:gpt-5.1: HTTP 503 unavailable; openai:gpt-5: skipped, circuit open; "
        "openai:gpt-4.1: HTTP 500 server error"
    )
    assert info.value.attempts[1] == ("openai:gpt-5", "skipped, circuit open")


async def test_structured_output_tools_pass_through_to_the_failback_model(h: Harness) -> None:
    class Verdict(BaseModel):
        verdict: str

    seen: list[list[str]] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append([t.name for t in info.output_tools])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"verdict": "approved"})])

    a = Scripted("openai:gpt-5.1", [http(529)])
    b = ResolvedModel("openai:gpt-5", FunctionModel(answer, model_name="gpt-5"), CapabilityProfile())
    model = ResilientModel([a.resolved(), b], board=h.board, clock=h.clock, sleep=h.sleep)

    result = await Agent(model, output_type=Verdict).run("review this")

    assert result.output == Verdict(verdict="approved")
    assert seen == [["final_result"]]
    assert model.model_name == "gpt-5.1"


# -- streaming, stalls and heartbeats (real time, sub-second) --------------------------------------


def streaming(spec: str, pauses: list[float], text: str = "streamed answer") -> ResolvedModel:
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        for i, pause in enumerate(pauses):
            await asyncio.sleep(pause)
            yield text if i == 0 else ""

    async def never(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise AssertionError("the chain should stream")

    return ResolvedModel(spec, FunctionModel(never, stream_function=stream, model_name=spec), CapabilityProfile())


async def test_a_silent_stream_is_killed_after_the_stall_timeout() -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    model = ResilientModel(
        [streaming("openai:gpt-5.1", [0.0, 30.0]), streaming("openai:gpt-5", [0.0])],
        board=BreakerBoard(),
        settings=ResilienceSettings(stall_timeout_s=0.2, heartbeat_s=10),
        on_event=lambda name, **f: events.append((name, f)),
    )
    with bounded(0.2, hung_s=30, what="the chain"):  # the stall timeout, not the 30 s silence
        output, used = await run_recording(model)
    assert output == "streamed answer"

    assert (
        "model_attempt_failed",
        {"model": "openai:gpt-5.1", "kind": "retryable", "reason": "stalled: no output for 0.2s"},
    ) in events
    assert used == ["openai:gpt-5"]


async def test_a_slow_but_steady_stream_is_not_killed() -> None:
    model = ResilientModel(
        [streaming("openai:gpt-5.1", [0.1, 0.1, 0.1, 0.1])],
        board=BreakerBoard(),
        settings=ResilienceSettings(stall_timeout_s=0.25, heartbeat_s=10),
    )
    assert await run(model) == "streamed answer"


async def test_heartbeats_while_the_model_is_silent() -> None:
    lines: list[str] = []
    model = ResilientModel(
        [streaming("openai:gpt-5.1", [0.35])],
        board=BreakerBoard(),
        settings=ResilienceSettings(stall_timeout_s=5, heartbeat_s=0.1),
    )

    assert await run(model.watched(AgentWatch(heartbeat=lines.append))) == "streamed answer"

    assert 2 <= len(lines) <= 4
    assert all(line.startswith("openai:gpt-5.1: model is thinking… (") for line in lines)
    assert lines[0] == "openai:gpt-5.1: model is thinking… (0s since last output)"


async def test_a_model_without_streaming_gets_heartbeats_but_no_stall_kill() -> None:
    lines: list[str] = []

    async def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(0.3)
        return ModelResponse(parts=[TextPart("slow but fine")])

    resolved = ResolvedModel("local:tiny", FunctionModel(slow, model_name="tiny"), CapabilityProfile())
    model = ResilientModel(
        [resolved], board=BreakerBoard(), settings=ResilienceSettings(stall_timeout_s=0.1, heartbeat_s=0.1)
    )

    assert await run(model.watched(AgentWatch(heartbeat=lines.append))) == "slow but fine"
    assert lines and lines[0].startswith("local:tiny: model is thinking…")


async def test_the_agent_can_stream_through_the_chain(h: Harness) -> None:
    a = Scripted("openai:gpt-5.1", [http(503)])
    b = Scripted("openai:gpt-5", ["from B"])

    async with Agent(h.model(a, b)).run_stream("review this") as result:
        assert await result.get_output() == "from B"


# -- chains ---------------------------------------------------------------------------------------


def test_build_chain_follows_the_family_to_its_end() -> None:
    assert build_chain("anthropic:claude-opus-4-6", DEFAULT_FAILBACK) == [
        "anthropic:claude-opus-4-6",
        "anthropic:claude-opus-4-5",
    ]
    assert build_chain("openai:gpt-5.1", DEFAULT_FAILBACK) == ["openai:gpt-5.1", "openai:gpt-5", "openai:gpt-4.1"]
    assert build_chain("openai:gpt-5-mini", DEFAULT_FAILBACK) == ["openai:gpt-5-mini", "openai:gpt-4.1-mini"]
    assert build_chain("ollama:qwen2.5-coder:7b", DEFAULT_FAILBACK) == ["ollama:qwen2.5-coder:7b"]


def test_build_chain_stops_at_a_cycle_and_drops_disabled_providers() -> None:
    cycle = {"a:one": "a:two", "a:two": "a:one"}
    assert build_chain("a:one", cycle) == ["a:one", "a:two"]
    assert build_chain("openai:gpt-5.1", DEFAULT_FAILBACK, disabled_providers={"OpenAI"}) == []


def test_build_chain_never_crosses_providers() -> None:
    with pytest.raises(ConfigError, match="failback chains never cross providers: openai:gpt-5 -> anthropic:x"):
        build_chain("openai:gpt-5.1", {**DEFAULT_FAILBACK, "openai:gpt-5": "anthropic:x"})


def test_default_failback_stays_in_each_family() -> None:
    for model, previous in DEFAULT_FAILBACK.items():
        if previous is not None:
            assert model.partition(":")[0] == previous.partition(":")[0]
    assert DEFAULT_FAILBACK["anthropic:claude-opus-4-6"] == "anthropic:claude-opus-4-5"
    assert DEFAULT_FAILBACK["openai:gpt-5.1"] == "openai:gpt-5"


def test_default_models_and_chains_name_models_the_installed_sdks_know() -> None:
    """A chain that ends in a retired model wastes a request on a 404; defaults must not be deprecated."""
    from typing import get_args

    from anthropic._data import DEPRECATED_MODELS
    from anthropic.types import Model as AnthropicModel
    from openai.types import ChatModel

    from codejury.config import CLOUD_DEFAULTS

    known = {
        "anthropic": set(get_args(get_args(AnthropicModel)[0])),
        "openai": set(get_args(ChatModel)),
    }
    for spec in [m for pair in DEFAULT_FAILBACK.items() for m in pair if m]:
        provider, _, name = spec.partition(":")
        assert name in known[provider], f"{spec} is not a model the {provider} SDK knows"
    for tiers in CLOUD_DEFAULTS.values():
        for spec in tiers.values():
            assert spec.partition(":")[2] not in DEPRECATED_MODELS, f"default {spec} is deprecated"


# -- the real SDKs against the fake provider server --------------------------------------------------


@pytest.mark.usefixtures("closed_models")
@pytest.mark.parametrize(
    ("first", "second", "status"),
    [("openai:gpt-5.1", "openai:gpt-5", 503), ("anthropic:claude-opus-4-6", "anthropic:claude-opus-4-5", 529)],
    ids=["openai", "anthropic"],
)
async def test_real_sdk_fails_back_on_the_same_provider(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch, first: str, second: str, status: int
) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)
    server.script(first.partition(":")[2], [ErrorReply(status)])
    server.script(second.partition(":")[2], [TextReply("answer from the previous generation")])
    env = {
        "OPENAI_API_KEY": "sk-fake",
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "OPENAI_BASE_URL": server.openai_base_url,
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
    }
    chain = [registry.resolve_model(spec, merge_providers(), env=env) for spec in build_chain(first, DEFAULT_FAILBACK)]
    events: list[tuple[str, dict[str, Any]]] = []
    model = ResilientModel(chain, board=BreakerBoard(), on_event=lambda name, **f: events.append((name, f)))

    watch = AgentWatch()
    result = await Agent(model.watched(watch)).run("review this")
    used = watch.answered

    assert result.output == "answer from the previous generation"
    assert [r.model for r in server.requests] == [first.partition(":")[2], second.partition(":")[2]]
    assert all(r.stream for r in server.requests)
    assert used == [second]
    assert (
        "model_failback",
        {
            "from_model": first,
            "to_model": second,
            "reason": f"HTTP {status} {'unavailable' if status == 503 else 'overloaded'}",
        },
    ) in events
    assert result.usage.requests == 1
