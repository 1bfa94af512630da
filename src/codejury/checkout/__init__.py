"""The head commit's tree wherever a review runs: a CI job's checkout (``ci``), the repository cache
(``cache``), the changed files through the forge's API (``api_files``); ``head`` picks among them."""

from __future__ import annotations

from codejury.checkout.ci import HeadSide, open_head_side

__all__ = ["HeadSide", "open_head_side"]
