"""The error classifier: synthetic errors, then the real OpenAI and Anthropic SDKs against the fake server."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx2
import pytest
from codejury_fakes.provider_server import DropReply, ErrorReply, FakeProviderServer, HangReply, MalformedReply, Reply
from pydantic import BaseModel
from pydantic_ai import Agent, models
from pydantic_ai.exceptions import (
    IncompleteToolCall,
    ModelAPIError,
    ModelHTTPError,
    ModelServerError,
    ModelUnavailableError,
    OutputTokenLimitExceeded,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)

from codejury.models import registry
from codejury.models.providers import merge_providers
from codejury.resilience.errors import ChainExhausted, Classified, ModelStalled, classify
from codejury.retrying import retry_after_s

OPENAI_KEY = "sk-fake-openai-resilience-0001"
ANTHROPIC_KEY = "sk-ant-fake-resilience-0002"


def _caused(outer: BaseException, inner: BaseException) -> BaseException:
    outer.__cause__ = inner
    return outer


_REQUEST = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")

SYNTHETIC: list[tuple[str, BaseException, str, str]] = [
    ("asyncio timeout", TimeoutError(), "retryable", "timed out"),
    ("httpx2 read timeout", httpx2.ReadTimeout("slow", request=_REQUEST), "retryable", "timed out"),
    (
        "httpx2 dropped",
        httpx2.RemoteProtocolError("peer closed connection", request=_REQUEST),
        "retryable",
        "connection failed or dropped",
    ),
    ("httpx2 connect", httpx2.ConnectError("refused", request=_REQUEST), "retryable", "connection failed or dropped"),
    ("cancelled", asyncio.CancelledError(), "fatal", "cancelled"),
    ("usage limit", UsageLimitExceeded("request_limit of 30"), "fatal", "usage limit exceeded"),
    (
        "invalid output after repair",
        UnexpectedModelBehavior("Exceeded maximum output retries (1)"),
        "fatal",
        "invalid output after repair: Exceeded maximum output retries (1)",
    ),
    (
        "empty body",
        UnexpectedModelBehavior("Streamed response ended without content or tool calls"),
        "retryable",
        "malformed response from the server",
    ),
    (
        "truncated JSON output",
        OutputTokenLimitExceeded("token limit"),
        "truncated",
        "output cut off at the token limit",
    ),
    ("truncated tool call", IncompleteToolCall("token limit"), "truncated", "output cut off at the token limit"),
    (
        "undecodable body",
        ModelAPIError("gpt-5", "Failed to decode response as JSON"),
        "retryable",
        "malformed response from the server",
    ),
    (
        "502 category",
        ModelHTTPError.for_category(ModelServerError, status_code=502, model_name="m"),
        "retryable",
        "HTTP 502 bad gateway",
    ),
    ("stalled", ModelStalled("openai:gpt-5", 60), "retryable", "stalled: no output for 60s"),
    (
        "wrapped in an unknown error",
        _caused(
            RuntimeError("boom"), ModelHTTPError.for_category(ModelUnavailableError, status_code=503, model_name="m")
        ),
        "retryable",
        "HTTP 503 unavailable",
    ),
    ("a bug", KeyError("x"), "fatal", "KeyError: 'x'"),
]


@pytest.mark.parametrize(("exc", "kind", "reason"), [c[1:] for c in SYNTHETIC], ids=[c[0] for c in SYNTHETIC])
def test_synthetic_errors(exc: BaseException, kind: str, reason: str) -> None:
    assert classify(exc) == Classified(kind, reason)  # type: ignore[arg-type]


def test_chain_exhausted_is_retryable_with_what_each_model_did() -> None:
    exc = ChainExhausted([("openai:gpt-5.1", "HTTP 503 unavailable"), ("openai:gpt-5", "skipped, circuit open")], None)
    found = classify(exc)
    assert found.kind == "retryable"
    assert found.reason == str(exc)
    assert (
        str(exc) == "no model could answer: openai:gpt-5.1: HTTP 503 unavailable; openai:gpt-5: skipped, circuit open"
    )


def test_retry_after_parsing() -> None:
    now = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
    at = now.timestamp()
    assert retry_after_s({"Retry-After": "7"}, at) == 7.0
    assert retry_after_s({"retry-after": "1.5"}, at) == 1.5
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "9"}, at) == 0.25
    assert retry_after_s({"retry-after-ms": "soon", "retry-after": "9"}, at) == 9.0
    assert retry_after_s({"retry-after": format_datetime(now + timedelta(seconds=20))}, at) == 20.0
    assert retry_after_s({"retry-after": format_datetime(now - timedelta(seconds=20))}, at) == 0.0
    assert retry_after_s({"retry-after": "-5"}, at) == 0.0
    assert retry_after_s({"retry-after": "inf"}, at) is None
    assert retry_after_s({"retry-after": "soon"}, at) is None
    assert retry_after_s({}, at) is None


# -- the real SDKs against the fake provider server ------------------------------------------------


class Verdict(BaseModel):
    verdict: str


@pytest.fixture
def allow_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)


async def _error_from(server: FakeProviderServer, spec: str, reply: Reply, *, timeout_s: float = 10.0) -> BaseException:
    server.script("*", [reply])
    env = {
        "OPENAI_API_KEY": OPENAI_KEY,
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "OPENAI_BASE_URL": server.openai_base_url,
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
    }
    resolved = registry.resolve_model(spec, merge_providers(), env=env, timeout_s=timeout_s)
    with pytest.raises(Exception) as info:
        await Agent(resolved.model, output_type=Verdict).run("review this")
    return info.value


def _http_date(seconds_from_now: int) -> str:
    return format_datetime(datetime.now(UTC) + timedelta(seconds=seconds_from_now), usegmt=True)


OPENAI = "openai:gpt-5-mini"
ANTHROPIC = "anthropic:claude-haiku-4-5"
REAL: list[tuple[str, str, Reply, str, str]] = [
    ("429", OPENAI, ErrorReply(429), "retryable", "HTTP 429 rate limited"),
    ("429", ANTHROPIC, ErrorReply(429), "retryable", "HTTP 429 rate limited"),
    (
        "429 quota",
        OPENAI,
        ErrorReply(429, code="insufficient_quota"),
        "quota",
        "quota or spend limit exhausted (HTTP 429)",
    ),
    (
        "429 billing",
        ANTHROPIC,
        ErrorReply(429, code="billing_error"),
        "quota",
        "quota or spend limit exhausted (HTTP 429)",
    ),
    (
        "400 billing",
        ANTHROPIC,
        ErrorReply(400, code="billing_error"),
        "quota",
        "quota or spend limit exhausted (HTTP 400)",
    ),
    ("500", OPENAI, ErrorReply(500), "retryable", "HTTP 500 server error"),
    ("500", ANTHROPIC, ErrorReply(500), "retryable", "HTTP 500 server error"),
    ("503", OPENAI, ErrorReply(503), "retryable", "HTTP 503 unavailable"),
    ("503", ANTHROPIC, ErrorReply(503), "retryable", "HTTP 503 unavailable"),
    ("529", ANTHROPIC, ErrorReply(529), "retryable", "HTTP 529 overloaded"),
    ("529", OPENAI, ErrorReply(529), "retryable", "HTTP 529 overloaded"),
    ("401", OPENAI, ErrorReply(401), "fatal", "authentication failed (401)"),
    ("401", ANTHROPIC, ErrorReply(401), "fatal", "authentication failed (401)"),
    ("403", ANTHROPIC, ErrorReply(403), "fatal", "permission denied (403)"),
    (
        "400 context",
        OPENAI,
        ErrorReply(
            400, code="context_length_exceeded", message="This model's maximum context length is 128000 tokens."
        ),
        "fatal",
        "context length exceeded (HTTP 400)",
    ),
    (
        "400 context",
        ANTHROPIC,
        ErrorReply(400, message="prompt is too long: 250000 tokens > 200000 maximum"),
        "fatal",
        "context length exceeded (HTTP 400)",
    ),
    ("400 other", OPENAI, ErrorReply(400), "fatal", "request rejected (HTTP 400)"),
    ("malformed body", OPENAI, MalformedReply(), "retryable", "malformed response from the server"),
    ("malformed body", ANTHROPIC, MalformedReply(), "retryable", "malformed response from the server"),
    ("dropped", OPENAI, DropReply(5), "retryable", "connection failed or dropped"),
    ("dropped", ANTHROPIC, DropReply(5), "retryable", "connection failed or dropped"),
]


@pytest.mark.usefixtures("allow_requests", "closed_models")
@pytest.mark.parametrize(
    ("spec", "reply", "kind", "reason"),
    [c[1:] for c in REAL],
    ids=[f"{c[1].partition(':')[0]}-{c[0]}" for c in REAL],
)
async def test_real_sdk_errors(server: FakeProviderServer, spec: str, reply: Reply, kind: str, reason: str) -> None:
    found = classify(await _error_from(server, spec, reply))
    assert (found.kind, found.reason) == (kind, reason)
    assert found.retry_after_s is None
    assert OPENAI_KEY not in found.reason and ANTHROPIC_KEY not in found.reason


@pytest.mark.usefixtures("allow_requests", "closed_models")
@pytest.mark.parametrize("spec", [OPENAI, ANTHROPIC])
async def test_real_sdk_retry_after_seconds_and_date(server: FakeProviderServer, spec: str) -> None:
    seconds = classify(await _error_from(server, spec, ErrorReply(429, retry_after="7")))
    assert seconds == Classified("retryable", "HTTP 429 rate limited", 7.0)
    dated = classify(await _error_from(server, spec, ErrorReply(503, retry_after=_http_date(20))))
    assert dated.kind == "retryable"
    assert dated.retry_after_s is not None and 15 <= dated.retry_after_s <= 20


@pytest.mark.usefixtures("allow_requests", "closed_models")
async def test_quota_is_never_given_a_retry_after(server: FakeProviderServer) -> None:
    found = classify(await _error_from(server, OPENAI, ErrorReply(429, code="insufficient_quota", retry_after="3")))
    assert found == Classified("quota", "quota or spend limit exhausted (HTTP 429)")


@pytest.mark.usefixtures("allow_requests", "closed_models")
@pytest.mark.parametrize("spec", [OPENAI, ANTHROPIC])
async def test_real_sdk_timeout(server: FakeProviderServer, spec: str) -> None:
    found = classify(await _error_from(server, spec, HangReply(2), timeout_s=0.2))
    assert (found.kind, found.reason) == ("retryable", "timed out")
