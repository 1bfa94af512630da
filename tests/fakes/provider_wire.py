"""Scripted replies and how each vendor puts them on the wire (JSON bodies and SSE streams)."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
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
    """An HTTP error; ``body`` None means the vendor's usual error JSON for ``status``."""

    status: int
    body: dict[str, Any] | None = None
    retry_after: str | None = None
    message: str | None = None


Reply = TextReply | ToolCallReply | ErrorReply


@dataclass(frozen=True)
class Wire:
    """What goes back: status, headers and body chunks (several chunks when streamed)."""

    status: int
    headers: dict[str, str]
    chunks: list[bytes]
    streamed: bool = False

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
    503: ("server_error", None, "The service is temporarily unavailable. Please try again later."),
}
_ANTHROPIC_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "The requested resource could not be found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
    500: ("api_error", "An unexpected error has occurred internal to Anthropic's systems."),
    503: ("api_error", "The service is temporarily unavailable."),
    529: ("overloaded_error", "Overloaded"),
}


def _error_headers(reply: ErrorReply) -> dict[str, str]:
    return {"retry-after": reply.retry_after} if reply.retry_after is not None else {}


def _openai_error(reply: ErrorReply) -> Wire:
    if reply.body is not None:
        return Wire.json(reply.status, reply.body, _error_headers(reply))
    kind, code, message = _OPENAI_ERRORS.get(reply.status, ("server_error", None, "Error."))
    body = {"error": {"message": reply.message or message, "type": kind, "param": None, "code": code}}
    return Wire.json(reply.status, body, _error_headers(reply))


def _anthropic_error(reply: ErrorReply) -> Wire:
    if reply.body is not None:
        return Wire.json(reply.status, reply.body, _error_headers(reply))
    kind, message = _ANTHROPIC_ERRORS.get(reply.status, ("api_error", "Error."))
    body = {
        "type": "error",
        "error": {"type": kind, "message": reply.message or message},
        "request_id": "req_fake",
    }
    return Wire.json(reply.status, body, {"request-id": "req_fake", **_error_headers(reply)})


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
