"""Counting a UTC day's reviews and spend in the store, and reserving an admitted review's slot, on SQLite and
PostgreSQL alike."""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from codejury.config import DailyLimits
from codejury.record import schema
from codejury.record.limits import CHECK_TIMEOUT_S, DayUsage, check_caps
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from codejury.testing.review_seed import record
from tests.timing import FOREVER, bounded

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


@pytest.mark.waits
def test_a_store_that_does_not_answer_leaves_the_caps_unchecked(silent_server: int) -> None:
    url = f"postgresql://codejury@127.0.0.1:{silent_server}/reviews"
    with bounded(CHECK_TIMEOUT_S, hung_s=FOREVER, what="checking the caps"):  # the server never answers
        checked = check_caps(DailyLimits(reviews_per_day=1), url, OURS, NOW)
    assert checked.refusal is None
    assert checked.unchecked is not None and "postgresql://127.0.0.1" in checked.unchecked


# -- admission reserves its slot ---------------------------------------------------------------------------
RACERS = 4


def _race_for_a_slot(url: str, cap: int, barrier: Any, results: Any) -> None:
    """One process's admission: wait for every racer, then count and reserve (as a review's admission does)."""
    barrier.wait(timeout=60)
    checked = check_caps(DailyLimits(reviews_per_day=cap), url, OURS, datetime.now(UTC), slot_hold_s=600)
    results.put((checked.slot, checked.cap, checked.unchecked))


def race(url: str, cap: int) -> list[tuple[str | None, str | None, str | None]]:
    """``RACERS`` processes admitted at the same instant against one store; what each got."""
    # Fresh processes, as separate reviews are; from a fork server that imported this module (and the store) once,
    # not a spawn of each racer that imports it all again.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    barrier, results = ctx.Barrier(RACERS), ctx.Queue()
    processes = [ctx.Process(target=_race_for_a_slot, args=(url, cap, barrier, results)) for _ in range(RACERS)]
    for p in processes:
        p.start()
    got = [results.get(timeout=120) for _ in processes]
    for p in processes:
        p.join(30)
        assert p.exitcode == 0
    return got


def test_processes_racing_for_the_last_review_of_the_day_admit_exactly_one(store_url: str) -> None:
    store = Store(parse_record_url(store_url))
    try:
        for _ in range(2):
            store.write(record(datetime.now(UTC), repository=OURS))
    finally:
        store.close()

    got = race(store_url, cap=3)  # two reviews recorded today: one left under the cap of three

    admitted = [slot for slot, _, _ in got if slot is not None]
    refused = [cap for slot, cap, _ in got if slot is None]
    print(f"\n{store_url.split(':')[0]}: {RACERS} processes racing for 1 slot left: {len(admitted)} admitted, "
          f"{len(refused)} refused ({set(refused)})")  # fmt: skip
    assert [unchecked for _, _, unchecked in got] == [None] * RACERS
    assert len(admitted) == 1 and refused == ["reviews_per_day"] * (RACERS - 1)
    # The admitted review's record replaces its slot: it is counted once, and the day stays full.
    store = Store(parse_record_url(store_url))
    try:
        finished = record(datetime.now(UTC), repository=OURS).model_copy(update={"slot": admitted[0]})
        assert store.write(finished)
        with store.connect() as conn:
            assert conn.execute(select(func.count()).select_from(schema.review_slots)).scalar_one() == 0
    finally:
        store.close()
    later = check_caps(DailyLimits(reviews_per_day=3), store_url, OURS, datetime.now(UTC), slot_hold_s=600)
    assert later.cap == "reviews_per_day" and later.usage is not None and later.usage.reviews == 3


def test_a_slot_that_is_never_recorded_expires(store_url: str) -> None:
    caps = DailyLimits(reviews_per_day_per_repository=1)
    held = check_caps(caps, store_url, OURS, NOW, slot_hold_s=1800)
    assert held.slot is not None and held.usage == DayUsage("2026-11-02")
    # While the review runs (never recorded: it crashed), the slot fills the day; 30 minutes on, it does not.
    assert check_caps(caps, store_url, OURS, NOW + timedelta(minutes=29), slot_hold_s=1800).cap == (
        "reviews_per_day_per_repository"
    )
    assert check_caps(caps, store_url, "other/repo", NOW, slot_hold_s=1800).slot is not None  # its own count
    after = check_caps(caps, store_url, OURS, NOW + timedelta(minutes=31), slot_hold_s=1800)
    assert after.cap is None and after.slot is not None
