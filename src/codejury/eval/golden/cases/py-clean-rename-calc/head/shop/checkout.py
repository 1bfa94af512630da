"""Builds the order summary shown on the checkout page."""

from __future__ import annotations

from shop.cart import Cart
from shop.pricing import LineItem, order_total_cents


def checkout_summary(cart: Cart) -> dict[str, int]:
    items = [LineItem(line.sku, line.unit_price_cents, line.quantity) for line in cart.lines]
    return {
        "items": sum(item.quantity for item in items),
        "total_cents": order_total_cents(items, cart.discount_percent),
    }
