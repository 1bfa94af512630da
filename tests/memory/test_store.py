"""The store's side of memory on SQLite and PostgreSQL: dismissals stored with their finding's keys, and found
again by (repository, rule, shape) in one indexed query, within the age asked for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event, inspect

from codejury.record import schema
from codejury.record.memory import dismissals_for, dismissed_patterns, suppressed_by_repository, suppressed_by_rule
from codejury.record.model import RememberedRecord, ReviewRecord
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from tests.memory.seed import remember

REPO = "gitlab.example.com/acme/widgets"
RULE = "generalist:magic number"


def _since(days: float) -> datetime:
    return datetime.now(UTC).replace(tzinfo=None) - timedelta(days=days)


def test_a_dismissal_is_found_by_rule_and_shape_in_its_repository_only(store_url: str) -> None:
    remember(store_url, REPO, "!1", RULE, "shape-a", by="alice")
    remember(store_url, "gitlab.example.com/acme/other", "!1", RULE, "shape-b")
    store = Store(parse_record_url(store_url))
    with store.connect() as conn:
        asked = [(RULE, "shape-a"), (RULE, "shape-b"), ("ruff:S101", "shape-a")]
        [found] = dismissals_for(conn, REPO, asked, _since(30))
        assert (found.change_id, found.dismissed_by, found.how, found.shape) == ("!1", "alice", "won't fix", "shape-a")
        assert dismissals_for(conn, REPO, [(RULE, "shape-c")], _since(30)) == []
    store.close()


def test_a_dismissal_older_than_the_window_is_not_found(store_url: str) -> None:
    remember(store_url, REPO, "!1", RULE, "shape-a", days_ago=200)
    remember(store_url, REPO, "!2", RULE, "shape-a", days_ago=3)
    store = Store(parse_record_url(store_url))
    with store.connect() as conn:
        assert [d.change_id for d in dismissals_for(conn, REPO, [(RULE, "shape-a")], _since(180))] == ["!2"]
        assert [d.change_id for d in dismissals_for(conn, REPO, [(RULE, "shape-a")], _since(2))] == []
        [pattern] = dismissed_patterns(conn, REPO, _since(365))
        assert (pattern.count, pattern.changes, [e[0] for e in pattern.examples]) == (2, 2, ["!2", "!1"])
    store.close()


def test_one_review_asks_the_store_once_whatever_its_number_of_findings(store_url: str) -> None:
    remember(store_url, REPO, "!1", RULE, "shape-7")
    store = Store(parse_record_url(store_url))
    statements: list[tuple[str, Any]] = []

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        statements.append((statement, parameters))

    with store.connect() as conn:
        event.listen(store.engine, "before_cursor_execute", seen)
        found = dismissals_for(conn, REPO, [(RULE, f"shape-{n}") for n in range(60)], _since(30))
        event.remove(store.engine, "before_cursor_execute", seen)
        assert [d.shape for d in found] == ["shape-7"] and len(statements) == 1
        indexes = {i["name"]: i["column_names"] for i in inspect(conn).get_indexes("dismissals")}
        assert indexes["ix_dismissals_lookup"] == ["repository", "rule", "shape", "dismissed_at"]
        if store.target.kind == "sqlite":
            statement, parameters = statements[0]
            plan = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).all()
            assert "ix_dismissals_lookup" in " ".join(str(row[-1]) for row in plan)
    store.close()


def test_suppressed_counts_per_rule_and_per_repository(store_url: str) -> None:
    store = Store(parse_record_url(store_url))
    held = RememberedRecord(fingerprint="a", rule=RULE, severity="suggestion", path="a.py", title="Magic number")
    shown = RememberedRecord(
        fingerprint="b", rule="ruff:S608", severity="critical", path="b.py", title="SQL", suppressed=False
    )
    store.write(ReviewRecord(repository=REPO, change_id="!3", tier="lite", verdict="approved", remembered=[held, held]))
    store.write(ReviewRecord(repository="other", change_id="!1", tier="lite", verdict="approved", remembered=[shown]))
    with store.connect() as conn:
        by_rule = {r.key: (r.suppressed, r.published_anyway) for r in suppressed_by_rule(conn)}
        assert by_rule == {RULE: (2, 0), "ruff:S608": (0, 1)}
        assert [r.key for r in suppressed_by_rule(conn, repository="other")] == ["ruff:S608"]
        by_repo = {r.key: (r.suppressed, r.published_anyway) for r in suppressed_by_repository(conn)}
        assert by_repo == {REPO: (2, 0), "other": (0, 1)}
        only = suppressed_by_repository(conn, schema.reviews.c.repository == "other")
        assert [(r.key, r.suppressed, r.published_anyway) for r in only] == [("other", 0, 1)]
    store.close()


def test_codejury_stats_shows_the_suppressed_findings_per_rule(store_url: str) -> None:
    from codejury.record.stats import compute_stats
    from codejury.record.stats_render import render_stats_markdown

    store = Store(parse_record_url(store_url))
    held = RememberedRecord(fingerprint="a", rule=RULE, severity="suggestion", path="a.py", title="Magic number")
    store.write(ReviewRecord(repository=REPO, change_id="!3", tier="lite", verdict="approved", remembered=[held] * 3))
    with store.connect() as conn:
        text = render_stats_markdown(compute_stats(conn, store=store.shown))
    store.close()
    table = text[text.index("Suppressed by memory, by rule") :]
    assert f"| {RULE} | 3 | 0 |" in table
