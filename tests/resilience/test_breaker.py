"""The per-model circuit breaker: closed → open → one probe → closed or open again."""

from __future__ import annotations

import threading

import pytest

from codejury.resilience.breaker import BreakerBoard, BreakerState, CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


Transition = tuple[str, BreakerState, BreakerState]


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _opened(clock: Clock, seen: list[Transition] | None = None) -> CircuitBreaker:
    breaker = CircuitBreaker(
        "openai:gpt-5",
        failure_threshold=3,
        cooldown_s=120,
        clock=clock,
        on_transition=(lambda *t: seen.append(t)) if seen is not None else None,
    )
    for _ in range(3):
        assert breaker.allow()
        breaker.record_failure()
    return breaker


def test_opens_after_threshold_consecutive_failures(clock: Clock) -> None:
    breaker = CircuitBreaker("m", failure_threshold=3, clock=clock)
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.consecutive_failures == 2
    assert breaker.allow()
    breaker.record_failure()
    assert breaker.state == "open"


def test_a_success_resets_the_failure_count(clock: Clock) -> None:
    breaker = CircuitBreaker("m", failure_threshold=3, clock=clock)
    breaker.record_failure()
    breaker.record_failure()
    breaker.record_success()
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state == "closed"


def test_refuses_while_open_until_the_cooldown_ends(clock: Clock) -> None:
    breaker = _opened(clock)
    assert not breaker.allow()
    clock.now += 119.9
    assert not breaker.allow()
    clock.now += 0.1
    assert breaker.allow()
    assert breaker.state == "half_open"


def test_exactly_one_probe_after_the_cooldown(clock: Clock) -> None:
    breaker = _opened(clock)
    clock.now += 120
    answers = [breaker.allow() for _ in range(5)]
    assert answers == [True, False, False, False, False]


def test_concurrent_callers_get_one_probe(clock: Clock) -> None:
    breaker = _opened(clock)
    clock.now += 120
    start = threading.Barrier(8)
    answers: list[bool] = []

    def call() -> None:
        start.wait()
        answers.append(breaker.allow())

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answers) == [False] * 7 + [True]


def test_probe_success_closes(clock: Clock) -> None:
    breaker = _opened(clock)
    clock.now += 120
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state == "closed"
    assert all(breaker.allow() for _ in range(3))


def test_probe_failure_reopens_with_a_fresh_cooldown(clock: Clock) -> None:
    breaker = _opened(clock)
    clock.now += 120
    assert breaker.allow()
    clock.now += 30
    breaker.record_failure()
    assert breaker.state == "open"
    clock.now += 119
    assert not breaker.allow()
    clock.now += 1
    assert breaker.allow()


def test_a_released_probe_lets_the_next_caller_probe(clock: Clock) -> None:
    breaker = _opened(clock)
    clock.now += 120
    assert breaker.allow()
    assert not breaker.allow()
    breaker.release()
    assert breaker.allow()
    assert breaker.state == "half_open"


def test_a_lost_probe_lapses_after_another_cooldown(clock: Clock) -> None:
    breaker = _opened(clock)
    clock.now += 120
    assert breaker.allow()
    clock.now += 119
    assert not breaker.allow()
    clock.now += 1
    assert breaker.allow()


def test_transitions_reach_the_callback(clock: Clock) -> None:
    seen: list[Transition] = []
    breaker = _opened(clock, seen)
    clock.now += 120
    breaker.allow()
    breaker.record_failure()
    clock.now += 120
    breaker.allow()
    breaker.record_success()
    assert seen == [
        ("openai:gpt-5", "closed", "open"),
        ("openai:gpt-5", "open", "half_open"),
        ("openai:gpt-5", "half_open", "open"),
        ("openai:gpt-5", "open", "half_open"),
        ("openai:gpt-5", "half_open", "closed"),
    ]


def test_board_shares_one_breaker_per_model_and_fans_out_transitions(clock: Clock) -> None:
    board = BreakerBoard(failure_threshold=2, cooldown_s=10, clock=clock)
    first: list[Transition] = []
    second: list[Transition] = []

    def to_second(model: str, old: BreakerState, new: BreakerState) -> None:
        second.append((model, old, new))

    board.add_listener(lambda *t: first.append(t))
    board.add_listener(to_second)
    assert board.get("a:x") is board.get("a:x")
    assert board.get("a:x") is not board.get("a:y")
    board.get("a:x").record_failure()
    board.get("a:x").record_failure()
    assert first == second == [("a:x", "closed", "open")]
    assert board.states() == {"a:x": "open", "a:y": "closed"}
    board.remove_listener(to_second)
    clock.now += 10
    assert board.get("a:x").allow()
    assert first[-1] == ("a:x", "open", "half_open")
    assert len(second) == 1


def test_board_settings_apply_to_new_breakers(clock: Clock) -> None:
    board = BreakerBoard(failure_threshold=1, cooldown_s=5, clock=clock)
    board.get("m").record_failure()
    assert not board.get("m").allow()
    clock.now += 5
    assert board.get("m").allow()
    board.reset()
    assert board.get("m").state == "closed"
