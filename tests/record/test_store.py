"""The review store on SQLite and a real PostgreSQL server: what a record keeps, schema versions."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, select

from codejury.fingerprint import fingerprint
from codejury.record import schema
from codejury.record.model import record_from_review
from codejury.record.schema import StoreError, StoreTooNew
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from codejury.testing import review_seed as seed


def open_store(url: str) -> Store:
    return Store(parse_record_url(url))


def test_a_record_keeps_everything_the_review_and_its_events_carry(store_url: str) -> None:
    sql = seed.finding(evidence=["ruff:S608"], verified=True)
    docs = seed.finding("documentation", "README.md", 3, title="Stale example", category="docs", severity="suggestion")
    review = seed.review(
        findings=[sql, docs],
        reviewers=[
            seed.reviewer("security", "anthropic:claude-sonnet-4-5", tokens=4000, cache_read=3000, cache_write=500),
            seed.reviewer("performance", "anthropic:claude-sonnet-4-5", status="failed"),
        ],
        break_glass=True,
        dropped={"failed verification": 2, "speculative": 1},
    )
    events = seed.events(
        failbacks=1, breaker=True, break_glass_by=["alice"], earlier={"0123456789abcdef": "fixed"},
        disputed=["0123456789abcdef"], changed_since=["app/db.py"],
    )  # fmt: skip
    store = open_store(store_url)
    try:
        assert store.write(record_from_review(review, events)) is True
        with store.connect() as conn:
            row = conn.execute(select(schema.reviews)).one()
            found = conn.execute(select(schema.findings).order_by(schema.findings.c.start_line)).all()
            runs = conn.execute(select(schema.reviewer_runs).order_by(schema.reviewer_runs.c.name)).all()
            dropped = dict(
                conn.execute(select(schema.dropped_findings.c.reason, schema.dropped_findings.c.count)).all()
            )
            failback = conn.execute(select(schema.failbacks)).one()
            breaker = conn.execute(select(schema.breaker_transitions)).one()
            earlier = conn.execute(select(schema.earlier_findings)).one()
            changed = conn.execute(select(schema.changed_files.c.path)).scalars().all()
            document = conn.execute(select(schema.review_documents.c.review)).scalar_one()
    finally:
        store.close()
    assert (row.repository, row.change_id, row.head_sha) == ("gitlab.example.com/shop/api", "!7", "a" * 40)
    assert (row.tier, row.verdict, row.break_glass, row.break_glass_by) == (
        "full",
        "requested_changes",
        True,
        ["alice"],
    )
    assert (row.cost_usd, row.duration_s, row.failed_reviewers, row.failbacks) == (0.05, 30.0, 1, 1)
    assert document["findings"][0]["title"] == "SQL built from a string"  # the whole review, for a dashboard
    assert [(f.reviewer, f.severity, f.path, f.start_line, f.end_line) for f in found] == [
        ("documentation", "suggestion", "README.md", 3, 4),
        ("security", "critical", "app/db.py", 10, 11),
    ]
    assert found[1].fingerprint == fingerprint(sql) and found[1].evidence == ["ruff:S608"] and found[1].verified
    assert found[0].verified is None
    by_name = {r.name: r for r in runs}
    security = by_name["security"]
    assert (security.model, security.input_tokens, security.cache_read_tokens, security.cache_write_tokens) == (
        "anthropic:claude-sonnet-4-5", 4000, 3000, 500,
    )  # fmt: skip
    assert by_name["performance"].status == "failed" and by_name["coordinator"].role == "coordinator"
    assert dropped == {"failed verification": 2, "speculative": 1}
    assert (failback.from_model, failback.to_model) == ("anthropic:claude-sonnet-4-5", "anthropic:claude-sonnet-4")
    assert (breaker.from_state, breaker.to_state) == ("closed", "open")
    assert (earlier.fingerprint, earlier.status, earlier.disputed) == ("0123456789abcdef", "fixed", True)
    assert changed == ["app/db.py"]


def test_the_same_record_sent_twice_is_stored_once(store_url: str) -> None:
    store = open_store(store_url)
    record = seed.record()
    try:
        assert store.write(record) is True
        assert store.write(record) is False
        with store.connect() as conn:
            assert len(conn.execute(select(schema.reviews.c.id)).all()) == 1
    finally:
        store.close()


def test_the_schema_is_versioned_and_a_newer_store_is_refused_in_one_line(store_url: str) -> None:
    store = open_store(store_url)
    try:
        assert store.migrate() == 0  # new: migrated from nothing
        assert store.migrate() == schema.SCHEMA_VERSION  # already there: nothing to do
        with store.engine.begin() as conn:
            versions = conn.execute(select(schema.migrations_table.c.version)).scalars().all()
            assert versions == list(range(1, schema.SCHEMA_VERSION + 1))
            conn.execute(
                schema.migrations_table.insert().values(
                    version=schema.SCHEMA_VERSION + 1, description="from the future", applied_at=seed.T0
                )
            )
    finally:
        store.close()
    later = open_store(store_url)  # another run of this (older) codejury
    try:
        with pytest.raises(StoreTooNew) as refused:
            later.write(seed.record())
        message = str(refused.value)
        assert "newer than this codejury knows" in message and "upgrade codejury" in message
        assert "\n" not in message
        with pytest.raises(StoreTooNew), later.connect():
            pass
    finally:
        later.close()


def test_store_errors_are_one_line_and_never_show_the_password(new_pg_database: object) -> None:
    store = Store(parse_record_url("postgresql://codejury:s3cret-pw@127.0.0.1:1/reviews"))
    with pytest.raises(StoreError) as failed:
        store.write(seed.record())
    message = str(failed.value)
    assert message.startswith("store postgresql://127.0.0.1:1/reviews: cannot open it: ")
    assert "s3cret-pw" not in message and "\n" not in message


def test_reading_a_sqlite_store_that_does_not_exist_says_so(tmp_path: object) -> None:
    store = Store(parse_record_url(f"sqlite:///{tmp_path}/nothing/reviews.sqlite3"))
    with pytest.raises(StoreError, match="no review has been recorded there yet"), store.connect():
        pass


def test_a_store_written_by_an_earlier_version_is_upgraded_and_keeps_its_reviews(store_url: str) -> None:
    store = open_store(store_url)
    try:
        with store.engine.begin() as conn:  # a store as the first release wrote it: migration 1 only
            schema.migrations_table.create(conn)
            schema.MIGRATIONS[0][1](conn)
            conn.execute(schema.migrations_table.insert().values(version=1, description="initial", applied_at=seed.T0))
        with store.engine.begin() as conn:
            conn.exec_driver_sql(f"DROP INDEX IF EXISTS {schema.RUN_TOTALS_INDEX.name}")  # not there in version 1
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {schema.suspected_injections.name}")  # nor this table
        assert store.write(record_from_review(seed.review(), events=[])) is True
        with store.connect() as conn:
            versions = conn.execute(select(schema.migrations_table.c.version)).scalars().all()
            indexes = {ix["name"] for ix in inspect(conn).get_indexes(schema.reviewer_runs.name)}
            assert versions == list(range(1, schema.SCHEMA_VERSION + 1)) and schema.RUN_TOTALS_INDEX.name in indexes
            assert inspect(conn).has_table(schema.suspected_injections.name)
            assert len(conn.execute(select(schema.reviews.c.id)).all()) == 1
    finally:
        store.close()


def test_a_record_names_the_breaker_states_the_breaker_has() -> None:
    from typing import get_args

    from codejury.record.model import BreakerStateName
    from codejury.resilience.breaker import BreakerState

    assert set(get_args(BreakerStateName)) == set(get_args(BreakerState))
