"""The one retry policy of both forge clients (``forges.retry.RetryingTransport``), on a mock transport.

What may be sent twice is decided from the request: reads, ``PUT`` and requests marked
``SAFE_TO_RETRY`` are retried on 5xx and network errors; a ``POST`` only when the forge certainly
did not act on it (no connection, a rate limit, a 503). Waits follow the forge's hints.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import httpx2
import pytest

from codejury.forges.retry import (
    RETRY_LOG,
    SAFE_TO_RETRY,
    RetryingTransport,
    RetryLog,
    RetryPolicy,
    asked_wait_s,
    unavailable_reason,
)

NOW = 1_800_000_000.0


class Script:
    """Answers requests from a list: a status (with headers) or an exception; the last one repeats."""

    def __init__(self, *steps: int | tuple[int, dict[str, str]] | type[Exception]) -> None:
        self.steps = list(steps)
        self.calls = 0
        self.waits: list[float] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        if isinstance(step, type):
            raise step("scripted", request=request)  # type: ignore[call-arg]
        status, headers = step if isinstance(step, tuple) else (step, {})
        return httpx2.Response(status, headers=headers, json={"message": "scripted"})

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


async def send(
    script: Script, method: str = "GET", *, safe: bool = False, policy: RetryPolicy | None = None
) -> tuple[httpx2.Response | BaseException, RetryLog]:
    transport = RetryingTransport(
        httpx2.MockTransport(script), policy or RetryPolicy(backoff_s=1.0), sleep=script.sleep, clock=lambda: NOW
    )
    log = RetryLog()
    async with httpx2.AsyncClient(transport=transport) as client:
        try:
            response = await client.request(
                method, "https://forge.test/api", json={"body": "x"}, extensions={RETRY_LOG: log, SAFE_TO_RETRY: safe}
            )
        except httpx2.TransportError as exc:
            return exc, log
    return response, log


# -- which requests are sent again ------------------------------------------------------------------
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
async def test_an_idempotent_request_is_retried_on_a_server_error(method: str) -> None:
    script = Script(502, 500, 200)
    response, log = await send(script, method)
    assert isinstance(response, httpx2.Response) and response.status_code == 200
    assert script.calls == 3 and script.waits == [1.0, 2.0] and log.attempts == 3


@pytest.mark.parametrize("status", [500, 502, 504])
async def test_a_post_answered_with_a_server_error_is_sent_once(status: int) -> None:
    script = Script(status, 200)
    response, log = await send(script, "POST")
    assert isinstance(response, httpx2.Response) and response.status_code == status
    assert script.calls == 1 and script.waits == []
    assert unavailable_reason(log, status=status) == "not retried: the request may have been applied"


@pytest.mark.parametrize("method", ["POST", "PATCH"])
async def test_a_write_that_timed_out_after_sending_is_not_sent_again(method: str) -> None:
    script = Script(httpx2.ReadTimeout, 200)
    error, log = await send(script, method)
    assert isinstance(error, httpx2.ReadTimeout) and script.calls == 1
    assert "may have been applied" in unavailable_reason(log, error=error)


@pytest.mark.parametrize("error", [httpx2.ConnectError, httpx2.ConnectTimeout])
async def test_a_post_that_never_connected_is_retried(error: type[Exception]) -> None:
    script = Script(error, 201)
    response, _ = await send(script, "POST")
    assert isinstance(response, httpx2.Response) and response.status_code == 201 and script.calls == 2


async def test_a_post_answered_503_or_429_is_retried() -> None:
    script = Script(503, (429, {"retry-after": "3"}), 201)
    response, _ = await send(script, "POST")
    assert isinstance(response, httpx2.Response) and response.status_code == 201
    assert script.waits == [1.0, 3.0]


async def test_a_post_marked_safe_is_retried_like_a_read() -> None:
    script = Script(502, httpx2.ReadTimeout, 200)
    response, _ = await send(script, "POST", safe=True)
    assert isinstance(response, httpx2.Response) and response.status_code == 200 and script.calls == 3


async def test_a_refusal_is_returned_at_once() -> None:
    script = Script(422, 200)
    response, _ = await send(script, "GET")
    assert isinstance(response, httpx2.Response) and response.status_code == 422 and script.calls == 1


async def test_the_attempts_end_with_the_last_answer() -> None:
    script = Script(502)
    response, log = await send(script, "GET", policy=RetryPolicy(max_retries=2, backoff_s=0.5))
    assert isinstance(response, httpx2.Response) and response.status_code == 502
    assert script.waits == [0.5, 1.0] and log.attempts == 3
    assert unavailable_reason(log, status=502) == "still failing after 3 attempts"


# -- how long to wait -------------------------------------------------------------------------------
async def test_a_rate_limit_asking_too_long_is_not_waited() -> None:
    script = Script((429, {"retry-after": "3600"}), 200)
    response, log = await send(script, "GET", policy=RetryPolicy(max_wait_s=60))
    assert isinstance(response, httpx2.Response) and response.status_code == 429
    assert script.waits == [] and log.refused_wait_s == 3600
    assert unavailable_reason(log, status=429) == "asked to wait 3600 s, longer than 60 s: not waited"


async def test_github_secondary_rate_limit_is_a_403_that_waits_a_minute() -> None:
    calls: list[str] = []
    waits: list[float] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        calls.append(request.method)
        if len(calls) == 1:
            return httpx2.Response(403, json={"message": "You have exceeded a secondary rate limit."})
        return httpx2.Response(201)

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    policy = RetryPolicy(max_wait_s=120, unhinted_limit_wait_s=60.0)
    transport = RetryingTransport(httpx2.MockTransport(answer), policy, sleep=sleep, clock=lambda: NOW)
    async with httpx2.AsyncClient(transport=transport) as client:
        response = await client.post("https://forge.test/api", json={})
    assert response.status_code == 201 and waits == [60.0] and calls == ["POST", "POST"]


async def test_a_403_that_is_not_a_rate_limit_is_not_retried() -> None:
    script = Script(403, 200)
    response, _ = await send(script, "GET")
    assert isinstance(response, httpx2.Response) and response.status_code == 403 and script.calls == 1


def test_asked_wait_reads_seconds_dates_and_quota_resets() -> None:
    def headers(**values: str) -> httpx2.Headers:
        return httpx2.Headers({k.replace("_", "-"): v for k, v in values.items()})

    in_90_s = format_datetime(datetime.fromtimestamp(NOW + 90, UTC), usegmt=True)
    assert asked_wait_s(headers(retry_after="12"), NOW) == 12.0
    assert asked_wait_s(headers(retry_after=in_90_s), NOW) == pytest.approx(90.0)
    assert asked_wait_s(headers(retry_after="-5"), NOW) == 0.0
    assert asked_wait_s(headers(x_ratelimit_remaining="0", x_ratelimit_reset=str(NOW + 30)), NOW) == 31.0
    assert asked_wait_s(headers(ratelimit_remaining="0", ratelimit_reset=str(NOW + 9)), NOW) == 10.0
    assert asked_wait_s(headers(x_ratelimit_remaining="12", x_ratelimit_reset=str(NOW + 30)), NOW) is None
    assert asked_wait_s(headers(retry_after="soon"), NOW) is None
    assert asked_wait_s(headers(), NOW) is None
