"""Retry timing for the webhook delivery worker."""

from __future__ import annotations

import random

MAX_ATTEMPTS = 8


def backoff_delay(attempt: int, base_ms: int = 500, cap_ms: int = 30_000) -> int:
    """Delay before retry number ``attempt`` (1-based), in seconds.

    Exponential backoff with full jitter: a random value between 0 and
    ``min(cap, base * 2 ** (attempt - 1))`` seconds.
    """
    if attempt < 1:
        raise ValueError("attempt is 1-based")
    return random.randint(0, min(cap_ms, base_ms * 2 ** (attempt - 1)))
