"""Orders: listing and pricing."""

import sqlite3

TAX_RATE = 0.2


def order_total(items: list[dict[str, int]]) -> int:
    """Return the order total in cents, including tax."""
    subtotal = sum(i["price_cents"] * i["qty"] for i in items)
    return round(subtotal * (1 + TAX_RATE))


def list_orders(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """Return all orders, newest first."""
    return conn.execute("SELECT * FROM orders ORDER BY created_at DESC").fetchall()
