"""Daily caps: today's reviews and spend, counted in the review store, against ``[limits]``.

A day is a UTC day (00:00 to 24:00 UTC). Counted are the reviews recorded that day that reached a
model, that is every verdict but ``not_reviewed`` (a review refused by a cap or the kill switch, or
one with nothing to review, is recorded but costs nothing and counts for nothing), and their cost.
Reviews running at the same time are counted as each one finishes, so as many reviews as run at
once may pass a cap together.

``check_caps`` never raises: a store it cannot read (``record.url = none``, a review service's
ingest URL, a store that does not answer within ``CHECK_TIMEOUT_S``) gives an ``unchecked`` reason,
and the review runs (recording never blocks a review; the composition root says so in one line).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, and_, case, func, select

from codejury.config import DailyLimits
from codejury.record import schema
from codejury.record.target import parse_record_url

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


def utc_day(now: datetime) -> tuple[datetime, datetime]:
    """The UTC day holding ``now`` as ``[start, end)``, naive UTC as the store keeps times."""
    at = now.astimezone(UTC) if now.tzinfo is not None else now
    start = at.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=None)
    return start, start + timedelta(days=1)


def day_usage(conn: Connection, repository: str, now: datetime) -> DayUsage:
    """Today's (UTC) counted reviews and their cost, in all and for ``repository``: one query on the
    ``recorded_at`` index."""
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
    return DayUsage(start.date().isoformat(), int(row[0]), float(row[1]), int(row[2]), float(row[3]))


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


def check_caps(limits: DailyLimits, record_url: str | None, repository: str, now: datetime) -> CapCheck:
    """Count today's reviews in the store ``record_url`` names and hold them against ``limits``."""
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
