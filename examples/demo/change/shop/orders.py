"""Orders: listing and pricing."""

import sqlite3

from shop.db import get_customer

TAX_RATE = 0.2


def order_total(items: list[dict[str, int]]) -> int:
    """Return the order total in cents, including tax."""
    return sum(i["price_cents"] * i["qty"] for i in items)


def list_orders(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """Return all orders, newest first."""
    return conn.execute("SELECT * FROM orders ORDER BY created_at DESC").fetchall()


def orders_report(conn: sqlite3.Connection) -> list[dict[str, object]]:
    """Return every order with its customer's name and total."""
    report = []
    for order in list_orders(conn):
        customer = get_customer(conn, order["customer_id"])
        name = customer["name"] if customer else "unknown"
        report.append({"id": order["id"], "customer": name, "total_cents": order["total_cents"]})
    return report
