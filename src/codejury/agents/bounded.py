"""Bounded tool work: a time budget per call, lines read in capped pieces, regexes with a timeout.

Every tool call gets a ``Budget``: a deadline (its own time limit, never later than the
deadline of the agent run that called it, passed in explicitly) and a stop flag that the agent
sets when the call is cancelled (a reviewer or overall timeout). Tools check it between files
and lines, so work left in a worker thread after a cancellation ends at its next check instead
of running on.

Regular expressions run on the ``regex`` module (Python's ``re`` syntax, ``VERSION0``) with a
``timeout`` on every search and the GIL released while it runs: a catastrophic pattern such as
``^(a|aa)+$`` against a long line stops after at most ``_SEARCH_SLICE_S`` and is reported to the
model, and the event loop (timeouts, heartbeats) keeps running meanwhile. ``google-re2`` would
give linear time by construction, but its syntax lacks lookaround and backreferences; models
are told to write Python regular expressions, so the same syntax with a timeout serves them better.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import BinaryIO

import regex

_SEARCH_SLICE_S = 1.0
"""The longest one search of one line may take; legitimate patterns take microseconds."""
_MAX_PATTERN_CHARS = 1_000
_SKIP_CHUNK = 1 << 16


class Budget:
    """Time left to one tool call, and whether it was cancelled."""

    def __init__(self, seconds: float, *, outer_deadline: float | None = None) -> None:
        deadline = time.monotonic() + seconds
        self.deadline = deadline if outer_deadline is None else min(deadline, outer_deadline)
        self._stopped = threading.Event()

    def stop(self) -> None:
        """Ask the work to end at its next check (the call was cancelled)."""
        self._stopped.set()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def left(self) -> float:
        """Seconds left (0 once stopped or past the deadline)."""
        return 0.0 if self._stopped.is_set() else max(0.0, self.deadline - time.monotonic())

    @property
    def spent(self) -> bool:
        return self.left() <= 0.0


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def capped_lines(fh: BinaryIO, budget: Budget, *, max_line_bytes: int) -> Iterator[tuple[bytes, bool]]:
    """Lines of ``fh`` as (at most ``max_line_bytes`` bytes, whether the line was longer).

    The rest of a long line is skipped in fixed pieces, so a 200 MB one-line file costs
    ``max_line_bytes`` of memory, not 200 MB; reading stops when the budget is spent.
    """
    while not budget.spent:
        line = fh.readline(max_line_bytes)
        if not line:
            return
        cut = False
        if not line.endswith(b"\n") and len(line) >= max_line_bytes:
            while not budget.spent:
                rest = fh.readline(_SKIP_CHUNK)
                if not rest:
                    break
                cut = cut or rest != b"\n"
                if rest.endswith(b"\n"):
                    break
        yield line, cut


class Pattern:
    """A compiled model-given regular expression whose every search is bounded in time."""

    def __init__(self, compiled: regex.Pattern[str]) -> None:
        self._compiled = compiled
        self.pattern = compiled.pattern

    @classmethod
    def compile(cls, pattern: str) -> Pattern | str:
        """The pattern, or an ``error: ...`` string the model can act on."""
        if len(pattern) > _MAX_PATTERN_CHARS:
            return f"error: pattern too long ({len(pattern)} characters; at most {_MAX_PATTERN_CHARS})"
        try:
            return cls(regex.compile(pattern, flags=regex.VERSION0))
        except (regex.error, RecursionError, OverflowError, ValueError) as exc:
            return f"error: invalid regular expression {pattern!r}: {exc}"

    def search(self, text: str, budget: Budget) -> bool | None:
        """Whether ``text`` matches; None when the search ran out of time (or the budget did)."""
        left = budget.left()
        if left <= 0.0:
            return None
        try:
            return self._compiled.search(text, concurrent=True, timeout=min(left, _SEARCH_SLICE_S)) is not None
        except TimeoutError:
            return None
