"""The service's own tables (SQLAlchemy Core), beside the review store's: deliveries seen and local jobs.

They live in the service's database: the SQLite file of the embedded default, or the PostgreSQL
database of ``codejury serve --database`` (where only the deliveries table is used: Procrastinate
keeps the jobs). ``create_tables`` is idempotent.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Column, DateTime, Engine, Index, Integer, MetaData, String, Table, Text, create_engine, event

metadata = MetaData()

deliveries = Table(
    "codejury_webhook_deliveries",
    metadata,
    Column("id", String(300), primary_key=True),
    Column("received_at", DateTime, nullable=False),
)

jobs = Table(
    "codejury_review_jobs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("key", String(500), nullable=False),
    Column("request", Text, nullable=False),
    Column("state", String(16), nullable=False),  # waiting, running, done, failed
    Column("attempts", Integer, nullable=False, default=0),
    Column("run_after", DateTime, nullable=False),
    Column("updated_at", DateTime, nullable=False),
    Column("error", Text),
    Index("ix_codejury_review_jobs_state_key", "state", "key"),
)


def utcnow() -> datetime:
    """Now in UTC, without its zone (as both databases keep these columns)."""
    return datetime.now(UTC).replace(tzinfo=None)


def make_engine(url: str) -> Engine:
    """An engine for ``url`` (``sqlite+pysqlite:///…`` or ``postgresql+psycopg://…``), tables created."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 10})
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        engine = create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": 5})
    metadata.create_all(engine)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
