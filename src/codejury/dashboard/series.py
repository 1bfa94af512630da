"""The stats tables over time: the store's reviews grouped into equal time buckets.

``choose_buckets(first, last)`` picks the bucket width (an hour, six hours, a day, a week or 30 days)
that splits the period into at most ``MAX_BUCKETS`` buckets, aligned to UTC (a day starts at
midnight UTC). ``compute_series(conn, buckets, scope)`` returns, per bucket:

- reviews by verdict, and cost and duration median and P95 per tier (the same percentile
  definition as ``codejury stats``);
- findings by severity;
- input, output and cache-read tokens per model, and so each model's cache hit rate;
- the acted-on outcome of the findings published in that bucket (followed up, acted on, dismissed),
  with ``codejury stats``'s definition (``finding_outcomes``).

The bucket of a row is computed in SQL from the epoch seconds of ``recorded_at`` (SQLite's
``unixepoch()``, or ``strftime('%s')`` before SQLite 3.38; PostgreSQL's ``extract(epoch)``), so
one grouped query per measure serves both stores. Each of those reads (``review_series``,
``finding_series``, ``token_series``, ``acted_outcomes``) also returns the ``codejury stats`` table
built from the same rows, summed over the buckets: a dashboard reads every row once for a table and
its chart (the reviewer runs of the whole store excepted: see ``token_series``).
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, Integer, cast, extract, func, select

from codejury.record import schema
from codejury.record.stats import (
    RUN_KEYS,
    SEVERITIES,
    TIER_ORDER,
    ActedOn,
    CostDuration,
    FindingsByReviewer,
    ReviewerFailures,
    TokensByModel,
    acted_on_table,
    cost_duration_lists,
    finding_outcomes,
    findings_table,
    percentile,
    run_sums,
    runs_tables,
)

MAX_BUCKETS = 60
WIDTHS = (
    timedelta(hours=1),
    timedelta(hours=6),
    timedelta(days=1),
    timedelta(weeks=1),
    timedelta(days=30),
)
_EPOCH = datetime(1970, 1, 1)
_UNIXEPOCH = sqlite3.sqlite_version_info >= (3, 38)
"""SQLite's ``unixepoch()`` (3.38+): the same whole seconds as ``strftime('%s')`` at half the cost
(no string formatted, then parsed back)."""


@dataclass(frozen=True)
class Buckets:
    """``count`` consecutive buckets of ``width`` from ``start`` (naive UTC, as the store keeps times)."""

    start: datetime
    width: timedelta
    count: int

    @property
    def seconds(self) -> int:
        return int(self.width.total_seconds())

    def starts(self) -> list[datetime]:
        return [self.start + self.width * i for i in range(self.count)]

    def labels(self) -> list[str]:
        """A short label per bucket: its start date, with the hour for buckets under a day."""
        fmt = "%Y-%m-%d %H:%M" if self.width < timedelta(days=1) else "%Y-%m-%d"
        return [s.strftime(fmt) for s in self.starts()]

    @property
    def unit(self) -> str:
        names = {3600: "hour", 21600: "6 hours", 86400: "day", 604800: "week", 2592000: "30 days"}
        return names.get(self.seconds, f"{self.seconds} s")


def _naive(at: datetime) -> datetime:
    return at if at.tzinfo is None else at.astimezone(UTC).replace(tzinfo=None)


def choose_buckets(first: datetime, last: datetime) -> Buckets:
    """Buckets covering ``first`` .. ``last``: the narrowest width giving at most ``MAX_BUCKETS``."""
    first, last = _naive(first), _naive(last)
    if last < first:
        last = first
    for width in WIDTHS:
        seconds = int(width.total_seconds())
        origin = int((first - _EPOCH).total_seconds()) // seconds * seconds
        count = (int((last - _EPOCH).total_seconds()) - origin) // seconds + 1
        if count <= MAX_BUCKETS or width == WIDTHS[-1]:
            return Buckets(_EPOCH + timedelta(seconds=origin), width, count)
    raise AssertionError("unreachable")  # pragma: no cover


def bucket_of(conn: Connection, column: ColumnElement[datetime], buckets: Buckets) -> ColumnElement[int]:
    """SQL for the bucket index of ``column`` (rows before ``buckets.start`` get negative ones)."""
    origin = int((buckets.start - _EPOCH).total_seconds())
    if conn.dialect.name == "sqlite":
        seconds: ColumnElement[int] = (
            func.unixepoch(column, type_=Integer) if _UNIXEPOCH else cast(func.strftime("%s", column), Integer)
        )
        return (seconds - origin) // buckets.seconds  # integer division: the floor for rows at or after start
    return cast(func.floor((extract("epoch", column) - origin) / buckets.seconds), Integer)


@dataclass
class TierPoint:
    reviews: int
    cost_median: float | None
    cost_p95: float | None
    duration_median: float | None
    duration_p95: float | None


@dataclass
class TokenPoint:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0

    @property
    def cache_hit_rate(self) -> float | None:
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else None


@dataclass
class ActedPoint:
    published: int = 0
    followed_up: int = 0
    acted_on: int = 0
    dismissed: int = 0

    @property
    def acted_on_rate(self) -> float | None:
        return self.acted_on / self.followed_up if self.followed_up else None

    @property
    def dismissed_rate(self) -> float | None:
        return self.dismissed / self.followed_up if self.followed_up else None


@dataclass
class Series:
    """Every measure per bucket; each list (or dict of lists) has ``buckets.count`` entries."""

    buckets: Buckets
    verdicts: dict[str, list[int]] = field(default_factory=dict)
    tiers: dict[str, list[TierPoint]] = field(default_factory=dict)
    severities: dict[str, list[int]] = field(default_factory=dict)
    models: dict[str, list[TokenPoint]] = field(default_factory=dict)
    acted: list[ActedPoint] = field(default_factory=list)


def compute_series(conn: Connection, buckets: Buckets, scope: ColumnElement[bool], *, acted: bool = True) -> Series:
    """Every measure per bucket over the reviews that ``scope`` (a condition on ``reviews``) keeps
    (the acted-on outcome only with ``acted``: ``acted_outcomes`` reads it on its own)."""
    series = Series(buckets=buckets)
    review_series(conn, buckets, scope, series)
    finding_series(conn, buckets, scope, series)
    series.models, _ = token_series(conn, buckets, scope)
    if acted:
        series.acted, _, _ = acted_outcomes(conn, buckets, scope)
    return series


def _inside(index: object, buckets: Buckets) -> int | None:
    i = int(index) if isinstance(index, int | float) else -1
    return i if 0 <= i < buckets.count else None


def review_series(conn: Connection, buckets: Buckets, scope: ColumnElement[bool], series: Series) -> CostDuration:
    """Fills ``series``' verdicts and tiers; returns, from the same rows, ``codejury stats``' cost and
    duration table (every review in scope, whether or not it falls in a bucket)."""
    r = schema.reviews
    n = buckets.count
    values: dict[tuple[str, int], tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    verdicts: dict[str, list[int]] = defaultdict(lambda: [0] * n)
    query = select(bucket_of(conn, r.c.recorded_at, buckets), r.c.tier, r.c.verdict, r.c.cost_usd, r.c.duration_s)
    for i, tier, verdict, cost, duration in conn.execute(query.where(scope)):
        if i is None or not 0 <= i < n:
            i = -1  # outside every bucket: in the table, on no chart
        else:
            verdicts[verdict][i] += 1
        costs, durations = values[(tier, i)]
        costs.append(cost)
        durations.append(duration)
    tiers = {tier for tier, _ in values}
    charted = {tier for tier, i in values if i >= 0}
    order = [t for t in TIER_ORDER if t in tiers] + sorted(tiers - set(TIER_ORDER))
    all_costs: dict[str, list[float]] = {}
    all_durations: dict[str, list[float]] = {}
    for tier in order:
        if tier in charted:
            points = []
            for i in range(n):
                costs, durations = values.get((tier, i), ([], []))
                costs.sort()
                durations.sort()
                points.append(
                    TierPoint(
                        reviews=len(costs),
                        cost_median=percentile(costs, 0.5),
                        cost_p95=percentile(costs, 0.95),
                        duration_median=percentile(durations, 0.5),
                        duration_p95=percentile(durations, 0.95),
                    )
                )
            series.tiers[tier] = points
        # The tier's values as sorted runs, one per bucket: sorting their concatenation is about linear.
        runs = [values[(tier, i)] for i in (*range(n), -1) if (tier, i) in values]
        all_costs[tier] = [cost for costs, _ in runs for cost in costs]
        all_durations[tier] = [duration for _, durations in runs for duration in durations]
    series.verdicts = dict(sorted(verdicts.items(), key=lambda item: -sum(item[1])))
    return cost_duration_lists(all_costs, all_durations)


def finding_series(
    conn: Connection, buckets: Buckets, scope: ColumnElement[bool], series: Series
) -> FindingsByReviewer:
    """Fills ``series``' severities; returns, from the same grouped rows, the findings-by-reviewer table."""
    r, f = schema.reviews, schema.findings
    index = bucket_of(conn, r.c.recorded_at, buckets).label("bucket")
    query = (
        select(index, f.c.reviewer, f.c.severity, func.count())
        .select_from(f.join(r, r.c.id == f.c.review_id))
        .where(scope)
        .group_by(index, f.c.reviewer, f.c.severity)
    )
    rows = conn.execute(query).all()
    counts: dict[str, list[int]] = {s: [0] * buckets.count for s in SEVERITIES}
    for bucket, _, severity, n in rows:
        i = _inside(bucket, buckets)
        if i is not None:
            counts.setdefault(severity, [0] * buckets.count)[i] += int(n)
    series.severities = counts
    return findings_table((reviewer, severity, n) for _, reviewer, severity, n in rows)


def token_series(
    conn: Connection, buckets: Buckets, scope: ColumnElement[bool], *, filtered: bool = True
) -> tuple[dict[str, list[TokenPoint]], tuple[TokensByModel, list[ReviewerFailures]]]:
    """The tokens per model and bucket (most used model first) and the tokens-by-model and
    failed-runs-by-reviewer tables.

    ``filtered``: whether ``scope`` leaves reviews out. When it does, one pass over the reviewer runs
    in scope (grouped by bucket, model, reviewer and role) serves both. When it keeps every review,
    the tables come from the covering index of the runs' totals, read in order with no sort
    (``codejury stats``'s own read), and the series from a narrower grouping (bucket and model): two
    cheaper reads than one sort of every run by four keys."""
    r, runs = schema.reviews, schema.reviewer_runs
    index = bucket_of(conn, r.c.recorded_at, buckets).label("bucket")
    models: dict[str, list[TokenPoint]] = {}

    def add(bucket: object, model: str, inp: Any, out: Any, cached: Any) -> None:
        i = _inside(bucket, buckets)
        if i is None:
            return
        point = models.setdefault(model, [TokenPoint() for _ in range(buckets.count)])[i]
        point.input_tokens += int(inp or 0)
        point.output_tokens += int(out or 0)
        point.cache_read_tokens += int(cached or 0)

    joined = runs.join(r, r.c.id == runs.c.review_id)
    if filtered:
        query = select(index, *run_sums()).select_from(joined).where(scope).group_by(index, *RUN_KEYS)
        rows = conn.execute(query).all()
        for bucket, model, _name, _role, _n, _failed, inp, out, cached, _written, _cost in rows:
            add(bucket, model, inp, out, cached)
        tables = runs_tables(row[1:] for row in rows)
    else:
        sums = (func.sum(runs.c.input_tokens), func.sum(runs.c.output_tokens), func.sum(runs.c.cache_read_tokens))
        query = select(index, runs.c.model, *sums).select_from(joined).where(scope).group_by(index, runs.c.model)
        for bucket, model, inp, out, cached in conn.execute(query):
            add(bucket, model, inp, out, cached)
        tables = runs_tables(conn.execute(select(*run_sums()).group_by(*RUN_KEYS)))
    totals = {m: sum(p.input_tokens + p.output_tokens for p in points) for m, points in models.items()}
    ordered = {m: models[m] for m in sorted(models, key=lambda m: (-totals[m], m))}
    return ordered, tables


def acted_outcomes(
    conn: Connection, buckets: Buckets, scope: ColumnElement[bool]
) -> tuple[list[ActedPoint], ActedOn, dict[str, ActedPoint]]:
    """The acted-on outcome of the findings published in each bucket (``finding_outcomes``, bucketed by
    the time of the review that published each finding) and, from the same pass, ``codejury stats``'s
    acted-on table (the same outcomes summed per reviewer and category) and the outcomes summed per
    repository (the dashboard's table by repository)."""
    o = finding_outcomes(scope).subquery("outcomes")
    r = schema.reviews
    index = bucket_of(conn, o.c.recorded_at, buckets).label("bucket")
    query = (
        select(
            index, o.c.reviewer, o.c.category, r.c.repository, func.count(), func.sum(o.c.followed_up),
            func.sum(o.c.acted_on), func.sum(o.c.dismissed),
        )
        .select_from(o.join(r, r.c.id == o.c.review_id))
        .group_by(index, o.c.reviewer, o.c.category, r.c.repository)
    )  # fmt: skip
    points = [ActedPoint() for _ in range(buckets.count)]
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    by_repository: dict[str, ActedPoint] = defaultdict(ActedPoint)
    for bucket, reviewer, category, repository, *sums in conn.execute(query):
        counts = [int(value or 0) for value in sums]
        into = totals[(reviewer, category)]
        for k, value in enumerate(counts):
            into[k] += value
        i = _inside(bucket, buckets)
        for point in (by_repository[repository], *([points[i]] if i is not None else [])):
            point.published += counts[0]
            point.followed_up += counts[1]
            point.acted_on += counts[2]
            point.dismissed += counts[3]
    table = acted_on_table((reviewer, category, n, fo, a, d) for (reviewer, category), (n, fo, a, d) in totals.items())
    return points, table, dict(by_repository)
