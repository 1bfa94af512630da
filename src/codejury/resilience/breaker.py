"""A circuit breaker per model, shared by every reviewer in the process.

    closed ──(failure_threshold consecutive failures)──► open
    open ──(cooldown_s elapsed; the next allow() is the one probe)──► half_open
    half_open ──(probe succeeds)──► closed
    half_open ──(probe fails)──► open, with a fresh cooldown

While half-open exactly one caller holds the probe; everyone else is refused until it reports.
A probe whose caller never reports (cancelled) is given back by ``release()``, or lapses after
another ``cooldown_s``, so a lost probe cannot wedge the breaker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

BreakerState = Literal["closed", "open", "half_open"]
TransitionListener = Callable[[str, BreakerState, BreakerState], None]


class CircuitBreaker:
    """Closed → open after ``failure_threshold`` consecutive failures → one probe after ``cooldown_s``."""

    def __init__(
        self,
        model: str,
        *,
        failure_threshold: int = 3,
        cooldown_s: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
        on_transition: TransitionListener | None = None,
    ) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        self.model = model
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._on_transition = on_transition
        self._lock = threading.Lock()
        self._state: BreakerState = "closed"
        self._failures = 0
        self._opened_at = 0.0
        self._probe_started: float | None = None

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state

    @property
    def consecutive_failures(self) -> int:
        with self._lock:
            return self._failures

    def allow(self) -> bool:
        """May a request go to this model now? True at most once per cooldown while not closed (the probe)."""
        with self._lock:
            now = self._clock()
            if self._state == "closed":
                return True
            if self._state == "open":
                if now - self._opened_at < self.cooldown_s:
                    return False
                transition = self._move("half_open")
                self._probe_started = now
            elif self._probe_started is None or now - self._probe_started >= self.cooldown_s:
                # Half-open with no probe in flight (given back, or lost): this caller probes.
                self._probe_started = now
                return True
            else:
                return False
        self._notify(transition)
        return True

    def record_success(self) -> None:
        """The model answered: a probe closes the breaker; when closed the failure count starts again."""
        with self._lock:
            self._failures = 0
            if self._state != "half_open":
                return
            self._probe_started = None
            transition = self._move("closed")
        self._notify(transition)

    def record_failure(self) -> None:
        """A retryable failure: count it when closed (open at the threshold); a failed probe reopens."""
        with self._lock:
            if self._state == "open":
                return
            if self._state == "closed":
                self._failures += 1
                if self._failures < self.failure_threshold:
                    return
            self._opened_at = self._clock()
            self._probe_started = None
            transition = self._move("open")
        self._notify(transition)

    def release(self) -> None:
        """The caller's attempt ended saying nothing about the model's health: give a held probe back."""
        with self._lock:
            if self._state == "half_open":
                self._probe_started = None

    def _move(self, new: BreakerState) -> tuple[BreakerState, BreakerState]:
        old, self._state = self._state, new
        return old, new

    def _notify(self, transition: tuple[BreakerState, BreakerState]) -> None:
        # Outside the lock: a listener may look at the breaker.
        if self._on_transition is not None and transition[0] != transition[1]:
            self._on_transition(self.model, *transition)


class BreakerBoard:
    """One breaker per model string, shared by every reviewer in the process."""

    def __init__(
        self,
        *,
        failure_threshold: int = 3,
        cooldown_s: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._breakers: dict[str, CircuitBreaker] = {}
        self._listeners: list[TransitionListener] = []

    def get(self, model: str) -> CircuitBreaker:
        """The breaker of ``model``, created closed on first use."""
        with self._lock:
            breaker = self._breakers.get(model)
            if breaker is None:
                breaker = CircuitBreaker(
                    model,
                    failure_threshold=self.failure_threshold,
                    cooldown_s=self.cooldown_s,
                    clock=self._clock,
                    on_transition=self._emit,
                )
                self._breakers[model] = breaker
            return breaker

    def states(self) -> dict[str, BreakerState]:
        """Every known breaker's state, by model."""
        with self._lock:
            breakers = list(self._breakers.values())
        return {b.model: b.state for b in breakers}

    def add_listener(self, fn: TransitionListener) -> None:
        """Send every transition ``(model, old, new)`` to ``fn`` (the event log)."""
        with self._lock:
            self._listeners.append(fn)

    def remove_listener(self, fn: TransitionListener) -> None:
        with self._lock:
            if fn in self._listeners:
                self._listeners.remove(fn)

    def reset(self) -> None:
        """Forget every breaker (tests, benchmarks); listeners stay."""
        with self._lock:
            self._breakers.clear()

    def _emit(self, model: str, old: BreakerState, new: BreakerState) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for fn in listeners:
            fn(model, old, new)


class BreakerBoards:
    """The process's boards, one per breaker settings set.

    Reviews whose settings agree share a board, so an outage seen by one review opens the breaker
    for the next; a review with other settings (a service runs many) gets its own board and never
    rewrites the thresholds another review relies on.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._boards: dict[tuple[int, float], BreakerBoard] = {}

    def board_for(self, failure_threshold: int, cooldown_s: float) -> BreakerBoard:
        key = (failure_threshold, cooldown_s)
        with self._lock:
            board = self._boards.get(key)
            if board is None:
                board = BreakerBoard(failure_threshold=failure_threshold, cooldown_s=cooldown_s, clock=self._clock)
                self._boards[key] = board
            return board

    def reset(self) -> None:
        """Forget every board (tests, benchmarks)."""
        with self._lock:
            self._boards.clear()


BOARDS = BreakerBoards()
"""The process-wide boards, by settings."""
