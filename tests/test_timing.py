"""tests/timing.py: the wall-clock bound of a timing test allows a busy machine and still tells bounded from hung."""

from __future__ import annotations

import time

import pytest

from tests import timing
from tests.timing import BUSY_S, FOREVER, bounded, limit


def test_the_bound_is_the_budget_and_what_a_busy_machine_adds_and_never_reaches_the_hang() -> None:
    assert limit(2.0, hung_s=30) == 2.0 + BUSY_S
    assert limit(0.5, hung_s=FOREVER) == 0.5 + BUSY_S
    with pytest.raises(ValueError, match="cannot tell a 2 s budget from a 5 s hang"):
        limit(2.0, hung_s=5)  # the test could not fail: widen the fake's stall


def test_a_block_past_its_bound_fails_and_says_what_it_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing, "BUSY_S", 0.0)
    with (
        pytest.raises(AssertionError, match=r"the fetch took 0\.\d s: its budget is 0\.01 s"),
        bounded(0.01, hung_s=30, what="the fetch"),
    ):
        time.sleep(0.05)
    with bounded(1.0, hung_s=30) as watch:
        pass
    assert watch.seconds > 0  # its figure, for a message or a print
