"""Break glass: a human comment that says exactly "break glass" forces approval, whatever the review finds."""

from __future__ import annotations

import re

from codejury.change.types import ChangeSet

BREAK_GLASS_RE = re.compile(r"^\s*break\s+glass\s*[.!]?\s*$", re.IGNORECASE | re.MULTILINE)
"""A line of a comment that is only "break glass" (a full stop or an exclamation mark allowed)."""


def break_glass_requested(change: ChangeSet) -> bool:
    """Whether a comment on ``change`` asks for break glass."""
    return any(BREAK_GLASS_RE.search(c) for c in change.meta.comments)
