"""The review store: SQLite (the default, a file in the user's data directory) or PostgreSQL.

``Store(target)`` opens lazily; ``write(record)`` migrates the schema on first use and writes one
``ReviewRecord`` in one transaction (a record whose ``uid`` is already there is skipped, so a
retried ingest is stored once; the daily-cap slot the review reserved is released in it);
``connect()`` gives a read connection after checking the schema version, for
``codejury.record.stats`` and a dashboard. Every database error becomes one ``StoreError`` line
naming the store without its credentials.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, select, text
from sqlalchemy.exc import SQLAlchemyError

from codejury.findings import Usage
from codejury.record import schema
from codejury.record.memory import write_memory
from codejury.record.model import ReviewRecord
from codejury.record.schema import StoreError
from codejury.record.target import RecordTarget

CONNECT_TIMEOUT_S = 2.0


class Store:
    """One store (SQLite file or PostgreSQL database); thread-safe, connections pooled."""

    def __init__(
        self,
        target: RecordTarget,
        *,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        statement_timeout_s: float | None = None,
    ) -> None:
        if target.kind not in ("sqlite", "postgresql"):
            raise StoreError(f"{target.shown or target.kind} is not a database store")
        self.target = target
        self.connect_timeout_s = connect_timeout_s
        self.statement_timeout_s = statement_timeout_s
        self._engine: Engine | None = None
        self._migrated = False

    @property
    def shown(self) -> str:
        return self.target.shown

    def exists(self) -> bool:
        """False only for a SQLite file that is not there yet (a server's database always "exists")."""
        return self.target.path is None or self.target.path.exists()

    def _make_engine(self) -> Engine:
        if self.target.kind == "sqlite":
            assert self.target.path is not None
            try:
                self.target.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"store {self.shown}: cannot create its directory: {exc.strerror or exc}") from exc
            engine = create_engine(self.target.url, connect_args={"timeout": self.connect_timeout_s})
            event.listen(engine, "connect", _sqlite_pragmas)
            return engine
        args: dict[str, Any] = {"connect_timeout": max(1, round(self.connect_timeout_s))}
        if self.statement_timeout_s is not None:
            args["options"] = f"-c statement_timeout={int(self.statement_timeout_s * 1000)}"
        try:
            return create_engine(self.target.url, connect_args=args, pool_pre_ping=True)
        except ImportError as exc:
            raise StoreError(
                f"store {self.shown}: PostgreSQL needs the psycopg package (pip install 'codejury[postgres]')"
            ) from exc

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = self._make_engine()
        return self._engine

    def migrate(self) -> int:
        """Create or upgrade the schema; returns the version the store had (0: new)."""
        with self._errors("cannot open"), self.engine.begin() as conn:
            version = schema.migrate(conn, self.shown)
        self._migrated = True
        return version

    def write(self, record: ReviewRecord) -> bool:
        """Write ``record``; False when a record with its ``uid`` is already stored."""
        if not self._migrated:
            self.migrate()
        with self._errors("cannot write"), self.engine.begin() as conn:
            return write_record(conn, record)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A read connection to a store of a version this codejury knows (an empty store is migrated first)."""
        if not self.exists():
            raise StoreError(f"no review store at {self.shown}: no review has been recorded there yet")
        with self._errors("cannot read"):
            with self.engine.connect() as conn:
                version = schema.check_version(conn, self.shown)
            if version < schema.SCHEMA_VERSION:
                self.migrate()
            with self.engine.connect() as conn:
                yield conn

    @contextmanager
    def exclusive(self, key: int) -> Iterator[Connection]:
        """A write transaction that no other ``exclusive(key)`` on this store runs beside, committed when
        the block ends (rolled back if it raises), the schema migrated in it first: SQLite's ``BEGIN
        IMMEDIATE`` (one writer at a time, waiting up to ``connect_timeout_s``), PostgreSQL's
        transaction-scoped advisory lock on ``key`` (a signed 64-bit number)."""
        with self._errors("cannot write"), self.engine.connect() as conn:
            if self.target.kind == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
            schema.migrate(conn, self.shown)
            yield conn
            conn.commit()
        self._migrated = True

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except StoreError:
            raise
        except SQLAlchemyError as exc:
            raise StoreError(f"store {self.shown}: {doing} it: {describe(exc)}") from exc

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def describe(exc: SQLAlchemyError) -> str:
    """The driver's first line (no SQL, no parameters, no link to SQLAlchemy's error pages)."""
    cause = getattr(exc, "orig", None) or exc
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    text = lines[0] if lines else type(cause).__name__
    return text if len(text) <= 300 else text[:299] + "…"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")  # readers (stats) never wait for a writer
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def write_record(conn: Connection, record: ReviewRecord) -> bool:
    """Insert ``record`` and its rows in ``conn``'s transaction; False when its ``uid`` is already there."""
    if conn.execute(select(schema.reviews.c.id).where(schema.reviews.c.uid == record.uid)).first() is not None:
        return False
    head = record.model_dump(
        include={
            "uid", "repository", "change_id", "head_sha", "tier", "verdict", "judged", "break_glass",
            "break_glass_by", *Usage.model_fields,
        }
    )  # fmt: skip
    head["recorded_at"] = utc_naive(record.recorded_at)
    head["failed_reviewers"] = sum(1 for r in record.reviewers if r.status == "failed")
    head["failbacks"] = len(record.failbacks)
    head["changed_since_known"] = record.changed_since is not None
    review_id = conn.execute(schema.reviews.insert().values(**head)).inserted_primary_key[0]  # type: ignore[index]
    children: list[tuple[Any, list[dict[str, Any]]]] = [
        (schema.reviewer_runs, [r.model_dump() for r in record.reviewers]),
        (schema.findings, [f.model_dump() for f in record.findings]),
        (schema.dropped_findings, [{"reason": k, "count": v} for k, v in record.dropped.items()]),
        (schema.failbacks, [f.model_dump() for f in record.failbacks]),
        (schema.breaker_transitions, [b.model_dump() for b in record.breaker_transitions]),
        (schema.earlier_findings, [e.model_dump() for e in record.earlier_findings]),
        (schema.changed_files, [{"path": p} for p in record.changed_since or ()]),
        (schema.suspected_injections, [i.model_dump() for i in record.suspected_injections]),
        (schema.review_documents, [{"review": record.review}]),
    ]
    for table, rows in children:
        if rows:
            conn.execute(table.insert(), [{**row, "review_id": review_id} for row in rows])
    write_memory(conn, record, review_id, head["recorded_at"])
    if record.slot:  # the review now counts itself: the slot its admission reserved is released with it
        conn.execute(schema.review_slots.delete().where(schema.review_slots.c.slot == record.slot))
    return True


def utc_naive(at: datetime) -> datetime:
    """``at`` in UTC without its zone, as the store keeps times (a naive ``at`` is taken as UTC)."""
    return at if at.tzinfo is None else at.astimezone(UTC).replace(tzinfo=None)
