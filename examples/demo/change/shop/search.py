"""Product search."""

import sqlite3


def search_products(conn: sqlite3.Connection, term: str) -> list[sqlite3.Row]:
    """Return the products whose name contains ``term``."""
    query = f"SELECT id, name, price_cents FROM products WHERE name LIKE '%{term}%'"
    return conn.execute(query).fetchall()
