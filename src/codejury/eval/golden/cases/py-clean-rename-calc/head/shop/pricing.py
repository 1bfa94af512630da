"""Price arithmetic for the checkout. All amounts are integer cents."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LineItem:
    sku: str
    unit_price_cents: int
    quantity: int


def order_total_cents(items: list[LineItem], discount_percent: int = 0) -> int:
    """Total of ``items`` in cents after a percentage discount (the discount is rounded half up to a cent)."""
    if not 0 <= discount_percent <= 100:
        raise ValueError(f"discount_percent must be between 0 and 100, got {discount_percent}")
    subtotal = sum(item.unit_price_cents * item.quantity for item in items)
    return subtotal - (subtotal * discount_percent + 50) // 100
