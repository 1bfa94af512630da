"""Durations in tests: a wall-clock bound that a busy machine cannot break and that still tells bounded from hung.

A test that bounds how long something takes asserts first on what it controls: an injected clock, a call
count, an event awaited, the message that says a timeout fired. Where it also bounds the wall clock, it
allows the budget plus ``BUSY_S``: on a shared CI runner (a load of 6 on 2 cores) a second-long step took
4.4 s, and no product budget is that far out. The bound must stay under what the unbounded case takes (a
stalled peer's stall, a subprocess's kill deadline): ``limit`` refuses one that does not, so widen the fake's
stall rather than shrink the slack. Timing figures worth keeping are printed by ``benchmarks/*.py``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

BUSY_S = 10.0
"""What a busy machine may add to anything a test times (start-up, a thread or event loop waiting its turn)."""

FOREVER = math.inf
"""The unbounded case of a peer that never answers (it stops only when the test ends)."""


def limit(budget_s: float, *, hung_s: float) -> float:
    """The most a test lets a step whose own budget is ``budget_s`` take on the wall clock: ``budget_s + BUSY_S``.

    ``hung_s`` is what the step takes when the budget does not hold (the fake's stall, the kill deadline of a
    process, ``FOREVER``): the bound must stay below it, or the test could not fail."""
    bound = budget_s + BUSY_S
    if not bound < hung_s:
        raise ValueError(f"a bound of {bound:g} s cannot tell a {budget_s:g} s budget from a {hung_s:g} s hang")
    return bound


@dataclass
class Stopwatch:
    """The wall seconds of a ``bounded`` block (its figure, for a message or a print)."""

    started: float
    seconds: float = 0.0


@contextmanager
def bounded(budget_s: float, *, hung_s: float, what: str = "it") -> Iterator[Stopwatch]:
    """Assert that the block ends within ``limit(budget_s, hung_s=hung_s)`` wall seconds."""
    bound = limit(budget_s, hung_s=hung_s)
    watch = Stopwatch(time.monotonic())
    yield watch
    watch.seconds = time.monotonic() - watch.started
    unbounded = "never ends" if hung_s == FOREVER else f"takes {hung_s:g} s"
    assert watch.seconds < bound, (
        f"{what} took {watch.seconds:.1f} s: its budget is {budget_s:g} s, {BUSY_S:g} s more allowed for a busy "
        f"machine; unbounded it {unbounded}"
    )
