"""The one retry policy (``codejury.retrying``) with each caller's numbers: the forge clients, a failback
chain's wait on the same model, and the embedded queue's job backoff."""

from __future__ import annotations

import math

from codejury.resilience import ResilienceSettings
from codejury.retrying import Hint, RetryPolicy


def test_a_forge_waits_what_a_rate_limit_asks_else_its_backoff_and_never_longer_than_its_cap() -> None:
    github = RetryPolicy(max_retries=3, backoff_s=1.0, max_wait_s=60.0, unhinted_limit_wait_s=60.0)
    assert [github.wait_s(retry) for retry in range(3)] == [1.0, 2.0, 4.0]
    assert github.wait_s(0, Hint(12.0, rate_limited=True)) == 12.0
    assert github.wait_s(0, Hint(None, rate_limited=True)) == 60.0  # the secondary limit names no wait
    assert github.allows(2, 60.0) and not github.allows(3, 1.0)  # three retries, four attempts in all
    assert not github.allows(0, 61.0)  # a longer wait is not waited at all


def test_a_failback_chain_waits_once_and_only_for_a_short_retry_after() -> None:
    chain = ResilienceSettings().retry
    assert chain.wait_s(0) is None  # nothing asked: fail back rather than guess a wait
    assert chain.allows(0, chain.wait_s(0, Hint(5.0)))
    assert not chain.allows(0, chain.wait_s(0, Hint(31.0)))  # longer than max_retry_after_s: fail back now
    assert not chain.allows(1, 5.0)  # the same model is retried once


def test_the_queue_backs_off_doubling_without_a_cap_for_five_runs() -> None:
    queue = RetryPolicy(max_retries=4, backoff_s=30.0, max_wait_s=math.inf)
    waits = [queue.wait_s(retry) for retry in range(4)]
    assert waits == [30.0, 60.0, 120.0, 240.0]
    assert all(queue.allows(retry, wait) for retry, wait in enumerate(waits))
    assert not queue.allows(4, queue.wait_s(4))  # the fifth run was the last
