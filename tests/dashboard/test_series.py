"""The measures per time bucket, on SQLite and a real PostgreSQL, against numbers computed by hand."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from codejury.dashboard.page import dashboard_data
from codejury.dashboard.series import MAX_BUCKETS, Buckets, bucket_of, choose_buckets, compute_series, token_series
from codejury.record import schema
from codejury.record.stats import compute_stats, review_scope
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from codejury.testing import review_seed as seed
from codejury.testing.dashboard_seed import month_records

M1 = "anthropic:claude-sonnet-4-5"
SINCE = datetime(2026, 11, 1, tzinfo=UTC)
NOW = datetime(2026, 11, 20, tzinfo=UTC)


def test_buckets_are_the_narrowest_width_that_fits_and_aligned_to_utc() -> None:
    hours = choose_buckets(datetime(2026, 11, 1, 9, 30), datetime(2026, 11, 2, 9, 0))
    assert (hours.width, hours.start, hours.count) == (timedelta(hours=1), datetime(2026, 11, 1, 9), 25)
    days = choose_buckets(SINCE, NOW)  # 19 days: 456 hours, 76 six-hour buckets, so days
    assert (days.width, days.start, days.count) == (timedelta(days=1), datetime(2026, 11, 1), 20)
    assert days.labels()[:2] == ["2026-11-01", "2026-11-02"] and days.unit == "day"
    year = choose_buckets(datetime(2025, 11, 1), NOW)
    assert year.width == timedelta(weeks=1) and year.count <= MAX_BUCKETS
    assert choose_buckets(NOW, NOW).count == 1


def seeded(url: str) -> tuple[Store, list[str]]:
    store = Store(parse_record_url(url))
    r1 = seed.record(
        datetime(2026, 11, 1, 9, tzinfo=UTC),
        review_kwargs={"tier": "full", "cost": 0.10, "duration": 10.0, "verdict": "requested_changes",
                       "findings": [seed.finding(line=10), seed.finding(line=20, severity="warning", title="B")],
                       "reviewers": [seed.reviewer("security", M1, tokens=1000, cache_read=600)]},
        change_id="#1",
    )  # fmt: skip
    fps = [f.fingerprint for f in r1.findings]
    records = [
        r1,
        seed.record(datetime(2026, 11, 1, 15, tzinfo=UTC), change_id="#2",
                    review_kwargs={"tier": "full", "cost": 0.30, "duration": 30.0, "verdict": "approved"}),
        seed.record(datetime(2026, 11, 1, 20, tzinfo=UTC), change_id="#3",
                    review_kwargs={"tier": "lite", "cost": 0.05, "duration": 5.0, "verdict": "approved",
                                   "findings": [seed.finding("documentation", severity="suggestion")]}),
        seed.record(datetime(2026, 11, 2, 10, tzinfo=UTC), change_id="#1",
                    earlier={fps[0]: "fixed", fps[1]: "dismissed"},
                    review_kwargs={"tier": "full", "cost": 0.20, "duration": 20.0,
                                   "verdict": "approved_with_comments"}),
        seed.record(datetime(2026, 11, 3, 23, 59, tzinfo=UTC), change_id="",
                    review_kwargs={"tier": "trivial", "cost": 0.01, "duration": 2.0, "verdict": "approved"}),
        seed.record(datetime(2026, 10, 1, tzinfo=UTC), change_id="#0", review_kwargs={"cost": 50.0}),  # before SINCE
    ]  # fmt: skip
    for record in records:
        store.write(record)
    return store, fps


def test_each_day_holds_the_numbers_computed_by_hand(store_url: str) -> None:
    store, _ = seeded(store_url)
    try:
        with store.connect() as conn:
            buckets = choose_buckets(SINCE, NOW)
            s = compute_series(conn, buckets, review_scope(SINCE, None))
    finally:
        store.close()
    zeros = [0] * 20
    assert s.verdicts["approved"] == [2, 0, 1, *zeros[3:]]
    assert s.verdicts["requested_changes"] == [1, *zeros[1:]]
    assert s.verdicts["approved_with_comments"] == [0, 1, *zeros[2:]]
    assert list(s.tiers) == ["trivial", "lite", "full"]
    full = s.tiers["full"]
    assert (full[0].reviews, full[0].cost_median, full[0].duration_median) == (2, pytest.approx(0.2), 20.0)
    assert full[0].cost_p95 == pytest.approx(0.29)  # 0.10 + 0.95 × (0.30 − 0.10)
    assert full[1].cost_median == pytest.approx(0.2) and full[2].reviews == 0 and full[2].cost_median is None
    assert s.tiers["trivial"][2].duration_p95 == 2.0  # 23:59 UTC still belongs to 3 November
    assert s.severities["critical"][:2] == [1, 0] and s.severities["warning"][0] == 1
    assert s.severities["suggestion"][0] == 1 and sum(map(sum, s.severities.values())) == 3
    sonnet = s.models[M1]
    assert (sonnet[0].input_tokens, sonnet[0].cache_read_tokens, sonnet[0].cache_hit_rate) == (1000, 600, 0.6)
    assert sonnet[1].input_tokens == 0 and sonnet[1].cache_hit_rate is None
    day1 = s.acted[0]  # R1's two findings are followed up by R4 (one fixed, one dismissed); R3's is not
    assert (day1.published, day1.followed_up, day1.acted_on, day1.dismissed) == (3, 2, 1, 1)
    assert (day1.acted_on_rate, day1.dismissed_rate) == (0.5, 0.5)
    assert s.acted[1].published == 0 and s.acted[1].acted_on_rate is None


def test_repository_scope_and_empty_periods(store_url: str) -> None:
    store, _ = seeded(store_url)
    try:
        other = dashboard_data(store, since=SINCE, repository="github.com/nobody/else", now=NOW)
        future = dashboard_data(store, since=NOW + timedelta(days=1), now=NOW)
        everything = dashboard_data(store, since=None, now=NOW)
    finally:
        store.close()
    assert other.stats.reviews == 0 and other.series is None and other.recent == []
    assert future.series is None
    assert everything.series is not None and everything.series.buckets.start <= datetime(2026, 10, 1)
    assert sum(map(sum, everything.series.verdicts.values())) == 6


def test_the_series_add_up_to_the_stats_tables(tmp_path: object) -> None:
    store = Store(parse_record_url(f"sqlite:///{tmp_path}/reviews.sqlite3"))
    for record in month_records(NOW, 60, random.Random(3)):
        store.write(record)
    try:
        data = dashboard_data(store, since=NOW - timedelta(days=30), now=NOW, recent=5)
        with store.connect() as conn:
            alone = compute_stats(conn, since=NOW - timedelta(days=30), store=store.shown)
    finally:
        store.close()
    assert data.series is not None
    stats, s = data.stats, data.series
    assert stats == alone  # the acted-on table read with the series is the one `codejury stats` prints
    assert sum(map(sum, s.verdicts.values())) == stats.reviews == 60
    assert {v: sum(n) for v, n in s.verdicts.items()} == stats.overview.verdicts
    by_severity = {sev: sum(n) for sev, n in s.severities.items()}
    for sev in ("critical", "warning", "suggestion"):
        assert by_severity[sev] == sum(getattr(row, sev) for row in stats.findings_by_reviewer.rows)
    for row in stats.tokens_by_model.rows:
        assert sum(p.input_tokens for p in s.models[row.model]) == row.input_tokens
    assert sum(p.acted_on for p in s.acted) == sum(r.acted_on for r in stats.acted_on.by_reviewer) > 0
    assert [d.row.recorded_at for d in data.recent] == sorted((d.row.recorded_at for d in data.recent), reverse=True)


def test_the_whole_store_reads_the_same_numbers_by_its_cheaper_path(store_url: str) -> None:
    store = Store(parse_record_url(store_url))
    for record in month_records(NOW, 40, random.Random(5)):
        store.write(record)
    try:
        with store.connect() as conn:
            buckets = choose_buckets(NOW - timedelta(days=31), NOW)
            scope = review_scope(None, None)
            one_pass = token_series(conn, buckets, scope, filtered=True)
            two_reads = token_series(conn, buckets, scope, filtered=False)
        data = dashboard_data(store, since=None, now=NOW, recent=0)
        with store.connect() as conn:
            alone = compute_stats(conn, store=store.shown)
    finally:
        store.close()
    assert two_reads == one_pass and sum(p.input_tokens for p in one_pass[0][next(iter(one_pass[0]))]) > 0
    assert data.stats.tokens_by_model == alone.tokens_by_model and data.stats.reliability == alone.reliability


@pytest.mark.parametrize(
    "at",
    [datetime(2026, 11, 1), datetime(2026, 11, 1, 23, 59, 59, 999000), datetime(2026, 11, 2, 0, 0, 0, 1),
     datetime(2026, 11, 2, 5, 59, 59, 500000), datetime(2026, 11, 2, 6)],
)  # fmt: skip
def test_a_review_at_a_bucket_edge_falls_in_the_bucket_its_time_says(store_url: str, at: datetime) -> None:
    store = Store(parse_record_url(store_url))
    store.write(seed.record(at.replace(tzinfo=UTC), change_id="#1"))
    try:
        with store.connect() as conn:
            for width in (timedelta(hours=6), timedelta(days=1)):
                buckets = choose_buckets(datetime(2026, 11, 1), datetime(2026, 11, 2, 12))
                buckets = Buckets(buckets.start, width, 3)
                index = conn.execute(select(bucket_of(conn, schema.reviews.c.recorded_at, buckets))).scalar_one()
                assert index == (at - buckets.start) // width, (at, width)
    finally:
        store.close()
