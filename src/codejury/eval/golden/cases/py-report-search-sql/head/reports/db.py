"""SQLite connection to the reporting replica."""

from __future__ import annotations

import sqlite3

from flask import current_app, g


def get_connection() -> sqlite3.Connection:
    """The request's connection to the reporting replica, opened on first use."""
    if "db" not in g:
        g.db = sqlite3.connect(current_app.config["REPORTS_DB"], detect_types=sqlite3.PARSE_DECLTYPES)
        g.db.row_factory = sqlite3.Row
    return g.db


def close_connection(_exc: BaseException | None = None) -> None:
    """Teardown hook: closes the request's connection if one was opened."""
    db = g.pop("db", None)
    if db is not None:
        db.close()
