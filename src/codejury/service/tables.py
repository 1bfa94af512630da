"""The service's own tables (SQLAlchemy Core), beside the review store's: deliveries seen and local jobs.

They live in the service's database: the SQLite file of the embedded default, or the PostgreSQL
database of ``codejury serve --database`` (where only the deliveries table is used: Procrastinate
keeps the jobs). ``create_tables`` is idempotent.

``in_db_thread`` runs a blocking call off the event loop: on a SQLite file, always on the file's
one thread, so the service's own writers (a burst of webhooks, the queue's runners) take turns
there in order rather than meeting each other on SQLite's file lock and sleeping in its busy
handler; PostgreSQL calls go to the default pool.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import Column, DateTime, Engine, Index, Integer, MetaData, String, Table, Text, create_engine, event

T = TypeVar("T")
metadata = MetaData()
_SQLITE_THREADS: weakref.WeakKeyDictionary[Engine, ThreadPoolExecutor] = weakref.WeakKeyDictionary()

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


async def in_db_thread(engine: Engine, work: Callable[[], T]) -> T:
    """``work()`` off the event loop: on the SQLite file's own thread, or the default pool for PostgreSQL."""
    if engine.dialect.name != "sqlite":
        return await asyncio.to_thread(work)
    thread = _SQLITE_THREADS.get(engine)
    if thread is None:
        thread = _SQLITE_THREADS.setdefault(
            engine, ThreadPoolExecutor(max_workers=1, thread_name_prefix="codejury-sqlite")
        )
    return await asyncio.get_running_loop().run_in_executor(thread, work)
