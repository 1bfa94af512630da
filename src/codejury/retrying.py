"""The one retry policy: how many retries, how long to wait, and the one ``Retry-After`` parser.

Three callers share ``RetryPolicy``, each with its own numbers:

- the forge clients' transport (``forges.retry.RetryingTransport``): up to 3 retries, backing off
  exponentially from 0.5 s, waiting what a rate limit asks, never longer than 30 s; tenacity runs
  the attempts (``RetryPolicy.retrying``);
- a model's failback chain (``resilience.chain``): one wait on the same model, only when the
  provider asked for one (``backoff_s=None``) and for no longer than ``max_retry_after_s``; any
  other retryable error fails back to the chain's next model instead;
- the embedded job queue (``service.local_queue``): a job that met an unavailable forge runs again
  after ``backoff_s * 2**retry``, at most ``max_attempts`` runs in all.

``retry_after_s`` reads what an answer asks: ``retry-after-ms`` (milliseconds, OpenAI), else
``Retry-After`` in seconds or as an HTTP date (RFC 9110 10.2.3).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any

from tenacity import AsyncRetrying, RetryCallState
from tenacity.retry import retry_base

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Hint:
    """What an answer says about waiting: the wait it asks for (None: none named), and whether it is a rate limit."""

    asked_s: float | None = None
    rate_limited: bool = False


@dataclass(frozen=True)
class RetryPolicy:
    """How many retries and how long to wait before each."""

    max_retries: int = 3
    backoff_s: float | None = 0.5
    """The first unhinted wait, doubled for each retry; None: retry only when the other side names a wait."""
    max_wait_s: float = 30.0
    """A longer wait is not waited at all: the attempts end (a CI job is not stalled)."""
    unhinted_limit_wait_s: float | None = None
    """The wait for a rate limit that names none (GitHub's secondary limit: 60 s); None: the backoff."""

    def backoff(self, retry: int) -> float | None:
        """The wait before retry number ``retry`` (0-based) when nothing was asked: ``backoff_s * 2**retry``, capped."""
        if self.backoff_s is None:
            return None
        return float(min(self.backoff_s * 2**retry, self.max_wait_s))

    def wait_s(self, retry: int, hint: Hint = Hint()) -> float | None:  # noqa: B008 - frozen
        """The wait before retry number ``retry``: what ``hint`` asks, else the unhinted rate-limit wait, else the
        backoff; None when this policy waits only when asked and nothing was."""
        if hint.asked_s is not None:
            return hint.asked_s
        if hint.rate_limited and self.unhinted_limit_wait_s is not None:
            return self.unhinted_limit_wait_s
        return self.backoff(retry)

    def allows(self, retries_done: int, wait_s: float | None) -> bool:
        """Whether another attempt may follow ``retries_done`` retries, after ``wait_s``."""
        return retries_done < self.max_retries and wait_s is not None and wait_s <= self.max_wait_s

    def retrying(
        self,
        retry: retry_base,
        *,
        hint: Callable[[Any], Hint],
        sleep: Sleep,
        refused: Callable[[float], None] = lambda wait_s: None,
    ) -> AsyncRetrying:
        """tenacity's attempts under this policy: retried while ``retry`` says so and the policy allows;
        ``hint(result)`` reads an answer's wishes (an error waits the backoff); ``refused`` hears of a wait
        longer than ``max_wait_s`` that ended the attempts. When they end, the last answer is returned (or
        the last error raised)."""

        def wait(state: RetryCallState) -> float:
            outcome = state.outcome
            retry_index = state.attempt_number - 1
            found = Hint() if outcome is None or outcome.failed else hint(outcome.result())
            chosen = self.wait_s(retry_index, found)
            return 0.0 if chosen is None else chosen

        def stop(state: RetryCallState) -> bool:
            if state.attempt_number > self.max_retries:
                return True
            chosen = wait(state)
            if chosen > self.max_wait_s:
                refused(chosen)
                return True
            return False

        return AsyncRetrying(retry=retry, wait=wait, stop=stop, sleep=sleep, retry_error_callback=_last_outcome)


def _last_outcome(state: RetryCallState) -> Any:
    """When the attempts end: the last answer, or the last error raised again."""
    if state.outcome is None:  # pragma: no cover - tenacity always sets it before giving up
        raise RuntimeError("no attempt was made")
    return state.outcome.result()


def retry_after_s(headers: Mapping[str, str], now: float) -> float | None:
    """The wait an answer's headers ask for, in seconds from ``now`` (epoch seconds); None when they name none.

    ``retry-after-ms``, else ``Retry-After`` (seconds, or an HTTP date); header names in any case;
    a past date or a negative number is no wait (0), a value that is neither is none (None).
    """
    lowered = {k.lower(): v.strip() for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        ms = _number(raw_ms)
        if ms is not None:
            return max(0.0, ms / 1000)
    raw = lowered.get("retry-after")
    if not raw:
        return None
    seconds = _number(raw)
    if seconds is not None:
        return max(0.0, seconds)
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def _number(text: str) -> float | None:
    """``text`` as a finite number, or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
