"""Database access for the shop."""

import sqlite3


def connect(path: str = "shop.db") -> sqlite3.Connection:
    """Open the shop database with rows addressable by column name."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    return conn


def get_customer(conn: sqlite3.Connection, customer_id: int) -> sqlite3.Row | None:
    """Return one customer row by id, or None."""
    return conn.execute("SELECT * FROM customers WHERE id = ?", (customer_id,)).fetchone()
