"""The head commit's tree wherever a review runs: a CI job's checkout (``ci``)."""

from __future__ import annotations

from codejury.checkout.ci import HeadSide, open_head_side

__all__ = ["HeadSide", "open_head_side"]
