"""Daily caps: today's reviews and spend, counted in the review store, against ``[limits]``.

A day is a UTC day (00:00 to 24:00 UTC). Counted are the reviews recorded that day that reached a
model, that is every verdict but ``not_reviewed`` (a review refused by a cap or the kill switch, or
one with nothing to review, is recorded but costs nothing and counts for nothing), and their cost,
plus the reviews admitted that day and not recorded yet.

Admission reserves its place: ``check_caps(..., slot_hold_s=...)`` counts and, when every cap leaves
room, inserts a ``review_slots`` row in the same transaction, which no other admission to the same
store runs beside (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock on a
key derived from the caps' scope: one key for every review under a global cap, one per repository
otherwise). So of two reviews racing for the last review of the day, exactly one is admitted. The
slot counts as a review (of no cost yet) until the review's record replaces it, in the record's own
transaction, or until it expires ``slot_hold_s`` after the admission (a review that crashed does not
hold its slot for ever). A spend cap still sees the cost of a review only once it is recorded.

``check_caps`` never raises: a store it cannot read (``record.url = none``, a review service's
ingest URL, a store that does not answer within ``CHECK_TIMEOUT_S``) gives an ``unchecked`` reason,
and the review runs (recording never blocks a review; the composition root says so in one line).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import Connection, and_, case, func, select

from codejury.config import DailyLimits
from codejury.record import schema
from codejury.record.target import parse_record_url

if TYPE_CHECKING:
    from codejury.record.store import Store

CHECK_TIMEOUT_S = 2.0
"""At most this long to connect to the store and count (a statement timeout on PostgreSQL)."""


@dataclass(frozen=True)
class DayUsage:
    """What the store counted for one UTC day: across every repository, and for one."""

    day: str
    """The UTC day, ``YYYY-MM-DD``."""
    reviews: int = 0
    spend_usd: float = 0.0
    repository_reviews: int = 0
    repository_spend_usd: float = 0.0


@dataclass(frozen=True)
class CapCheck:
    """The result of ``check_caps``: a refusal, or why the caps could not be checked, or neither."""

    refusal: str | None = None
    cap: str | None = None
    """The ``[limits]`` key that refused the review."""
    usage: DayUsage | None = None
    unchecked: str | None = None
    slot: str | None = None
    """The slot reserved for the admitted review (``check_caps`` with ``slot_hold_s``)."""


def utc_day(now: datetime) -> tuple[datetime, datetime]:
    """The UTC day holding ``now`` as ``[start, end)``, naive UTC as the store keeps times."""
    at = now.astimezone(UTC) if now.tzinfo is not None else now
    start = at.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=None)
    return start, start + timedelta(days=1)


def day_usage(conn: Connection, repository: str, now: datetime) -> DayUsage:
    """Today's (UTC) counted reviews and their cost, in all and for ``repository``: one query on the
    ``recorded_at`` index, and the slots of today's reviews admitted and not recorded yet (not expired
    at ``now``)."""
    start, end = utc_day(now)
    r = schema.reviews
    ours = r.c.repository == repository
    row = conn.execute(
        select(
            func.count(),
            func.coalesce(func.sum(r.c.cost_usd), 0.0),
            func.coalesce(func.sum(case((ours, 1), else_=0)), 0),
            func.coalesce(func.sum(case((ours, r.c.cost_usd), else_=0.0)), 0.0),
        ).where(and_(r.c.recorded_at >= start, r.c.recorded_at < end, r.c.verdict != "not_reviewed"))
    ).one()
    s = schema.review_slots
    held = conn.execute(
        select(func.count(), func.coalesce(func.sum(case((s.c.repository == repository, 1), else_=0)), 0)).where(
            and_(s.c.reserved_at >= start, s.c.reserved_at < end, s.c.expires_at > _naive(now))
        )
    ).one()
    return DayUsage(
        start.date().isoformat(), int(row[0]) + int(held[0]), float(row[1]), int(row[2]) + int(held[1]), float(row[3])
    )


def _naive(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(tzinfo=None) if at.tzinfo is not None else at


def scope_key(limits: DailyLimits, repository: str) -> int:
    """The lock key of the caps' scope: the same for every repository under a global cap, else the repository's."""
    shared = limits.reviews_per_day is not None or limits.spend_per_day_usd is not None
    digest = hashlib.blake2b(f"codejury daily caps {'' if shared else repository}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


def cap_refusal(limits: DailyLimits, usage: DayUsage, repository: str) -> tuple[str, str] | None:
    """``(cap, reason)`` for the first cap ``usage`` has reached, or None while every cap leaves room."""
    day = f"{usage.day} UTC"
    shown = repository or "this repository"
    checks: list[tuple[str, bool, str]] = []
    if (n := limits.reviews_per_day_per_repository) is not None:
        checks.append(
            (
                "reviews_per_day_per_repository",
                usage.repository_reviews >= n,
                f"the daily review cap of {shown} is reached ({usage.repository_reviews} of {n} on {day})",
            )
        )
    if (usd := limits.spend_per_day_per_repository_usd) is not None:
        checks.append(
            (
                "spend_per_day_per_repository_usd",
                usage.repository_spend_usd >= usd,
                f"the daily spend cap of {shown} is reached (${usage.repository_spend_usd:.2f} of ${usd:.2f} on {day})",
            )
        )
    if (n := limits.reviews_per_day) is not None:
        checks.append(
            (
                "reviews_per_day",
                usage.reviews >= n,
                f"the daily review cap is reached ({usage.reviews} of {n} on {day})",
            )
        )
    if (usd := limits.spend_per_day_usd) is not None:
        checks.append(
            (
                "spend_per_day_usd",
                usage.spend_usd >= usd,
                f"the daily spend cap is reached (${usage.spend_usd:.2f} of ${usd:.2f} on {day})",
            )
        )
    return next(((cap, reason) for cap, reached, reason in checks if reached), None)


def check_caps(
    limits: DailyLimits,
    record_url: str | None,
    repository: str,
    now: datetime,
    *,
    slot_hold_s: float | None = None,
) -> CapCheck:
    """Count today's reviews in the store ``record_url`` names and hold them against ``limits``; with
    ``slot_hold_s``, an admitted review's slot is reserved in the same transaction (held that long at most)."""
    if not limits.capped:
        return CapCheck()
    try:
        target = parse_record_url(record_url)
    except ValueError as exc:
        return CapCheck(unchecked=f"record.url: {exc}")
    if target.kind == "none":
        return CapCheck(unchecked="record.url is none: nothing counts the reviews")
    if target.kind == "service":
        return CapCheck(unchecked=f"{target.shown} is a review service's ingest URL: it cannot be counted from here")
    from codejury.record.schema import StoreError
    from codejury.record.store import Store

    store = Store(target, connect_timeout_s=CHECK_TIMEOUT_S, statement_timeout_s=CHECK_TIMEOUT_S)
    try:
        if slot_hold_s is not None:
            return _admit(store, limits, repository, now, slot_hold_s)
        if not store.exists():
            usage = DayUsage(utc_day(now)[0].date().isoformat())
        else:
            with store.connect() as conn:
                usage = day_usage(conn, repository, now)
    except StoreError as exc:
        return CapCheck(unchecked=str(exc))
    except Exception as exc:  # noqa: BLE001 - a cap that cannot be counted never fails the review
        return CapCheck(unchecked=f"store {target.shown}: {type(exc).__name__}")
    finally:
        store.close()
    refused = cap_refusal(limits, usage, repository)
    if refused is None:
        return CapCheck(usage=usage)
    return CapCheck(refusal=refused[1], cap=refused[0], usage=usage)


def _admit(store: Store, limits: DailyLimits, repository: str, now: datetime, hold_s: float) -> CapCheck:
    """Count and, while every cap leaves room, reserve a slot: one transaction no other admission runs beside."""
    with store.exclusive(scope_key(limits, repository)) as conn:
        usage = day_usage(conn, repository, now)
        refused = cap_refusal(limits, usage, repository)
        if refused is not None:
            return CapCheck(refusal=refused[1], cap=refused[0], usage=usage)
        slot = uuid.uuid4().hex
        at = _naive(now)
        conn.execute(
            schema.review_slots.insert().values(
                slot=slot, repository=repository, reserved_at=at, expires_at=at + timedelta(seconds=hold_s)
            )
        )
    return CapCheck(usage=usage, slot=slot)
