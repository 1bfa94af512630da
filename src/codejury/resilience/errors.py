"""Provider errors sorted into what the resilience layer does about them.

``classify(exc)`` walks the exception and its ``__cause__`` / ``__context__`` chain (pydantic-ai
wraps the SDK error, which wraps the httpx2 error) and answers with one of four kinds:

- ``retryable``: 429 rate limits, 500 / 502 / 503 / 504 / 529, timeouts, dropped connections,
  a 404 model-not-found (a retired model: the previous generation may still answer; Bedrock says it with a 400),
  malformed or empty bodies, a stalled stream, a server certificate no trusted CA signed (said as such).
  The breaker counts it; the chain may wait for Retry-After or fail back to the next model of the family.
- ``quota``: a 429 (or Anthropic's 400) saying the quota, spend limit or credit is exhausted.
  Waiting does not help and another model of the same account will not either: no retry.
- ``fatal``: authentication and permission errors, context overflow, a rejected request,
  cancellation, usage limits, output still invalid after the repair attempt. Another model will
  not fix them.
- ``truncated``: the output hit the token limit. Retried once with a larger budget.

Reasons are one line built from status codes and error codes only, never from request headers,
response bodies or keys.

    CodejuryError
    ├── ModelStalled      a streamed attempt produced no output for ``stall_timeout_s``
    └── ChainExhausted    every model of a failback chain failed or was skipped (retryable)
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import httpx2
from pydantic_ai.exceptions import (
    ContentFilterError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelOverloadedError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelRequestTimeout,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
    OutputTokenLimitExceeded,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)

from codejury.errors import CodejuryError
from codejury.retrying import retry_after_s


class APIStatusError(Protocol):
    """What this module reads of an SDK's (openai, anthropic) HTTP status error."""

    status_code: int
    body: object


ErrorKind = Literal["retryable", "quota", "fatal", "truncated"]

_QUOTA_MARKERS = (
    "insufficient_quota",
    "billing",
    "spend limit",
    "spending limit",
    "credit balance",
    "exceeded your current quota",
)
_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "prompt is too long",
    "maximum context length",
    "context window",
)
# pydantic-ai raises UnexpectedModelBehavior for these when the server's body is unusable.
_MALFORMED_MARKERS = (
    "invalid response from",
    "expected json data",
    "streamed response ended without content",
    "empty model response",
)
_STATUS_NAMES = {
    408: "request timeout",
    409: "conflict",
    429: "rate limited",
    500: "server error",
    502: "bad gateway",
    503: "unavailable",
    504: "gateway timeout",
    529: "overloaded",
}


@dataclass(frozen=True)
class Classified:
    """What an error means for the chain: its kind, a one-line reason, and how long the provider asked to wait."""

    kind: ErrorKind
    reason: str
    retry_after_s: float | None = None


class ModelStalled(CodejuryError):
    """A streamed attempt produced no output for the stall timeout and was killed."""

    def __init__(self, model: str, seconds: float) -> None:
        self.model = model
        self.seconds = seconds
        super().__init__(f"stalled: no output for {seconds:g}s")


class ChainExhausted(CodejuryError):
    """Every model of a failback chain failed with a retryable error or was skipped.

    ``attempts`` lists ``(model, what happened)`` in order; ``last_error`` is the last model's
    own error (also the ``__cause__``), None when every model was skipped.
    """

    def __init__(
        self, attempts: list[tuple[str, str]], last_error: BaseException | None, *, stopped: str | None = None
    ) -> None:
        self.attempts = list(attempts)
        self.last_error = last_error
        self.stopped = stopped
        parts = [f"{model}: {what}" for model, what in attempts]
        if stopped:
            parts.append(stopped)
        super().__init__("no model could answer: " + "; ".join(parts))


def classify(exc: BaseException) -> Classified:
    """Sort an error into retryable / quota / fatal / truncated, with a one-line reason and Retry-After."""
    retry_after = _retry_after(exc)
    untrusted = next((e for e in _walk(exc) if isinstance(e, ssl.SSLCertVerificationError)), None)
    if untrusted is not None:  # said as such, not as a dropped connection: the fix is on this machine
        because = untrusted.verify_message or "certificate verify failed"
        reason = f"TLS certificate not trusted ({because}; a private CA: set SSL_CERT_FILE to its bundle)"
        return Classified("retryable", reason)
    for err in _walk(exc):
        found = _classify_one(err)
        if found is not None:
            kind, reason = found
            return Classified(kind, reason, retry_after if kind == "retryable" else None)
    first = str(exc).splitlines()[0][:120] if str(exc) else ""
    return Classified("fatal", f"{type(exc).__name__}: {first}".rstrip(": "))


def _walk(exc: BaseException) -> Iterator[BaseException]:
    """The exception, then its causes and contexts (and a group's members), each once."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        err = todo.pop(0)
        if id(err) in seen:
            continue
        seen.add(id(err))
        yield err
        if isinstance(err, BaseExceptionGroup):
            todo.extend(err.exceptions)
        for nxt in (err.__cause__, err.__context__):
            if nxt is not None:
                todo.append(nxt)


Kinds = Sequence[tuple[type[BaseException] | tuple[type[BaseException], ...], ErrorKind, str]]
"""Error classes, each with its kind and reason, in the order they are tried (a subclass before its base)."""

_OURS_AND_PYDANTIC_AI: Kinds = (
    (asyncio.CancelledError, "fatal", "cancelled"),
    (UsageLimitExceeded, "fatal", "usage limit exceeded"),
    (OutputTokenLimitExceeded, "truncated", "output cut off at the token limit"),
    (ContentFilterError, "fatal", "blocked by the provider's content filter"),
)
_CATEGORIES: Kinds = (
    (ModelAuthenticationError, "fatal", "authentication failed"),
    (ModelNotFoundError, "retryable", "model not found (retired or misspelt?)"),
    (ModelRequestRejectedError, "fatal", "request rejected"),
    ((ModelRequestTimeout, ModelTimeoutError), "retryable", "timed out"),
    (ModelConnectionError, "retryable", "connection failed or dropped"),
    (ModelOverloadedError, "retryable", "overloaded"),
    (ModelUnavailableError, "retryable", "unavailable"),
    (ModelRateLimitError, "retryable", "rate limited"),
    (ModelServerError, "retryable", "server error"),
)
"""A pydantic-ai error without an HTTP status, by its category."""
_BUILTINS: Kinds = (
    (TimeoutError, "retryable", "timed out"),
    (ConnectionError, "retryable", "connection failed or dropped"),
    ((json.JSONDecodeError, UnicodeDecodeError), "retryable", "malformed response from the server"),
)


def _first_kind(err: BaseException, kinds: Kinds) -> tuple[ErrorKind, str] | None:
    """The kind and reason of the first of ``kinds`` that ``err`` is an instance of, or None."""
    return next(((kind, reason) for types, kind, reason in kinds if isinstance(err, types)), None)


def _classify_one(err: BaseException) -> tuple[ErrorKind, str] | None:
    if isinstance(err, ChainExhausted | ModelStalled):
        return "retryable", str(err)
    if (found := _first_kind(err, _OURS_AND_PYDANTIC_AI)) is not None:
        return found
    if isinstance(err, ModelHTTPError):
        status = err.status_code
        if isinstance(err, ModelQuotaExceededError):
            return "quota", f"quota or spend limit exhausted (HTTP {status})"
        if isinstance(err, ModelContextWindowExceededError):
            return "fatal", f"context length exceeded (HTTP {status})"
        if isinstance(err, ModelNotFoundError):  # Bedrock says so with a 400 ValidationException
            return "retryable", f"model not found ({status}: retired or misspelt?)"
        return _by_status(status, _codes(err), overloaded=isinstance(err, ModelOverloadedError))
    if isinstance(err, ModelAPIError):
        return _by_category(err)
    if isinstance(err, UnexpectedModelBehavior):
        message = err.message.lower()
        if any(m in message for m in _MALFORMED_MARKERS):
            return "retryable", "malformed response from the server"
        first = err.message.splitlines()[0][:120] if err.message else type(err).__name__
        return "fatal", f"invalid output after repair: {first}"
    if isinstance(err, _sdk_errors("APIStatusError")):
        sdk_error: APIStatusError = err  # type: ignore[assignment]  # narrowed by the check above
        return _by_status(sdk_error.status_code, _sdk_codes(sdk_error), overloaded=False)
    if isinstance(err, (*_sdk_errors("APITimeoutError"), httpx2.TimeoutException)):
        return "retryable", "timed out"
    if isinstance(err, _sdk_errors("APIConnectionError")):
        return "retryable", "connection failed or dropped"
    if isinstance(err, _sdk_errors("APIResponseValidationError")):
        return "retryable", "malformed response from the server"
    if isinstance(err, httpx2.HTTPStatusError):
        return _by_status(err.response.status_code, "", overloaded=False)
    if isinstance(err, httpx2.TransportError) or _is_transport_error(err):
        return "retryable", "connection failed or dropped"
    return _first_kind(err, _BUILTINS)


def _by_category(err: ModelAPIError) -> tuple[ErrorKind, str]:
    """A pydantic-ai error without an HTTP status (an error inside a stream, a transport failure, a bad body)."""
    codes = _codes(err)
    if isinstance(err, ModelQuotaExceededError) or _quota(codes):
        return "quota", "quota or spend limit exhausted"
    if isinstance(err, ModelContextWindowExceededError) or any(m in codes for m in _CONTEXT_MARKERS):
        return "fatal", "context length exceeded"
    # Uncategorised: pydantic-ai's "Failed to decode response as JSON", "Expected a JSON response", ...
    return _first_kind(err, _CATEGORIES) or ("retryable", "malformed response from the server")


def _by_status(status: int, codes: str, *, overloaded: bool) -> tuple[ErrorKind, str]:
    """Decide from the HTTP status, and from the error's code/type/message where the status is ambiguous."""
    if status in (400, 402, 403, 429) and _quota(codes):
        return "quota", f"quota or spend limit exhausted (HTTP {status})"
    if status in (400, 413) and any(m in codes for m in _CONTEXT_MARKERS):
        return "fatal", f"context length exceeded (HTTP {status})"
    if status == 401:
        return "fatal", "authentication failed (401)"
    if status == 403:
        return "fatal", "permission denied (403)"
    if status == 404:
        # A retired model: the previous generation of the family may still answer.
        return "retryable", "model not found (404: retired or misspelt?)"
    if overloaded or "overloaded" in codes:
        return "retryable", f"HTTP {status} overloaded"
    if status in _STATUS_NAMES:
        return "retryable", f"HTTP {status} {_STATUS_NAMES[status]}"
    if status >= 500:
        return "retryable", f"HTTP {status} server error"
    return "fatal", f"request rejected (HTTP {status})"


def _quota(codes: str) -> bool:
    return any(m in codes for m in _QUOTA_MARKERS)


def _codes(err: ModelAPIError) -> str:
    """The error's code, type and the provider's error message, lowercased, for marker matching only."""
    parts = [err.provider_error_code or "", err.provider_error_type or "", _body_message(err.body)]
    return " ".join(parts).lower()


def _sdk_errors(name: str) -> tuple[type[BaseException], ...]:
    """The error class ``name`` of each provider SDK this process has imported.

    The SDKs are imported only when a cloud model is built (about a second each at start-up, paid by
    every embedded-model review otherwise); an SDK that was never imported raised nothing.
    """
    return tuple(getattr(sdk, name) for sdk in map(sys.modules.get, ("openai", "anthropic")) if sdk is not None)


def _sdk_codes(err: APIStatusError) -> str:
    parts = [str(getattr(err, "code", "") or ""), str(getattr(err, "type", "") or ""), _body_message(err.body)]
    return " ".join(parts).lower()


def _body_message(body: object) -> str:
    """The ``message`` / ``type`` / ``code`` of an OpenAI- or Anthropic-shaped error body."""
    if not isinstance(body, Mapping):
        return ""
    inner: Any = body.get("error", body)
    if not isinstance(inner, Mapping):
        inner = body
    return " ".join(str(inner.get(k) or "") for k in ("message", "type", "code"))


def _is_transport_error(err: BaseException) -> bool:
    """httpx / httpcore transport errors by class name (httpcore2 and plain httpx when present)."""
    module = type(err).__module__.split(".")[0]
    if module not in ("httpx", "httpx2", "httpcore", "httpcore2", "h11"):
        return False
    names = {cls.__name__ for cls in type(err).__mro__}
    return bool(names & {"TransportError", "NetworkError", "ProtocolError", "RemoteProtocolError", "TimeoutException"})


# -- Retry-After ---------------------------------------------------------------------------------


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the provider asked to wait: pydantic-ai's ``retry_after``, else the response headers in the chain."""
    for err in _walk(exc):
        if isinstance(err, ModelAPIError) and err.retry_after is not None:
            return float(err.retry_after)
        headers = _response_headers(err)
        if headers is not None:
            seconds = retry_after_s(headers, time.time())
            if seconds is not None:
                return seconds
    return None


def _response_headers(err: BaseException) -> Mapping[str, str] | None:
    if isinstance(err, ModelHTTPError):
        return err.headers
    if isinstance(err, (*_sdk_errors("APIStatusError"), httpx2.HTTPStatusError)):
        headers: Mapping[str, str] = err.response.headers  # type: ignore[attr-defined]  # both kinds carry it
        return {k.lower(): v for k, v in headers.items()}
    return None
