"""Scripted replies and how each vendor puts them on the wire (JSON bodies and SSE streams).

Content replies (``TextReply``, ``ToolCallReply``) and ``ErrorReply`` become a ``Wire``
(status, headers, body chunks). Fault replies change how the wire is sent rather than what is
in it: ``HangReply`` (nothing for a while), ``SlowDripReply`` (a pause before every chunk),
``DropReply`` (the connection closes part-way through the body) and ``MalformedReply``
(a body that is not valid JSON); they nest, e.g. ``HangReply(0.2, then=DropReply(40))``.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal


@dataclass(frozen=True)
class TokenUsage:
    """Tokens of one reply. ``input`` counts the whole prompt, cached reads and writes included."""

    input: int = 10
    output: int = 5
    cached_read: int = 0
    cache_write: int = 0


@dataclass(frozen=True)
class TextReply:
    """A plain assistant message; ``finish='length'`` means it was cut off at max tokens."""

    text: str
    finish: Literal["stop", "length"] = "stop"
    usage: TokenUsage = field(default_factory=TokenUsage)


@dataclass(frozen=True)
class ToolCallReply:
    """One or more tool calls; an args ``str`` is sent verbatim (e.g. truncated JSON)."""

    calls: list[tuple[str, dict[str, Any] | str]]
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish: Literal["tool_calls", "length"] = "tool_calls"


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error; ``body`` None means the vendor's usual error JSON for ``status``.

    ``retry_after`` goes out as the ``retry-after`` header (seconds, e.g. ``"7"``; a number is
    turned into text). ``code`` overrides the error's machine-readable code: for OpenAI the
    ``error.code`` (``"insufficient_quota"`` also sets ``error.type`` as OpenAI does), for
    Anthropic the ``error.type`` (e.g. ``"overloaded_error"``, ``"billing_error"``).
    """

    status: int
    body: dict[str, Any] | None = None
    retry_after: str | float | None = None
    message: str | None = None
    code: str | None = None


@dataclass(frozen=True)
class HangReply:
    """Accept the request and send nothing, not even a status line, for ``seconds``.

    Then send ``then`` (any reply), or close the connection when ``then`` is None. A hang ends
    early, closing the connection, when the server stops.
    """

    seconds: float
    then: Reply | None = None


@dataclass(frozen=True)
class SlowDripReply:
    """Send ``reply`` with a pause of ``delay_s`` before each body chunk (headers go at once).

    A streamed reply is one chunk per SSE event; a plain body is cut into ``chunk_bytes`` pieces.
    """

    reply: Reply
    delay_s: float
    chunk_bytes: int = 32


@dataclass(frozen=True)
class DropReply:
    """Send the status line, the headers and ``after_bytes`` of the body, then close the socket.

    The body is the rendered ``reply`` (a short text reply when None): the JSON document, or the
    SSE stream when the request asked for one. The response never completes; but with
    ``after_bytes`` past the end the client may not notice: a plain body is then whole, and the
    OpenAI SDK stops reading a stream at ``data: [DONE]`` (the Anthropic SDK does notice).
    """

    after_bytes: int = 0
    reply: Reply | None = None


@dataclass(frozen=True)
class MalformedReply:
    """A body that is not valid JSON, sent as ``application/json`` (as one SSE event when streamed)."""

    body: str = '{"choices": ['
    status: int = 200


Reply = TextReply | ToolCallReply | ErrorReply | HangReply | SlowDripReply | DropReply | MalformedReply

DEFAULT_DROPPED = TextReply("this reply is cut off before it ends")


@dataclass(frozen=True)
class Wire:
    """What goes back: status, headers and body chunks (several chunks when streamed).

    How it is sent: wait ``hang_s`` before anything; ``silent`` sends nothing at all and closes;
    ``drip_s`` pauses before each body chunk; ``drop_after`` closes the connection after that
    many body bytes.
    """

    status: int
    headers: dict[str, str]
    chunks: list[bytes]
    streamed: bool = False
    hang_s: float = 0.0
    silent: bool = False
    drip_s: float = 0.0
    drop_after: int | None = None

    @classmethod
    def json(cls, status: int, obj: Any, headers: dict[str, str] | None = None) -> Wire:
        """A JSON body in one piece."""
        return cls(status, {"Content-Type": "application/json", **(headers or {})}, [json.dumps(obj).encode()])

    @classmethod
    def sse(cls, events: list[tuple[str | None, Any]]) -> Wire:
        """A ``text/event-stream``: one chunk per ``(event name, data)``; data ``str`` goes verbatim."""
        chunks = []
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            chunks.append(((f"event: {name}\n" if name else "") + f"data: {text}\n\n").encode())
        return cls(200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, chunks, True)


# -- errors ------------------------------------------------------------------------------------

_OPENAI_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "permission_denied", "You are not allowed to use this model."),
    404: (
        "invalid_request_error",
        "model_not_found",
        "The model does not exist or you do not have access to it.",
    ),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request."),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The service is temporarily unavailable. Please try again later."),
    504: ("server_error", None, "The server did not answer in time."),
}
_ANTHROPIC_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "The requested resource could not be found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
    500: ("api_error", "An unexpected error has occurred internal to Anthropic's systems."),
    502: ("api_error", "Bad gateway."),
    503: ("api_error", "The service is temporarily unavailable."),
    504: ("timeout_error", "Request timed out."),
    529: ("overloaded_error", "Overloaded"),
}


# OpenAI codes whose ``type`` is the code itself, with OpenAI's message.
_OPENAI_CODES: dict[str, str] = {
    "insufficient_quota": ("You exceeded your current quota, please check your plan and billing details."),
}
_ANTHROPIC_TYPES: dict[str, str] = {
    "billing_error": "Your credit balance is too low to access the Anthropic API.",
    "overloaded_error": "Overloaded",
    "rate_limit_error": "Number of requests has exceeded your rate limit.",
}


def _error_headers(reply: ErrorReply) -> dict[str, str]:
    if reply.retry_after is None:
        return {}
    value = reply.retry_after
    text = value if isinstance(value, str) else (str(int(value)) if float(value).is_integer() else str(value))
    return {"retry-after": text}


def _openai_error(reply: ErrorReply) -> Wire:
    if reply.body is not None:
        return Wire.json(reply.status, reply.body, _error_headers(reply))
    kind, code, message = _OPENAI_ERRORS.get(reply.status, ("server_error", None, "Error."))
    if reply.code is not None:
        code = reply.code
        if reply.code in _OPENAI_CODES:
            kind, message = reply.code, _OPENAI_CODES[reply.code]
    body = {"error": {"message": reply.message or message, "type": kind, "param": None, "code": code}}
    return Wire.json(reply.status, body, _error_headers(reply))


def _anthropic_error(reply: ErrorReply) -> Wire:
    if reply.body is not None:
        return Wire.json(reply.status, reply.body, _error_headers(reply))
    kind, message = _ANTHROPIC_ERRORS.get(reply.status, ("api_error", "Error."))
    if reply.code is not None:
        kind, message = reply.code, _ANTHROPIC_TYPES.get(reply.code, message)
    body = {
        "type": "error",
        "error": {"type": kind, "message": reply.message or message},
        "request_id": "req_fake",
    }
    return Wire.json(reply.status, body, {"request-id": "req_fake", **_error_headers(reply)})


# -- faults ------------------------------------------------------------------------------------

Renderer = Callable[..., Wire]


def _render_fault(reply: Reply, model: str, *, stream: bool, render: Renderer, event: str | None) -> Wire | None:
    """The wire for a fault reply (None for a content or error reply, rendered by the vendor)."""
    if isinstance(reply, HangReply):
        if reply.then is None:
            return Wire(0, {}, [], hang_s=reply.seconds, silent=True)
        inner = render(reply.then, model, stream=stream)
        return replace(inner, hang_s=inner.hang_s + reply.seconds)
    if isinstance(reply, SlowDripReply):
        inner = render(reply.reply, model, stream=stream)
        if not inner.streamed:
            data = b"".join(inner.chunks)
            size = max(1, reply.chunk_bytes)
            inner = replace(inner, chunks=[data[i : i + size] for i in range(0, len(data), size)])
        return replace(inner, drip_s=reply.delay_s)
    if isinstance(reply, DropReply):
        inner = render(reply.reply or DEFAULT_DROPPED, model, stream=stream)
        return replace(inner, drop_after=max(0, reply.after_bytes))
    if isinstance(reply, MalformedReply):
        if stream and reply.status == 200:
            return Wire.sse([(event, reply.body)])
        return Wire(reply.status, {"Content-Type": "application/json"}, [reply.body.encode()])
    return None


def body_size(wire: Wire) -> int:
    """Bytes in the wire's body (SSE text, without the chunked-encoding framing)."""
    return sum(len(c) for c in wire.chunks)


# -- OpenAI Chat Completions -------------------------------------------------------------------


def _pieces(text: str, n: int = 3) -> list[str]:
    """Split text into up to ``n`` stream deltas."""
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _args_text(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _openai_usage(usage: TokenUsage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cached_read, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def render_openai(reply: Reply, model: str, *, stream: bool) -> Wire:
    """Render a reply as an OpenAI Chat Completions response."""
    faulty = _render_fault(reply, model, stream=stream, render=render_openai, event=None)
    if faulty is not None:
        return faulty
    assert isinstance(reply, TextReply | ToolCallReply | ErrorReply)
    if isinstance(reply, ErrorReply):
        return _openai_error(reply)
    ident, created = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())
    text = reply.text if isinstance(reply, TextReply) else None
    calls: list[dict[str, Any]] = [
        {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": n, "arguments": _args_text(a)},
        }
        for n, a in (reply.calls if isinstance(reply, ToolCallReply) else [])
    ]
    finish = reply.finish
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        body = {
            "id": ident,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [choice],
            "usage": _openai_usage(reply.usage),
        }
        return Wire.json(200, body)

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [choice],
        }

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    events += [(None, chunk({"content": piece})) for piece in (_pieces(text) if text else [])]
    for index, call in enumerate(calls):
        head = {"index": index, "id": call["id"], "type": "function"}
        events.append((None, chunk({"tool_calls": [{**head, "function": {"name": call["function"]["name"]}}]})))
        for piece in _pieces(call["function"]["arguments"], 2):
            events.append((None, chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})))
    events.append((None, chunk({}, finish)))
    usage_chunk = {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [],
    }
    events.append((None, {**usage_chunk, "usage": _openai_usage(reply.usage)}))
    events.append((None, "[DONE]"))
    return Wire.sse(events)


# -- Anthropic Messages ------------------------------------------------------------------------


def _anthropic_usage(usage: TokenUsage, output: int) -> dict[str, Any]:
    return {
        "input_tokens": max(0, usage.input - usage.cached_read - usage.cache_write),
        "cache_read_input_tokens": usage.cached_read,
        "cache_creation_input_tokens": usage.cache_write,
        "output_tokens": output,
    }


def _tool_input(args: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(args, dict):
        return args
    try:
        parsed = json.loads(args)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def render_anthropic(reply: Reply, model: str, *, stream: bool) -> Wire:
    """Render a reply as an Anthropic Messages response."""
    faulty = _render_fault(reply, model, stream=stream, render=render_anthropic, event="message_start")
    if faulty is not None:
        return faulty
    assert isinstance(reply, TextReply | ToolCallReply | ErrorReply)
    if isinstance(reply, ErrorReply):
        return _anthropic_error(reply)
    ident = f"msg_{uuid.uuid4().hex[:12]}"
    blocks: list[dict[str, Any]] = []
    raw_args: list[str] = []
    if isinstance(reply, TextReply):
        blocks.append({"type": "text", "text": reply.text})
        raw_args.append("")
        stop_reason = "end_turn" if reply.finish == "stop" else "max_tokens"
    else:
        for name, args in reply.calls:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{uuid.uuid4().hex[:12]}",
                    "name": name,
                    "input": _tool_input(args),
                }
            )
            raw_args.append(_args_text(args))
        stop_reason = "tool_use" if reply.finish == "tool_calls" else "max_tokens"
    message = {"id": ident, "type": "message", "role": "assistant", "model": model, "stop_sequence": None}
    if not stream:
        body = {
            **message,
            "content": blocks,
            "stop_reason": stop_reason,
            "usage": _anthropic_usage(reply.usage, reply.usage.output),
        }
        return Wire.json(200, body)

    start: dict[str, Any] = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": _anthropic_usage(reply.usage, 1),
    }
    events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": start})]
    for index, (block, args) in enumerate(zip(blocks, raw_args, strict=True)):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
        else:
            opening = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in _pieces(args, 2)]
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
        )
        events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    final_usage = _anthropic_usage(reply.usage, reply.usage.output)
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": final_usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return Wire.sse(events)


# -- seeded random faults ----------------------------------------------------------------------

ReplySource = Callable[[int, str | None], Reply]
"""Where replies come from: ``(request index for this model, 0-based; model name) -> Reply``."""

FaultMaker = Reply | Callable[[Reply], Reply]
"""A fault: a fixed reply, or a function of the healthy reply (slow drip of it, drop in it...)."""


def truncated(reply: Reply) -> Reply:
    """``reply`` cut off at max tokens: text ends ``finish='length'``, tool arguments are cut in half."""
    if isinstance(reply, TextReply):
        return replace(reply, text=reply.text[: max(1, len(reply.text) // 2)], finish="length")
    if isinstance(reply, ToolCallReply):
        calls = [(name, _args_text(args)[: max(1, len(_args_text(args)) // 2)]) for name, args in reply.calls]
        return replace(reply, calls=list(calls), finish="length")
    return reply


def default_faults(hang_s: float = 30.0, drip_s: float = 0.05, drop_after: int = 24) -> dict[str, FaultMaker]:
    """The fault menu ``RandomFaults`` draws from unless given its own."""
    return {
        "rate_limited": ErrorReply(429, retry_after="1"),
        "quota": ErrorReply(429, code="insufficient_quota"),
        "server_error": ErrorReply(500),
        "bad_gateway": ErrorReply(502),
        "unavailable": ErrorReply(503),
        "overloaded": ErrorReply(529),
        "hang": HangReply(hang_s),
        "slow": lambda healthy: SlowDripReply(healthy, drip_s),
        "drop": lambda healthy: DropReply(drop_after, healthy),
        "malformed": MalformedReply(),
        "truncated": truncated,
    }


class RandomFaults:
    """A seeded random mix of faults, usable as a reply source (``server.script_source``).

    ``rates`` maps fault names (keys of ``faults``, by default ``default_faults()``) to the
    chance of that fault on any one request; the rest get ``healthy`` (a reply, or a
    ``ReplySource`` for per-model or per-request content). The draw for a request depends only
    on the seed, the model name and the request's index for that model, so the same requests
    per model, in the same order, always meet the same faults, however requests to different
    models interleave. ``history`` lists ``(model, index, fault name or 'ok')`` as served.
    """

    def __init__(
        self,
        seed: int | str,
        rates: Mapping[str, float],
        healthy: Reply | ReplySource,
        faults: Mapping[str, FaultMaker] | None = None,
    ) -> None:
        self.seed = seed
        self.faults = dict(default_faults() if faults is None else faults)
        unknown = sorted(set(rates) - set(self.faults))
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; known: {sorted(self.faults)}")
        if any(not 0.0 <= r <= 1.0 for r in rates.values()) or sum(rates.values()) > 1.0 + 1e-9:
            raise ValueError("fault rates must be within 0..1 and add up to at most 1")
        self.rates = dict(rates)
        self.healthy = healthy
        self.history: list[tuple[str | None, int, str]] = []
        self._lock = threading.Lock()

    def choose(self, index: int, model: str | None) -> str:
        """The fault name (or ``'ok'``) for request ``index`` of ``model``; no side effects."""
        draw = random.Random(f"{self.seed}/{model}/{index}").random()
        edge = 0.0
        for name in sorted(self.rates):
            edge += self.rates[name]
            if draw < edge:
                return name
        return "ok"

    def healthy_reply(self, index: int, model: str | None) -> Reply:
        return self.healthy(index, model) if callable(self.healthy) else self.healthy

    def __call__(self, index: int, model: str | None) -> Reply:
        name = self.choose(index, model)
        with self._lock:
            self.history.append((model, index, name))
        healthy = self.healthy_reply(index, model)
        if name == "ok":
            return healthy
        fault = self.faults[name]
        return fault(healthy) if callable(fault) else fault

    def counts(self) -> dict[str, int]:
        """How many requests met each fault (and ``'ok'``) so far."""
        with self._lock:
            names = [name for _, _, name in self.history]
        return {name: names.count(name) for name in sorted(set(names))}
