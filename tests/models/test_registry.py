"""The real adapters from ``resolve_model`` against the loopback fake provider server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
from codejury_fakes.provider_server import (
    ErrorReply,
    FakeProviderServer,
    RecordedRequest,
    TextReply,
    TokenUsage,
    ToolCallReply,
)
from pydantic import BaseModel
from pydantic_ai import Agent, models
from pydantic_ai.exceptions import ModelHTTPError

from codejury.errors import ModelSetupError
from codejury.models import registry
from codejury.models.providers import BUILTIN_PROVIDERS, ProviderSpec, gateway_provider, merge_providers

OPENAI_KEY = "sk-fake-openai-0001"
ANTHROPIC_KEY = "sk-ant-fake-0002"
GATEWAY_KEY = "gw-fake-0003"


class Verdict(BaseModel):
    verdict: str
    score: int


@dataclass(frozen=True)
class Case:
    spec: str
    vendor: str
    key: str


CASES = [
    Case("openai:gpt-5-mini", "openai", OPENAI_KEY),
    Case("anthropic:claude-haiku-4-5", "anthropic", ANTHROPIC_KEY),
    Case("teamgw:qwen2.5-coder:7b", "openai", GATEWAY_KEY),
]
IDS = [c.spec.partition(":")[0] for c in CASES]


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        yield srv


@pytest.fixture
def allow_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    # tests/conftest.py sets the module attribute to False for the whole suite.
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)


@pytest.fixture
async def closed_models(server: FakeProviderServer) -> AsyncIterator[None]:
    """Close every SDK client before the server stops (unclosed clients warn, and warnings fail)."""
    registry.clear_model_cache()
    yield
    await registry.close_cached_models()


@pytest.fixture
def providers(server: FakeProviderServer) -> dict[str, ProviderSpec]:
    return merge_providers({"teamgw": gateway_provider("teamgw", server.openai_base_url, "TEAMGW_KEY")})


@pytest.fixture
def env(server: FakeProviderServer) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": OPENAI_KEY,
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "TEAMGW_KEY": GATEWAY_KEY,
        "OPENAI_BASE_URL": server.openai_base_url,
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
    }


def _final(usage: TokenUsage) -> ToolCallReply:
    return ToolCallReply([("final_result", {"verdict": "approved", "score": 7})], usage=usage)


def _key_sent(request: RecordedRequest, case: Case) -> bool:
    if case.vendor == "anthropic":
        # anthropic 2.x sends the API key as a bearer token; 0.x sent x-api-key.
        return request.headers.get("x-api-key") == case.key or (
            request.headers.get("authorization") == f"Bearer {case.key}"
        )
    return request.headers.get("authorization") == f"Bearer {case.key}"


pytestmark = pytest.mark.usefixtures("allow_requests", "closed_models")


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_structured_output_usage_and_key(
    case: Case, server: FakeProviderServer, providers: dict[str, ProviderSpec], env: dict[str, str]
) -> None:
    server.script("*", [_final(TokenUsage(input=1200, output=34, cached_read=800, cache_write=100))])
    resolved = registry.resolve_model(case.spec, providers, env=env)

    result = await Agent(resolved.model, output_type=Verdict).run("review this")

    assert result.output == Verdict(verdict="approved", score=7)
    usage = result.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (1, 1200, 34)
    # input_tokens includes cached tokens for both vendors (pydantic-ai normalises Anthropic's split).
    assert usage.cache_read_tokens == 800
    if case.vendor == "anthropic":
        assert usage.cache_write_tokens == 100
    [request] = server.requests
    assert request.vendor == case.vendor
    assert request.model == case.spec.partition(":")[2]
    assert not request.stream
    assert _key_sent(request, case)
    assert all(case.key not in v for k, v in request.headers.items() if k not in ("authorization", "x-api-key"))


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_no_sdk_retry_on_server_error(
    case: Case, server: FakeProviderServer, providers: dict[str, ProviderSpec], env: dict[str, str]
) -> None:
    server.script("*", [ErrorReply(500), _final(TokenUsage())])
    resolved = registry.resolve_model(case.spec, providers, env=env)

    with pytest.raises(ModelHTTPError) as info:
        await Agent(resolved.model, output_type=Verdict).run("review this")

    assert info.value.status_code == 500
    assert len(server.requests) == 1


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_no_sdk_retry_on_rate_limit(
    case: Case, server: FakeProviderServer, providers: dict[str, ProviderSpec], env: dict[str, str]
) -> None:
    server.script("*", [ErrorReply(429, retry_after="7"), _final(TokenUsage())])
    resolved = registry.resolve_model(case.spec, providers, env=env)

    with pytest.raises(ModelHTTPError) as info:
        await Agent(resolved.model, output_type=Verdict).run("review this")

    assert info.value.status_code == 429
    assert info.value.retry_after == 7
    assert len(server.requests) == 1


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_streamed_text(
    case: Case, server: FakeProviderServer, providers: dict[str, ProviderSpec], env: dict[str, str]
) -> None:
    server.script("*", [TextReply("looks fine to me", usage=TokenUsage(input=50, output=4))])
    resolved = registry.resolve_model(case.spec, providers, env=env)

    async with Agent(resolved.model).run_stream("review this") as run:
        text = await run.get_output()

    assert text == "looks fine to me"
    assert (run.usage.input_tokens, run.usage.output_tokens) == (50, 4)
    assert server.requests[0].stream


async def test_anthropic_gets_a_max_tokens_cap(
    server: FakeProviderServer, providers: dict[str, ProviderSpec], env: dict[str, str]
) -> None:
    server.script("*", [TextReply("ok")])
    resolved = registry.resolve_model("anthropic:claude-haiku-4-5", providers, env=env)
    await Agent(resolved.model).run("hi")
    assert server.requests[0].body["max_tokens"] == resolved.profile.max_output_tokens


def test_same_inputs_share_one_model(providers: dict[str, ProviderSpec], env: dict[str, str]) -> None:
    first = registry.resolve_model("openai:gpt-5-mini", providers, env=env)
    assert registry.resolve_model("openai:gpt-5-mini", providers, env=env) is first
    other_key = {**env, "OPENAI_API_KEY": "sk-other"}
    assert registry.resolve_model("openai:gpt-5-mini", providers, env=other_key) is not first


@pytest.mark.parametrize(
    ("spec", "var"),
    [("openai:gpt-5-mini", "OPENAI_API_KEY"), ("anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY")],
)
def test_missing_api_key_names_the_variable(spec: str, var: str, env: dict[str, str]) -> None:
    env = {k: v for k, v in env.items() if k != var}
    with pytest.raises(ModelSetupError) as info:
        registry.resolve_model(spec, BUILTIN_PROVIDERS, env=env)
    message = str(info.value)
    assert var in message
    assert "\n" not in message
    assert all(secret not in message for secret in (OPENAI_KEY, ANTHROPIC_KEY, GATEWAY_KEY))


def test_blank_api_key_counts_as_missing(env: dict[str, str]) -> None:
    with pytest.raises(ModelSetupError, match="OPENAI_API_KEY"):
        registry.resolve_model("openai:gpt-5-mini", BUILTIN_PROVIDERS, env={**env, "OPENAI_API_KEY": "  "})


def test_missing_gateway_key_names_its_variable(providers: dict[str, ProviderSpec]) -> None:
    with pytest.raises(ModelSetupError, match="TEAMGW_KEY"):
        registry.resolve_model("teamgw:m", providers, env={})


def test_unknown_provider(env: dict[str, str]) -> None:
    with pytest.raises(ModelSetupError, match="unknown provider 'nope'"):
        registry.resolve_model("nope:model", BUILTIN_PROVIDERS, env=env)


def test_disabled_provider(env: dict[str, str]) -> None:
    providers = merge_providers(disabled=frozenset({"openai"}))
    with pytest.raises(ModelSetupError, match="disabled"):
        registry.resolve_model("openai:gpt-5-mini", providers, env=env)


@pytest.mark.parametrize("spec", ["gpt-5-mini", "openai:", "openai:  ", ":gpt-5", "", "open ai:gpt-5", "-x:y"])
def test_malformed_model_string(spec: str, env: dict[str, str]) -> None:
    with pytest.raises(ModelSetupError, match="expected provider:model"):
        registry.resolve_model(spec, BUILTIN_PROVIDERS, env=env)


def test_model_part_may_contain_colons() -> None:
    assert registry.parse_model_string("Ollama:qwen2.5-coder:7b") == ("ollama", "qwen2.5-coder:7b")


def test_server_stops_cleanly_when_never_started() -> None:
    FakeProviderServer().stop()
