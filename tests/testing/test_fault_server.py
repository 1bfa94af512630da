"""The fault-injection replies of the fake provider server, as the real SDKs see them."""

from __future__ import annotations

import importlib
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from codejury_fakes.provider_server import (
    DropReply,
    ErrorReply,
    FakeProviderServer,
    HangReply,
    MalformedReply,
    RandomFaults,
    SlowDripReply,
    TextReply,
    ToolCallReply,
    truncated,
)
from codejury_fakes.provider_wire import render_anthropic, render_openai
from pydantic_ai import Agent, models
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelHTTPError,
    ModelOverloadedError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelTimeoutError,
)
from pydantic_ai.models import Model

from codejury.models import registry
from codejury.models.providers import BUILTIN_PROVIDERS
from tests.timing import bounded, limit

OPENAI = "openai:gpt-5-mini"
ANTHROPIC = "anthropic:claude-haiku-4-5"
BOTH = pytest.mark.parametrize("spec", [OPENAI, ANTHROPIC], ids=["openai", "anthropic"])
STREAMED = pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        yield srv


@pytest.fixture
def allow_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)


@pytest.fixture
async def closed_models(server: FakeProviderServer) -> AsyncIterator[None]:
    """Close every SDK client before the server stops (unclosed clients warn, and warnings fail)."""
    registry.clear_model_cache()
    yield
    await registry.close_cached_models()


pytestmark = pytest.mark.usefixtures("allow_requests", "closed_models")


def _model(server: FakeProviderServer, spec: str, timeout_s: float = 5.0) -> Model:
    env = {
        "OPENAI_API_KEY": "sk-fake",
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "OPENAI_BASE_URL": server.openai_base_url,
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
    }
    return registry.resolve_model(spec, BUILTIN_PROVIDERS, env=env, timeout_s=timeout_s).model


def _sdk(spec: str) -> Any:
    """The provider SDK ``spec`` is called through (imported here: only the tests of that provider load it)."""
    return importlib.import_module("anthropic" if spec == ANTHROPIC else "openai")


async def _ask(model: Model, *, stream: bool) -> str:
    if stream:
        async with Agent(model).run_stream("review this") as run:
            return await run.get_output()
    return (await Agent(model).run("review this")).output


# -- hang before the first byte ------------------------------------------------------------------


@BOTH
@STREAMED
async def test_hang_longer_than_the_client_timeout_is_a_timeout(
    server: FakeProviderServer, spec: str, stream: bool
) -> None:
    server.script("*", [HangReply(30)])
    model = _model(server, spec, timeout_s=0.2)  # its SDK imported before the clock starts
    started = time.monotonic()

    with pytest.raises(ModelTimeoutError) as info:
        await _ask(model, stream=stream)

    assert 0.2 <= time.monotonic() - started < limit(0.2, hung_s=30)  # the client's timeout, not the 30 s hang
    assert isinstance(info.value.__cause__, _sdk(spec).APITimeoutError)
    assert len(server.requests) == 1


@BOTH
async def test_hang_then_reply_arrives_late(server: FakeProviderServer, spec: str) -> None:
    server.script("*", [HangReply(0.2, then=TextReply("worth the wait"))])
    started = time.monotonic()

    assert await _ask(_model(server, spec), stream=False) == "worth the wait"
    assert time.monotonic() - started >= 0.2


@BOTH
async def test_hang_then_close_is_a_connection_error_not_a_timeout(server: FakeProviderServer, spec: str) -> None:
    server.script("*", [HangReply(0.05)])

    with pytest.raises(ModelConnectionError) as info:
        await _ask(_model(server, spec), stream=False)

    assert not isinstance(info.value, ModelTimeoutError)


def test_stop_ends_a_hang_in_flight() -> None:
    server = FakeProviderServer().start()
    server.script("*", [HangReply(30, then=TextReply("never"))])
    body = json.dumps({"model": "m", "messages": []}).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        deadline = time.monotonic() + 30
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.requests  # the hang is in flight
        with bounded(0, hung_s=30, what="stopping"):  # not the hang's 30 s
            server.stop()
        # The hang ends by closing the connection: nothing was ever sent, not even a status line.
        assert sock.recv(1024) == b""


# -- slow drip -----------------------------------------------------------------------------------


@BOTH
async def test_slow_drip_stream_completes_with_everything(server: FakeProviderServer, spec: str) -> None:
    reply = TextReply("every word arrives, slowly")
    render = render_openai if spec == OPENAI else render_anthropic
    events = len(render(reply, "m", stream=True).chunks)
    server.script("*", [SlowDripReply(reply, delay_s=0.04)])
    started = time.monotonic()

    assert await _ask(_model(server, spec), stream=True) == "every word arrives, slowly"
    assert time.monotonic() - started >= events * 0.04
    assert events >= 6


async def test_slow_drip_plain_body_in_small_pieces(server: FakeProviderServer) -> None:
    reply = TextReply("one body, many pieces")
    size = len(render_openai(reply, "gpt-5-mini", stream=False).chunks[0])
    server.script("*", [SlowDripReply(reply, delay_s=0.02, chunk_bytes=64)])
    started = time.monotonic()

    assert await _ask(_model(server, OPENAI), stream=False) == "one body, many pieces"
    assert time.monotonic() - started >= -(-size // 64) * 0.02


async def test_slow_drip_slower_than_the_read_timeout_times_out(server: FakeProviderServer) -> None:
    # The SDK timeout is per read, not per response: each pause longer than it is fatal.
    server.script("*", [SlowDripReply(TextReply("too slow"), delay_s=0.5)])

    with pytest.raises(ModelTimeoutError):
        await _ask(_model(server, OPENAI, timeout_s=0.2), stream=True)


# -- dropped connection --------------------------------------------------------------------------


@BOTH
@STREAMED
@pytest.mark.parametrize("after_bytes", [0, 60])
async def test_dropped_connection_is_a_connection_error(
    server: FakeProviderServer, spec: str, stream: bool, after_bytes: int
) -> None:
    server.script("*", [DropReply(after_bytes, TextReply("this never arrives whole"))])

    with pytest.raises(ModelConnectionError) as info:
        await _ask(_model(server, spec), stream=stream)

    assert not isinstance(info.value, ModelTimeoutError)
    assert info.value.phase == "read"
    assert len(server.requests) == 1


def _raw_post(server: FakeProviderServer, payload: dict[str, object]) -> bytes:
    """Everything the server sends for one request, until it closes the connection."""
    body = json.dumps(payload).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def test_drop_sends_headers_and_exactly_after_bytes_of_the_body(server: FakeProviderServer) -> None:
    reply = TextReply("a body that is cut")
    server.script("*", [DropReply(25, reply)])

    head, _, body = _raw_post(server, {"model": "m", "messages": []}).partition(b"\r\n\r\n")

    assert head.startswith(b"HTTP/1.1 200")
    full = render_openai(reply, "m", stream=False).chunks[0]
    assert f"content-length: {len(full)}".encode() in head.lower()
    assert len(body) == 25
    assert body.startswith(b'{"id": "chatcmpl-')  # the id is random: same shape, other digits


def test_drop_in_a_stream_never_sends_the_last_chunk(server: FakeProviderServer) -> None:
    server.script("*", [DropReply(40)])

    received = _raw_post(server, {"model": "m", "messages": [], "stream": True})

    assert b"transfer-encoding: chunked" in received.lower()
    assert b"data: " in received
    assert not received.endswith(b"0\r\n\r\n")


# -- malformed JSON ------------------------------------------------------------------------------


@BOTH
@STREAMED
async def test_malformed_json_is_an_api_error_without_a_status(
    server: FakeProviderServer, spec: str, stream: bool
) -> None:
    server.script("*", [MalformedReply()])

    with pytest.raises(ModelAPIError) as info:
        await _ask(_model(server, spec), stream=stream)

    assert not isinstance(info.value, ModelHTTPError | ModelConnectionError)
    assert isinstance(info.value.__cause__, json.JSONDecodeError)


# -- error statuses ------------------------------------------------------------------------------


@BOTH
async def test_529_overloaded(server: FakeProviderServer, spec: str) -> None:
    server.script("*", [ErrorReply(529)])

    with pytest.raises(ModelHTTPError) as info:
        await _ask(_model(server, spec), stream=False)

    assert info.value.status_code == 529
    assert isinstance(info.value, ModelOverloadedError)
    if spec == ANTHROPIC:
        assert info.value.provider_error_type == "overloaded_error"
        assert isinstance(info.value.__cause__, _sdk(spec).OverloadedError)


@BOTH
async def test_429_retry_after_is_on_the_response(server: FakeProviderServer, spec: str) -> None:
    server.script("*", [ErrorReply(429, retry_after=2)])

    with pytest.raises(ModelRateLimitError) as info:
        await _ask(_model(server, spec), stream=False)

    error = info.value
    assert isinstance(error, ModelHTTPError)
    assert error.headers is not None
    assert error.headers["retry-after"] == "2"
    assert error.retry_after == 2
    cause = error.__cause__
    assert isinstance(cause, _sdk(spec).APIStatusError)
    assert cause.response.headers["retry-after"] == "2"


async def test_429_without_retry_after(server: FakeProviderServer) -> None:
    server.script("*", [ErrorReply(429)])

    with pytest.raises(ModelRateLimitError) as info:
        await _ask(_model(server, OPENAI), stream=False)

    assert info.value.retry_after is None


async def test_openai_quota_exhausted(server: FakeProviderServer) -> None:
    server.script("*", [ErrorReply(429, code="insufficient_quota")])

    with pytest.raises(ModelQuotaExceededError) as info:
        await _ask(_model(server, OPENAI), stream=False)

    assert isinstance(info.value, ModelHTTPError)
    assert info.value.status_code == 429
    assert info.value.provider_error_code == "insufficient_quota"
    assert not isinstance(info.value, ModelRateLimitError)


async def test_anthropic_billing_error(server: FakeProviderServer) -> None:
    server.script("*", [ErrorReply(400, code="billing_error")])

    with pytest.raises(ModelQuotaExceededError) as info:
        await _ask(_model(server, ANTHROPIC), stream=False)

    assert info.value.provider_error_type == "billing_error"


# -- scripting -----------------------------------------------------------------------------------


async def test_faults_nest_and_script_in_order(server: FakeProviderServer) -> None:
    server.script("*", [HangReply(0.05, then=ErrorReply(503)), TextReply("recovered")])
    model = _model(server, OPENAI)

    with pytest.raises(ModelHTTPError) as info:
        await _ask(model, stream=False)
    assert info.value.status_code == 503
    assert await _ask(model, stream=False) == "recovered"


async def test_script_for_request_is_inserted_by_overall_count(server: FakeProviderServer) -> None:
    server.script("*", [TextReply("first"), TextReply("second")])
    server.script_for_request(1, ErrorReply(500))
    model = _model(server, OPENAI)

    assert await _ask(model, stream=False) == "first"
    with pytest.raises(ModelHTTPError):
        await _ask(model, stream=False)
    assert await _ask(model, stream=False) == "second"
    assert [type(reply).__name__ for _, reply in server.served] == ["TextReply", "ErrorReply", "TextReply"]


def test_truncated_cuts_text_and_tool_arguments() -> None:
    assert truncated(TextReply("abcdefgh")) == TextReply("abcd", finish="length")
    cut = truncated(ToolCallReply([("final_result", {"findings": []})]))
    assert isinstance(cut, ToolCallReply)
    assert cut.finish == "length"
    assert cut.calls == [("final_result", '{"findin')]


# -- seeded random faults ------------------------------------------------------------------------

HEALTHY = TextReply("all good")


def test_random_faults_are_deterministic_per_model_and_index() -> None:
    rates = {"overloaded": 0.2, "hang": 0.1, "drop": 0.1}
    first = RandomFaults(42, rates, HEALTHY)
    again = RandomFaults(42, rates, HEALTHY)
    other = RandomFaults(43, rates, HEALTHY)

    picks = [first.choose(i, "gpt-5") for i in range(200)]
    assert picks == [again.choose(i, "gpt-5") for i in range(200)]
    assert picks != [other.choose(i, "gpt-5") for i in range(200)]
    assert picks != [first.choose(i, "claude") for i in range(200)]
    # The rates hold roughly over many requests.
    assert 20 <= picks.count("overloaded") <= 60
    assert 60 <= picks.count("ok") <= 160
    assert set(picks) == {"ok", *rates}


def test_random_faults_replies() -> None:
    faults = RandomFaults(1, {"slow": 0.5, "truncated": 0.5}, lambda i, model: TextReply(f"{model} {i}"))

    for index in range(10):
        reply = faults(index, "m")
        name = faults.choose(index, "m")
        expected = TextReply(f"m {index}")
        assert reply == (SlowDripReply(expected, 0.05) if name == "slow" else truncated(expected))
    assert sum(faults.counts().values()) == 10


def test_random_faults_reject_unknown_kinds_and_bad_rates() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        RandomFaults(1, {"gremlins": 0.1}, HEALTHY)
    with pytest.raises(ValueError, match="add up"):
        RandomFaults(1, {"hang": 0.7, "drop": 0.7}, HEALTHY)


async def test_random_faults_through_the_server_follow_each_models_order(server: FakeProviderServer) -> None:
    rates = {"overloaded": 0.3, "server_error": 0.2, "malformed": 0.1}
    source = RandomFaults(7, rates, HEALTHY)
    server.script_source("*", source)
    gpt, mini = _model(server, "openai:gpt-5"), _model(server, OPENAI)

    outcomes: dict[str, list[str]] = {"gpt-5": [], "gpt-5-mini": []}
    for model, name in [(gpt, "gpt-5"), (mini, "gpt-5-mini"), (mini, "gpt-5-mini"), (gpt, "gpt-5")] * 3:
        try:
            await _ask(model, stream=False)
            outcomes[name].append("ok")
        except ModelHTTPError as error:
            outcomes[name].append({529: "overloaded", 500: "server_error"}[error.status_code])
        except ModelAPIError:
            outcomes[name].append("malformed")

    for name, seen in outcomes.items():
        assert seen == [source.choose(i, name) for i in range(6)]
    assert sorted(source.history) == sorted((name, i, source.choose(i, name)) for name in outcomes for i in range(6))
