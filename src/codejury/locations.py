"""Where something sits in a change: a path and a new-side line range, and when two such places overlap.

One rule for "the same place" serves grounding (an analyzer hit backs a finding on its lines) and
the eval's location scoring (a finding matches an expected comment).
"""

from __future__ import annotations

from typing import Protocol

SLACK = 1
"""Lines of slack: ranges that touch or sit one line apart count as the same place."""


class Located(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...


def overlaps(a: Located, b: Located, slack: int = SLACK) -> bool:
    """Same path, line ranges overlapping with ``slack`` lines to spare."""
    return a.path == b.path and a.start_line <= b.end_line + slack and b.start_line <= a.end_line + slack
