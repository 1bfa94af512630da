"""Counting a UTC day's reviews and spend in the store, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from codejury.config import DailyLimits
from codejury.record.limits import DayUsage, check_caps
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from tests.record.seed import record

NOW = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
MIDNIGHT = datetime(2026, 11, 2, tzinfo=UTC)
OURS = "gitlab.example.com/shop/api"


def fill(url: str) -> None:
    store = Store(parse_record_url(url))
    try:
        for at, repository, cost, verdict in [
            (MIDNIGHT, OURS, 0.25, "approved"),  # 00:00:00 UTC: today
            (NOW - timedelta(hours=1), OURS, 0.50, "requested_changes"),
            (NOW - timedelta(hours=2), "github.com/acme/web", 1.00, "approved"),
            (NOW - timedelta(minutes=5), OURS, 0.0, "not_reviewed"),  # a refusal: recorded, not counted
            (MIDNIGHT - timedelta(seconds=1), OURS, 9.00, "approved"),  # 23:59:59 yesterday
            (MIDNIGHT + timedelta(days=1), OURS, 9.00, "approved"),  # tomorrow (a clock ahead)
        ]:
            store.write(record(at, repository=repository, review_kwargs={"cost": cost, "verdict": verdict}))
    finally:
        store.close()


def test_today_is_counted_from_midnight_utc_to_midnight_utc(store_url: str) -> None:
    fill(store_url)
    checked = check_caps(DailyLimits(reviews_per_day=100), store_url, OURS, NOW)
    assert checked.unchecked is None and checked.refusal is None
    assert checked.usage == DayUsage("2026-11-02", 3, 1.75, 2, 0.75)


def test_each_cap_refuses_once_reached_the_repository_caps_first(store_url: str) -> None:
    fill(store_url)

    def refused(**caps: float) -> str | None:
        return check_caps(DailyLimits(**caps), store_url, OURS, NOW).cap  # type: ignore[arg-type]

    assert refused(reviews_per_day_per_repository=3) is None
    assert refused(reviews_per_day_per_repository=2) == "reviews_per_day_per_repository"
    assert refused(spend_per_day_per_repository_usd=0.76) is None
    assert refused(spend_per_day_per_repository_usd=0.75) == "spend_per_day_per_repository_usd"
    assert refused(reviews_per_day=4) is None
    assert refused(reviews_per_day=3) == "reviews_per_day"
    assert refused(spend_per_day_usd=1.75) == "spend_per_day_usd"
    assert refused(reviews_per_day=3, reviews_per_day_per_repository=2) == "reviews_per_day_per_repository"
    # Another repository has its own count; the day after, everything starts again.
    assert check_caps(DailyLimits(reviews_per_day_per_repository=2), store_url, "other/repo", NOW).cap is None
    assert check_caps(DailyLimits(reviews_per_day=1), store_url, OURS, NOW + timedelta(days=2)).cap is None


def test_a_store_not_created_yet_counts_nothing(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/none-yet/reviews.sqlite3"
    checked = check_caps(DailyLimits(reviews_per_day=1), url, OURS, NOW)
    assert checked.refusal is None and checked.unchecked is None and checked.usage == DayUsage("2026-11-02")


def test_a_store_that_does_not_answer_leaves_the_caps_unchecked(silent_server: int) -> None:
    url = f"postgresql://codejury@127.0.0.1:{silent_server}/reviews"
    started = datetime.now(UTC)
    checked = check_caps(DailyLimits(reviews_per_day=1), url, OURS, NOW)
    assert checked.refusal is None
    assert checked.unchecked is not None and "postgresql://127.0.0.1" in checked.unchecked
    assert (datetime.now(UTC) - started).total_seconds() < 5
