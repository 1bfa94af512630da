"""The store's tables (SQLAlchemy Core, the same on SQLite and PostgreSQL) and its migrations.

The schema is versioned by the store's own table ``codejury_migrations`` (one row per applied
migration: version, description, when). ``migrate(conn)`` applies the migrations this codejury
knows that the store lacks, in order, each in the caller's transaction; a store whose highest
version is above ``SCHEMA_VERSION`` was written by a newer codejury and is refused with
``StoreTooNew`` (reading it could misread a changed column; writing it could corrupt it).

A new migration is a function appended to ``MIGRATIONS``; it must never edit an earlier one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Connection,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    func,
    inspect,
    select,
)

from codejury.errors import CodejuryError

metadata = MetaData()

migrations_table = Table(
    "codejury_migrations",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("description", String(200), nullable=False),
    Column("applied_at", DateTime, nullable=False),
)


def _usage_columns() -> list[Column[object]]:
    """A review's or a reviewer run's requests, tokens, cost and time (``findings.Usage``'s fields)."""
    return [
        Column("requests", Integer, nullable=False),
        Column("input_tokens", Integer, nullable=False),
        Column("output_tokens", Integer, nullable=False),
        Column("cache_read_tokens", Integer, nullable=False),
        Column("cache_write_tokens", Integer, nullable=False),
        Column("cost_usd", Float, nullable=False),
        Column("duration_s", Float, nullable=False),
    ]


reviews = Table(
    "reviews",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("uid", String(64), nullable=False, unique=True),
    Column("recorded_at", DateTime, nullable=False),
    Column("repository", String(300), nullable=False, default=""),
    Column("change_id", String(200), nullable=False, default=""),
    Column("head_sha", String(64), nullable=False, default=""),
    Column("tier", String(20), nullable=False),
    Column("verdict", String(40), nullable=False),
    Column("judged", Boolean, nullable=False),
    Column("break_glass", Boolean, nullable=False),
    Column("break_glass_by", JSON, nullable=False),
    *_usage_columns(),
    Column("failed_reviewers", Integer, nullable=False),
    Column("failbacks", Integer, nullable=False),
    Column("changed_since_known", Boolean, nullable=False),
    Index("ix_reviews_recorded_at", "recorded_at"),
    Index("ix_reviews_change", "repository", "change_id", "recorded_at"),
)


def _child(name: str, *columns: Column[object] | Index) -> Table:
    return Table(
        name,
        metadata,
        Column("review_id", Integer, ForeignKey("reviews.id", ondelete="CASCADE"), nullable=False),
        *columns,
        Index(f"ix_{name}_review", "review_id"),
    )


reviewer_runs = _child(
    "reviewer_runs",
    Column("name", String(100), nullable=False),
    Column("role", String(20), nullable=False),
    Column("model", String(200), nullable=False),
    Column("status", String(20), nullable=False),
    Column("error", Text),
    *_usage_columns(),
)
findings = _child(
    "findings",
    Column("fingerprint", String(80), nullable=False),
    Column("reviewer", String(100), nullable=False),
    Column("category", String(200), nullable=False),
    Column("severity", String(20), nullable=False),
    Column("path", Text, nullable=False),
    Column("start_line", Integer, nullable=False),
    Column("end_line", Integer, nullable=False),
    Column("title", Text, nullable=False),
    Column("evidence", JSON, nullable=False),
    Column("verified", Boolean),
    Column("advisory", Boolean, nullable=False),
    Index("ix_findings_review_fingerprint", "review_id", "fingerprint"),
)
dropped_findings = _child(
    "dropped_findings",
    Column("reason", String(100), nullable=False),
    Column("count", Integer, nullable=False),
)
failbacks = _child(
    "failbacks",
    Column("from_model", String(200), nullable=False),
    Column("to_model", String(200), nullable=False),
    Column("reason", Text, nullable=False),
)
breaker_transitions = _child(
    "breaker_transitions",
    Column("model", String(200), nullable=False),
    Column("from_state", String(20), nullable=False),
    Column("to_state", String(20), nullable=False),
)
earlier_findings = _child(
    "earlier_findings",
    Column("fingerprint", String(80), nullable=False),
    Column("status", String(20), nullable=False),
    Column("disputed", Boolean, nullable=False),
    Index("ix_earlier_findings_review_fingerprint", "review_id", "fingerprint"),
)
changed_files = _child(
    "changed_files",
    Column("path", Text, nullable=False),
)
suspected_injections = _child(
    "suspected_injections",
    Column("source", String(40), nullable=False),
    Column("place", Text, nullable=False),
    Column("rule", String(60), nullable=False),
    Column("excerpt", Text, nullable=False),
    Index("ix_suspected_injections_rule", "rule"),
)
"""Passages of what a review read that look like instructions to the reviewer (``codejury.guardrails``)."""
review_documents = Table(
    "review_documents",
    metadata,
    Column("review_id", Integer, ForeignKey("reviews.id", ondelete="CASCADE"), primary_key=True),
    Column("review", JSON, nullable=False),
)
"""The whole review as ``--format json`` has it (kept apart so that scanning ``reviews`` stays cheap)."""
review_slots = Table(
    "review_slots",
    metadata,
    Column("slot", String(64), primary_key=True),
    Column("repository", String(300), nullable=False, default=""),
    Column("reserved_at", DateTime, nullable=False),
    Column("expires_at", DateTime, nullable=False),
    Index("ix_review_slots_reserved_at", "reserved_at"),
)
"""A review admitted under a daily cap and not recorded yet: counted as a review of the day until its
record replaces it (in the record's transaction) or it expires (``codejury.record.limits``)."""


memory_keys = _child(
    "memory_keys",
    Column("fingerprint", String(80), nullable=False),
    Column("rule", String(300), nullable=False),
    Column("rule_version", String(16), nullable=False),
    Column("shape", String(16), nullable=False),
    Index("ix_memory_keys_review_fingerprint", "review_id", "fingerprint"),
)
"""The keys each published finding is remembered by (``codejury.memory.keys``)."""
dismissals = _child(
    "dismissals",
    Column("repository", String(300), nullable=False),
    Column("change_id", String(200), nullable=False),
    Column("fingerprint", String(80), nullable=False),
    Column("rule", String(300), nullable=False),
    Column("rule_version", String(16), nullable=False),
    Column("shape", String(16), nullable=False),
    Column("path", Text, nullable=False),
    Column("title", Text, nullable=False),
    Column("dismissed_by", String(200), nullable=False),
    Column("how", String(60), nullable=False),
    Column("dismissed_at", DateTime, nullable=False),
    Index("ix_dismissals_lookup", "repository", "rule", "shape", "dismissed_at"),
)
"""A finding a person with write access dismissed, with the keys of the review that published it: what the next
review of any change of the repository looks up, in one query by (repository, rule, shape)."""
remembered = _child(
    "remembered",
    Column("fingerprint", String(80), nullable=False),
    Column("rule", String(300), nullable=False),
    Column("severity", String(20), nullable=False),
    Column("path", Text, nullable=False),
    Column("title", Text, nullable=False),
    Column("dismissed_in", String(200), nullable=False),
    Column("suppressed", Boolean, nullable=False),
)
"""Findings a review matched to an earlier dismissal (suppressed, or published anyway): ``codejury stats``."""


def _initial(conn: Connection) -> None:
    metadata.create_all(conn, tables=[t for t in metadata.sorted_tables if t is not migrations_table])


_RUN_TOTALS = ("model", "name", "role", "status", "input_tokens", "output_tokens", "cache_read_tokens")
RUN_TOTALS_INDEX = Index(
    "ix_reviewer_runs_totals", *(reviewer_runs.c[name] for name in (*_RUN_TOTALS, "cache_write_tokens", "cost_usd"))
)
"""Covers the stats' sums of reviewer runs per model, reviewer and role: grouped by reading the index in
order, with no sort of every run (SQLite, 450k runs: 0.64 s -> 0.19 s)."""


def _run_totals_index(conn: Connection) -> None:
    RUN_TOTALS_INDEX.create(conn, checkfirst=True)


def _suspected_injections(conn: Connection) -> None:
    suspected_injections.create(conn, checkfirst=True)  # a new store's first migration created it already


def _review_slots(conn: Connection) -> None:
    review_slots.create(conn, checkfirst=True)  # a new store's first migration created it already


def _memory(conn: Connection) -> None:
    for table in (memory_keys, dismissals, remembered):
        table.create(conn, checkfirst=True)  # a new store's first migration created them already


MIGRATIONS: tuple[tuple[str, Callable[[Connection], None]], ...] = (
    ("reviews, findings and reviewer runs", _initial),
    ("an index covering the reviewer runs' totals", _run_totals_index),
    ("passages that look like instructions to the reviewer", _suspected_injections),
    ("slots reserved by reviews admitted under a daily cap", _review_slots),
    ("findings' memory keys, writers' dismissals and the findings matched to them", _memory),
)
"""Migration n (1-based) is ``MIGRATIONS[n - 1]``: a description and the function that applies it."""
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(CodejuryError):
    """The review store cannot be opened, read or written (one line, never with a password)."""


class StoreTooNew(StoreError):
    """The store's schema is newer than this codejury: upgrade codejury to use it."""


def store_version(conn: Connection) -> int:
    """The store's schema version: 0 for an empty database."""
    if not inspect(conn).has_table(migrations_table.name):
        return 0
    return int(conn.execute(select(func.coalesce(func.max(migrations_table.c.version), 0))).scalar_one())


def check_version(conn: Connection, shown: str) -> int:
    """The store's version; ``StoreTooNew`` when a newer codejury wrote it."""
    version = store_version(conn)
    if version > SCHEMA_VERSION:
        raise StoreTooNew(
            f"the store {shown} has schema version {version}, newer than this codejury knows ({SCHEMA_VERSION}): "
            "upgrade codejury to read or write it"
        )
    return version


def migrate(conn: Connection, shown: str) -> int:
    """Bring the store up to ``SCHEMA_VERSION`` (in ``conn``'s transaction); returns the version it had."""
    version = check_version(conn, shown)
    if version < SCHEMA_VERSION:
        migrations_table.create(conn, checkfirst=True)
    for number in range(version + 1, SCHEMA_VERSION + 1):
        description, apply = MIGRATIONS[number - 1]
        apply(conn)
        conn.execute(
            migrations_table.insert().values(
                version=number, description=description, applied_at=datetime.now(UTC).replace(tzinfo=None)
            )
        )
    return version
