"""Every forge request's retries: an ``httpx2`` transport wrapper under the one ``RetryPolicy`` (``codejury.retrying``).

Both forge clients (``gitlab.api``, ``github.api``) send through ``RetryingTransport``, which
decides once, from the request alone, whether it may be sent again:

- **Safe to repeat**: ``GET``, ``HEAD``, ``OPTIONS``, ``PUT`` and ``DELETE`` (idempotent, RFC 9110),
  and a request the client marks with ``SAFE_TO_RETRY`` (a GraphQL query, a ``PATCH`` that
  replaces a comment's whole body). Retried on a network error, a timeout, a 5xx and a rate limit.
- **Everything else** (a ``POST`` that creates a comment, a review, a check run, an approval; a
  ``PATCH`` that appends annotations): retried only when the forge certainly did not act on
  it: the connection was never made (``ConnectError``, ``ConnectTimeout``, ``PoolTimeout``), or
  the answer says the request was not handled: a rate limit (429, or GitHub's 403 rate limit)
  or 503 ("currently unable to handle the request", RFC 9110). Any other 5xx (a 502 or 504 from
  a proxy whose upstream may have finished) or a timeout after the request went out may mean
  it was applied, so it is not sent again: the client raises
  ``ForgeUnavailable`` naming what was already posted, and a re-run completes the review without
  duplicates, because every comment carries a marker the next run finds (``markers``).

Waits: a rate limit waits what the forge asks (``Retry-After`` in seconds or as an HTTP date,
else the reset time of an exhausted quota: ``x-ratelimit-reset`` / ``ratelimit-reset``, else
``RetryPolicy.unhinted_limit_wait_s``, else the backoff); anything else backs off exponentially.
A wait longer than ``max_wait_s`` is not waited at all: the request fails at once rather than
stall a CI job. When the attempts end, the last answer is returned (or the last network error
raised) and ``RetryLog`` tells the client why, for its error message.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx2
from tenacity import retry_if_exception, retry_if_result

from codejury.retrying import Hint, RetryPolicy, Sleep, retry_after_s
from codejury.tls import tls_context

__all__ = [
    "RETRY_LOG",
    "SAFE_TO_RETRY",
    "RetryLog",
    "RetryPolicy",
    "RetryingTransport",
    "Sleep",
    "asked_wait_s",
    "rate_limited",
    "safe_to_retry",
    "unavailable_reason",
]

SAFE_TO_RETRY = "codejury.safe_to_retry"
"""Request extension: ``True`` marks a request that may be sent twice with no harm."""
RETRY_LOG = "codejury.retry_log"
"""Request extension: a ``RetryLog`` the transport fills in."""
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
NOT_HANDLED = 503
"""The one 5xx that says the request was not handled (RFC 9110 15.6.4): any request may be retried."""
NOT_SENT = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout)
"""Errors raised before the request reached the forge: any request may be retried after them."""


@dataclass
class RetryLog:
    """What the transport did with one request, for the client's error message."""

    attempts: int = 0
    safe: bool = False
    """Whether the request could be repeated after it was sent (see the module docstring)."""
    refused_wait_s: float | None = None
    """The wait the forge asked for that was longer than ``max_wait_s`` (then no retry), or None."""
    max_wait_s: float = 0.0


def safe_to_retry(request: httpx2.Request) -> bool:
    """Whether ``request`` may be sent again after it reached the forge."""
    return request.method.upper() in IDEMPOTENT_METHODS or request.extensions.get(SAFE_TO_RETRY) is True


def rate_limited(response: httpx2.Response) -> bool:
    """A 429, or a 403 that is a rate limit (GitHub: quota exhausted, or "secondary rate limit" in the body)."""
    if response.status_code == 429:
        return True
    if response.status_code != 403:
        return False
    remaining = response.headers.get("x-ratelimit-remaining") or response.headers.get("ratelimit-remaining")
    return remaining == "0" or "rate limit" in response.text.lower()


def asked_wait_s(headers: httpx2.Headers, now: float) -> float | None:
    """The wait a rate-limited answer asks for, in seconds, or None when it names none.

    ``Retry-After`` (seconds or an HTTP date), else the reset time (epoch seconds, plus one) of a
    quota whose ``x-ratelimit-remaining`` / ``ratelimit-remaining`` is 0.
    """
    asked = retry_after_s(headers, now)
    if asked is not None:
        return asked
    for prefix in ("x-ratelimit-", "ratelimit-"):
        reset = headers.get(prefix + "reset", "").strip()
        if headers.get(prefix + "remaining") == "0" and reset:
            try:
                return max(0.0, float(reset) - now) + 1.0
            except ValueError:
                return None
    return None


class RetryingTransport(httpx2.AsyncBaseTransport):
    """Sends through ``inner`` and retries what ``RetryPolicy`` and the request's safety allow."""

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport | None = None,
        policy: RetryPolicy | None = None,
        *,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._inner = inner or httpx2.AsyncHTTPTransport(verify=tls_context())
        self._policy = policy or RetryPolicy()
        self._sleep = sleep
        self._clock = clock

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        found = request.extensions.get(RETRY_LOG)
        log = found if isinstance(found, RetryLog) else RetryLog()
        log.safe = safe_to_retry(request)
        log.max_wait_s = self._policy.max_wait_s

        def retry_error(exc: BaseException) -> bool:
            return isinstance(exc, NOT_SENT) or (log.safe and isinstance(exc, httpx2.TransportError))

        def retry_answer(response: httpx2.Response) -> bool:
            status = response.status_code
            return rate_limited(response) or status == NOT_HANDLED or (log.safe and status >= 500)

        def hint(response: httpx2.Response) -> Hint:
            if not rate_limited(response):
                return Hint()
            return Hint(asked_wait_s(response.headers, self._clock()), rate_limited=True)

        def refused(wait_s: float) -> None:
            log.refused_wait_s = wait_s

        async def send() -> httpx2.Response:
            log.attempts += 1
            response = await self._inner.handle_async_request(request)
            if response.status_code >= 400:
                await response.aread()  # an answer that may be dropped for a retry must not hold its connection
            return response

        retrying = self._policy.retrying(
            retry_if_exception(retry_error) | retry_if_result(retry_answer),
            hint=hint,
            sleep=self._sleep,
            refused=refused,
        )
        response: httpx2.Response = await retrying(send)
        return response


def unavailable_reason(log: RetryLog, *, status: int | None = None, error: BaseException | None = None) -> str:
    """Why the attempts ended, for a ``ForgeUnavailable`` message: the answer's ``status`` or the network ``error``."""
    if log.refused_wait_s is not None:
        return f"asked to wait {log.refused_wait_s:.0f} s, longer than {log.max_wait_s:g} s: not waited"
    answered = status is not None and status >= 500 and status != NOT_HANDLED
    applied = answered or (error is not None and not isinstance(error, NOT_SENT))
    if not log.safe and applied:
        return "not retried: the request may have been applied"
    return f"still failing after {log.attempts} attempt{'s' if log.attempts != 1 else ''}"
