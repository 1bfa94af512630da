"""The stats tables, read back from the store as plain data (``codejury stats``, a dashboard, a service).

``compute_stats(conn, since=, repository=)`` returns a ``Stats`` model: one object per table,
over the reviews recorded at or after ``since`` (all when None) in ``repository`` (all when None).
Definitions (docs/telemetry.md repeats them for users):

- **percentiles** (median, P90, P95, P99 of cost and duration): linear interpolation between the
  closest ranks over the reviews' values (numpy's default, PostgreSQL's ``percentile_cont``);
- **changes**: distinct (repository, change id) pairs; a review without a change id (a diff file)
  is a change of its own;
- **cache hit rate** of a model: cache-read tokens / input tokens (input counts cached tokens);
- **failed-reviewer rate**: reviewer runs (the coordinator left out) whose status is ``failed`` /
  all reviewer runs; **failback rate**: reviews with at least one failback / reviews;
- **acted-on rate** (``finding_outcomes``): of the published findings whose change was reviewed
  again (*followed up*), the share acted on and the share dismissed before that next review.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar

from pydantic import BaseModel, Field
from sqlalchemy import ColumnElement, Connection, Select, Table, and_, case, distinct, exists, func, select, true

from codejury.errors import InputError
from codejury.record import schema
from codejury.record.memory import SuppressedRow, suppressed_by_rule
from codejury.record.store import Store, utc_naive

TIER_ORDER = ("trivial", "lite", "full")
SEVERITIES = ("critical", "warning", "suggestion")
DEFAULT_SINCE = "30d"
ALL = "all"
P = ParamSpec("P")
T = TypeVar("T")
_RELATIVE = re.compile(r"^\s*(\d{1,5})\s*([hdw])\s*$", re.IGNORECASE)


class Overview(BaseModel):
    reviews: int
    changes: int
    repositories: int
    first: datetime | None = None
    last: datetime | None = None
    verdicts: dict[str, int] = Field(default_factory=dict)


class Spread(BaseModel):
    """Median and tail percentiles of one measure (None with no reviews)."""

    median: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None


class TierRow(BaseModel):
    tier: str
    """A tier, or ``all``."""
    reviews: int
    cost_total_usd: float
    cost_usd: Spread
    duration_s: Spread


class CostDuration(BaseModel):
    rows: list[TierRow] = Field(default_factory=list)


class ReviewerSeverityRow(BaseModel):
    reviewer: str
    critical: int = 0
    warning: int = 0
    suggestion: int = 0
    total: int = 0


class FindingsByReviewer(BaseModel):
    rows: list[ReviewerSeverityRow] = Field(default_factory=list)


class ModelTokensRow(BaseModel):
    model: str
    runs: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cache_hit_rate: float | None
    cost_usd: float
    unpriced: bool = False
    """No known price (``mark_unpriced``): its runs used tokens and were recorded at $0."""


class TokensByModel(BaseModel):
    rows: list[ModelTokensRow] = Field(default_factory=list)

    @property
    def unpriced(self) -> list[str]:
        """The models marked unpriced, in the table's order."""
        return [row.model for row in self.rows if row.unpriced]


class BreakGlass(BaseModel):
    reviews: int
    break_glass: int
    rate: float | None


class ReviewerFailures(BaseModel):
    reviewer: str
    runs: int
    failed: int
    rate: float | None


class Reliability(BaseModel):
    reviewer_runs: int
    failed_runs: int
    failed_reviewer_rate: float | None
    reviews_with_failed_reviewer: int
    failbacks: int
    reviews_with_failback: int
    failback_rate: float | None
    by_reviewer: list[ReviewerFailures] = Field(default_factory=list)


class ActedOnRow(BaseModel):
    reviewer: str
    category: str | None = None
    """None in the per-reviewer rows (every category)."""
    published: int
    followed_up: int
    acted_on: int
    dismissed: int
    acted_on_rate: float | None
    dismissed_rate: float | None


class ActedOn(BaseModel):
    by_reviewer: list[ActedOnRow] = Field(default_factory=list)
    by_reviewer_category: list[ActedOnRow] = Field(default_factory=list)


class InjectionRuleCount(BaseModel):
    rule: str
    passages: int
    reviews: int


class InjectionRow(BaseModel):
    recorded_at: datetime
    repository: str
    change_id: str
    source: str
    place: str
    rule: str
    excerpt: str


class Injections(BaseModel):
    """Passages that looked like instructions to the reviewer: counts by rule, and the latest few to look at."""

    by_rule: list[InjectionRuleCount] = Field(default_factory=list)
    latest: list[InjectionRow] = Field(default_factory=list)


class Stats(BaseModel):
    """Every table of ``codejury stats``; ``model_dump(mode="json")`` is its JSON format."""

    reviews: int
    since: datetime | None
    repository: str | None
    store: str
    overview: Overview
    cost_duration: CostDuration
    findings_by_reviewer: FindingsByReviewer
    tokens_by_model: TokensByModel
    break_glass: BreakGlass
    reliability: Reliability
    acted_on: ActedOn
    injections: Injections = Field(default_factory=Injections)
    suppressed_by_rule: list[SuppressedRow] = Field(default_factory=list)
    """Findings memory did not publish again (a writer dismissed them before), per rule (``codejury.memory``)."""


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """``30d``, ``12h``, ``2w``, a date (``2026-11-01``) or a UTC datetime; ``all`` or None: no bound."""
    if text is None or text.strip().lower() == "all":
        return None
    now = now or datetime.now(UTC)
    found = _RELATIVE.match(text)
    if found:
        unit = {"h": "hours", "d": "days", "w": "weeks"}[found.group(2).lower()]
        return now - timedelta(**{unit: int(found.group(1))})
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        try:
            parsed = datetime.combine(date.fromisoformat(text.strip()), datetime.min.time())
        except ValueError:
            raise InputError(
                f"--since expects a duration (30d, 12h, 2w), a date (2026-11-01) or 'all', got {text[:40]!r}"
            ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-quantile (0..1) of sorted ``values``, interpolating linearly between closest ranks."""
    if not values:
        return None
    position = (len(values) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return values[low] + (values[high] - values[low]) * (position - low)


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def review_scope(since: datetime | None, repository: str | None) -> ColumnElement[bool]:
    """The condition on ``reviews`` for those recorded since ``since`` in ``repository`` (None: any)."""
    r = schema.reviews
    where: list[ColumnElement[bool]] = []
    if since is not None:
        where.append(r.c.recorded_at >= utc_naive(since))
    if repository is not None:
        where.append(r.c.repository == repository)
    return and_(true(), *where)


def compute_stats(
    conn: Connection, *, since: datetime | None = None, repository: str | None = None, store: str = ""
) -> Stats:
    """Every table over the reviews in ``conn``'s store recorded since ``since`` in ``repository``."""
    scope = review_scope(since, repository)
    children = Children(scope, since is not None or repository is not None)
    return assemble_stats(
        conn, since=since, repository=repository, store=store, cost_duration=_cost_duration(conn, scope),
        findings=_findings(conn, children), runs=_runs(conn, children), acted_on=_acted_on(conn, scope),
    )  # fmt: skip


def on_own_connection(
    store: Store, read: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """``read(conn, …)`` on a connection of its own (for a worker thread: a dashboard reads its heaviest
    tables at once, each on its own connection)."""
    with store.connect() as conn:
        return read(conn, *args, **kwargs)


def _cost_duration(conn: Connection, scope: ColumnElement[bool]) -> CostDuration:
    r = schema.reviews
    return cost_duration_table(conn.execute(select(r.c.tier, r.c.cost_usd, r.c.duration_s).where(scope)))


def _findings(conn: Connection, children: Children) -> FindingsByReviewer:
    f = schema.findings
    query = select(f.c.reviewer, f.c.severity, func.count()).where(children.of(f)).group_by(f.c.reviewer, f.c.severity)
    return findings_table(conn.execute(query))


def _runs(conn: Connection, children: Children) -> tuple[TokensByModel, list[ReviewerFailures]]:
    runs = schema.reviewer_runs
    return runs_tables(conn.execute(select(*run_sums()).where(children.of(runs)).group_by(*RUN_KEYS)))


def assemble_stats(
    conn: Connection,
    *,
    since: datetime | None,
    repository: str | None,
    store: str,
    cost_duration: CostDuration,
    findings: FindingsByReviewer,
    runs: tuple[TokensByModel, list[ReviewerFailures]],
    acted_on: ActedOn,
) -> Stats:
    """``Stats`` from the tables built from grouped rows (``compute_stats``, or a dashboard that reads
    the same rows per time bucket), completed with the overview and the reliability read here."""
    scope = review_scope(since, repository)
    overview, glass = _overview(conn, scope)
    tokens, failures = runs
    return Stats(
        reviews=overview.reviews,
        since=since,
        repository=repository,
        store=store,
        overview=overview,
        cost_duration=cost_duration,
        findings_by_reviewer=findings,
        tokens_by_model=tokens,
        break_glass=glass,
        reliability=_reliability(conn, scope, failures, overview.reviews),
        acted_on=acted_on,
        injections=injections_table(conn, scope),
        suppressed_by_rule=suppressed_by_rule(conn, since, repository),
    )


LATEST_INJECTIONS = 10
"""How many of the latest suspected injections ``stats`` and the dashboard list."""


def injections_table(conn: Connection, scope: ColumnElement[bool], latest: int = LATEST_INJECTIONS) -> Injections:
    """The suspected injections of the reviews in ``scope``: counts by rule, and the ``latest`` ones."""
    i, r = schema.suspected_injections, schema.reviews
    joined = i.join(r, i.c.review_id == r.c.id)
    counts = conn.execute(
        select(i.c.rule, func.count(), func.count(distinct(i.c.review_id)))
        .select_from(joined)
        .where(scope)
        .group_by(i.c.rule)
        .order_by(func.count().desc(), i.c.rule)
    )
    rows = conn.execute(
        select(r.c.recorded_at, r.c.repository, r.c.change_id, i.c.source, i.c.place, i.c.rule, i.c.excerpt)
        .select_from(joined)
        .where(scope)
        .order_by(r.c.recorded_at.desc(), r.c.id.desc(), i.c.place)
        .limit(latest)
    )
    return Injections(
        by_rule=[InjectionRuleCount(rule=rule, passages=n, reviews=m) for rule, n, m in counts],
        latest=[
            InjectionRow(
                recorded_at=at,
                repository=repo,
                change_id=change,
                source=source,
                place=place,
                rule=rule,
                excerpt=excerpt,
            )  # fmt: skip
            for at, repo, change, source, place, rule, excerpt in rows
        ],
    )


@dataclass(frozen=True)
class Children:
    """Rows of a review's child table (findings, reviewer runs) in scope: no join when nothing is filtered."""

    scope: ColumnElement[bool]
    filtered: bool

    def of(self, table: Table) -> ColumnElement[bool]:
        if not self.filtered:
            return true()
        return table.c.review_id.in_(select(schema.reviews.c.id).where(self.scope))


def _overview(conn: Connection, scope: ColumnElement[bool]) -> tuple[Overview, BreakGlass]:
    r = schema.reviews
    count, repos, first, last, glass, loose = conn.execute(
        select(
            func.count(),
            func.count(distinct(r.c.repository)),
            func.min(r.c.recorded_at),
            func.max(r.c.recorded_at),
            func.coalesce(func.sum(case((r.c.break_glass.is_(True), 1), else_=0)), 0),
            func.coalesce(func.sum(case((r.c.change_id == "", 1), else_=0)), 0),
        ).where(scope)
    ).one()
    pairs = select(r.c.repository, r.c.change_id).where(scope, r.c.change_id != "").distinct().subquery()
    changes = int(conn.execute(select(func.count()).select_from(pairs)).scalar_one()) + int(loose)
    verdicts = {
        v: int(n) for v, n in conn.execute(select(r.c.verdict, func.count()).where(scope).group_by(r.c.verdict))
    }
    overview = Overview(
        reviews=int(count), changes=changes, repositories=int(repos), first=first, last=last,
        verdicts=dict(sorted(verdicts.items())),
    )  # fmt: skip
    return overview, BreakGlass(reviews=int(count), break_glass=int(glass), rate=_rate(int(glass), int(count)))


def _spread(values: list[float]) -> Spread:
    values.sort()
    return Spread(
        median=_round(percentile(values, 0.5)),
        p90=_round(percentile(values, 0.9)),
        p95=_round(percentile(values, 0.95)),
        p99=_round(percentile(values, 0.99)),
    )


def cost_duration_table(values: Iterable[tuple[str, float, float]]) -> CostDuration:
    """Percentiles per tier and overall from every review's (tier, cost, duration)."""
    costs: dict[str, list[float]] = defaultdict(list)
    durations: dict[str, list[float]] = defaultdict(list)
    for tier, cost, duration in values:
        costs[tier].append(cost)
        durations[tier].append(duration)
    return cost_duration_lists(costs, durations)


def cost_duration_lists(costs: dict[str, list[float]], durations: dict[str, list[float]]) -> CostDuration:
    """``cost_duration_table`` from each tier's costs and durations (the same tiers in both; the lists
    are sorted in place, fastest when they are concatenations of a few sorted runs)."""
    order = [t for t in TIER_ORDER if t in costs] + sorted(t for t in costs if t not in TIER_ORDER)
    rows = [_tier_row(tier, costs[tier], durations[tier]) for tier in order]
    # Each tier's values are sorted by now: "all" concatenates sorted runs, which sort in linear time.
    rows.append(_tier_row(ALL, [c for t in order for c in costs[t]], [d for t in order for d in durations[t]]))
    return CostDuration(rows=rows)


def _tier_row(tier: str, costs: list[float], durations: list[float]) -> TierRow:
    """The row of ``tier`` (sorts both lists in place)."""
    return TierRow(
        tier=tier,
        reviews=len(costs),
        cost_total_usd=round(math.fsum(costs), 6),
        cost_usd=_spread(costs),
        duration_s=_spread(durations),
    )


def findings_table(counts: Iterable[tuple[str, str, int]]) -> FindingsByReviewer:
    """Findings per reviewer and severity from (reviewer, severity, count) rows (a pair may repeat)."""
    rows: dict[str, ReviewerSeverityRow] = {}
    for reviewer, severity, n in counts:
        row = rows.setdefault(reviewer, ReviewerSeverityRow(reviewer=reviewer))
        if severity in SEVERITIES:
            setattr(row, severity, getattr(row, severity) + int(n))
        row.total += int(n)
    ordered = sorted(rows.values(), key=lambda row: (-row.total, row.reviewer))
    return FindingsByReviewer(rows=ordered)


RUN_KEYS = (schema.reviewer_runs.c.model, schema.reviewer_runs.c.name, schema.reviewer_runs.c.role)


def run_sums() -> tuple[ColumnElement[Any], ...]:
    """The columns ``runs_tables`` reads, grouped by ``RUN_KEYS``: model, name, role, runs, failed runs,
    then the sums of input, output, cache-read and cache-write tokens and of cost."""
    runs = schema.reviewer_runs
    return (
        *RUN_KEYS,
        func.count(),
        func.sum(case((runs.c.status == "failed", 1), else_=0)),
        func.sum(runs.c.input_tokens),
        func.sum(runs.c.output_tokens),
        func.sum(runs.c.cache_read_tokens),
        func.sum(runs.c.cache_write_tokens),
        func.sum(runs.c.cost_usd),
    )


def mark_unpriced(stats: Stats, priced: Callable[[str], bool]) -> Stats:
    """``stats`` with each model marked unpriced whose runs used tokens, cost $0, and that ``priced(model)`` says
    has no known price (such a model counts as $0): its cost in these tables is not what it spent."""
    rows = [
        row.model_copy(update={"unpriced": True})
        if row.cost_usd == 0 and row.input_tokens + row.output_tokens > 0 and not priced(row.model)
        else row
        for row in stats.tokens_by_model.rows
    ]
    return stats.model_copy(update={"tokens_by_model": TokensByModel(rows=rows)})


def runs_tables(sums: Iterable[Sequence[Any]]) -> tuple[TokensByModel, list[ReviewerFailures]]:
    """Tokens by model and failed runs by reviewer from ``run_sums`` rows (a key may repeat)."""
    models: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0.0])
    reviewers: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for model, name, role, n, k, *totals in sums:
        into = models[model]
        for i, value in enumerate((n, *totals)):
            into[i] += value or 0
        if role == "reviewer":
            reviewers[name][0] += int(n)
            reviewers[name][1] += int(k or 0)
    tokens = [
        ModelTokensRow(
            model=model,
            runs=int(n),
            input_tokens=int(inp),
            output_tokens=int(out),
            cache_read_tokens=int(cr),
            cache_write_tokens=int(cw),
            cache_hit_rate=_rate(int(cr), int(inp)),
            cost_usd=round(float(cost), 6),
        )  # fmt: skip
        for model, (n, inp, out, cr, cw, cost) in models.items()
    ]
    tokens.sort(key=lambda row: (-row.input_tokens, row.model))
    failures = [
        ReviewerFailures(reviewer=name, runs=n, failed=k, rate=_rate(k, n)) for name, (n, k) in reviewers.items()
    ]
    failures.sort(key=lambda row: (-row.failed, row.reviewer))
    return TokensByModel(rows=tokens), failures


def _reliability(
    conn: Connection, scope: ColumnElement[bool], by_reviewer: list[ReviewerFailures], reviews: int
) -> Reliability:
    r = schema.reviews
    with_failed, failbacks, with_failback = conn.execute(
        select(
            func.coalesce(func.sum(case((r.c.failed_reviewers > 0, 1), else_=0)), 0),
            func.coalesce(func.sum(r.c.failbacks), 0),
            func.coalesce(func.sum(case((r.c.failbacks > 0, 1), else_=0)), 0),
        ).where(scope)
    ).one()
    total_runs = sum(row.runs for row in by_reviewer)
    failed_runs = sum(row.failed for row in by_reviewer)
    return Reliability(
        reviewer_runs=total_runs,
        failed_runs=failed_runs,
        failed_reviewer_rate=_rate(failed_runs, total_runs),
        reviews_with_failed_reviewer=int(with_failed),
        failbacks=int(failbacks),
        reviews_with_failback=int(with_failback),
        failback_rate=_rate(int(with_failback), reviews),
        by_reviewer=by_reviewer,
    )


def finding_outcomes(scope: ColumnElement[bool]) -> Select[Any]:
    """One row per published finding in ``scope``: review id, the review's ``recorded_at``, reviewer,
    category, 0/1 columns ``followed_up``, ``acted_on`` and ``dismissed`` at the next review of its change.

    A finding of review R is *followed up* when a later review R' of the same (repository, change
    id) exists; R' is the next one by time. Then, in this order:

    1. R' carries the forge's bookkeeping for the finding's fingerprint (a re-review on GitLab or
       GitHub): ``fixed`` (its lines changed and it is no longer reported) is acted on,
       ``dismissed`` (a human resolved its thread or answered won't fix) is dismissed, ``open`` is
       neither;
    2. otherwise (a local or CI review without a forge) it is acted on when R' no longer reports
       the fingerprint, R' reviewed another head commit, and — when R' knows which files changed
       since R's head — the finding's file is one of them; else neither.
    """
    r, f, e, cf = schema.reviews, schema.findings, schema.earlier_findings, schema.changed_files
    order = (r.c.recorded_at, r.c.id)
    ordered = (
        select(
            r.c.id,
            func.lead(r.c.id).over(partition_by=(r.c.repository, r.c.change_id), order_by=order).label("next_id"),
        )
        .where(r.c.change_id != "")
        .subquery("ordered")
    )
    status = (
        select(e.c.status)
        .where(e.c.review_id == ordered.c.next_id, e.c.fingerprint == f.c.fingerprint)
        .limit(1)
        .scalar_subquery()
    )
    pf = (
        select(
            f.c.review_id,
            r.c.recorded_at,
            f.c.reviewer,
            f.c.category,
            f.c.fingerprint,
            f.c.path,
            r.c.head_sha,
            ordered.c.next_id,
            status.label("status"),
        )  # fmt: skip
        .select_from(f.join(r, r.c.id == f.c.review_id).outerjoin(ordered, ordered.c.id == f.c.review_id))
        .where(scope)
        .cte("per_finding")
        .prefix_with("MATERIALIZED")  # the status lookup runs once per finding, not once per use
    )
    nxt, same = r.alias("next_review"), f.alias("same_finding")
    reported_again = exists().where(same.c.review_id == pf.c.next_id, same.c.fingerprint == pf.c.fingerprint)
    file_changed = exists().where(cf.c.review_id == pf.c.next_id, cf.c.path == pf.c.path)
    acted = case(
        (pf.c.next_id.is_(None), 0),
        (pf.c.status == "fixed", 1),
        (pf.c.status.is_not(None), 0),
        (reported_again, 0),
        (nxt.c.head_sha == pf.c.head_sha, 0),
        (and_(nxt.c.changed_since_known.is_(True), ~file_changed), 0),
        else_=1,
    )
    return select(
        pf.c.review_id,
        pf.c.recorded_at,
        pf.c.reviewer,
        pf.c.category,
        case((pf.c.next_id.is_not(None), 1), else_=0).label("followed_up"),
        acted.label("acted_on"),
        case((pf.c.status == "dismissed", 1), else_=0).label("dismissed"),
    ).select_from(pf.outerjoin(nxt, nxt.c.id == pf.c.next_id))


def acted_on_outcome() -> tuple[ColumnElement[Any], ColumnElement[Any], ColumnElement[Any], Any]:
    """Every finding's outcome (``finding_outcomes``) as 0/1 columns (followed up, acted on, dismissed)
    and the FROM clause joining it to its review (``schema.reviews``), to filter and group by the review."""
    o = finding_outcomes(true()).subquery("outcomes")
    return o.c.followed_up, o.c.acted_on, o.c.dismissed, o.join(schema.reviews, schema.reviews.c.id == o.c.review_id)


def _acted_on(conn: Connection, scope: ColumnElement[bool]) -> ActedOn:
    o = finding_outcomes(scope).subquery("outcomes")
    query = select(
        o.c.reviewer, o.c.category, func.count(), func.sum(o.c.followed_up), func.sum(o.c.acted_on),
        func.sum(o.c.dismissed),
    ).group_by(o.c.reviewer, o.c.category)  # fmt: skip
    return acted_on_table(conn.execute(query))


def acted_on_table(counts: Iterable[tuple[str, str, int, int, int, int]]) -> ActedOn:
    """The acted-on table from (reviewer, category, published, followed up, acted on, dismissed), one row
    per reviewer and category (``finding_outcomes`` summed)."""
    detail = [_acted_row(rev, cat, int(n), int(fo), int(a), int(d)) for rev, cat, n, fo, a, d in counts]
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for row in detail:
        for i, value in enumerate((row.published, row.followed_up, row.acted_on, row.dismissed)):
            totals[row.reviewer][i] += value
    by_reviewer = [_acted_row(rev, None, *counts) for rev, counts in totals.items()]
    by_reviewer.sort(key=lambda row: (-row.published, row.reviewer))
    detail.sort(key=lambda row: (row.reviewer, -row.published, row.category or ""))
    return ActedOn(by_reviewer=by_reviewer, by_reviewer_category=detail)


def _acted_row(reviewer: str, category: str | None, n: int, followed: int, acted: int, dismissed: int) -> ActedOnRow:
    return ActedOnRow(
        reviewer=reviewer, category=category, published=n, followed_up=followed, acted_on=acted, dismissed=dismissed,
        acted_on_rate=_rate(acted, followed), dismissed_rate=_rate(dismissed, followed),
    )  # fmt: skip
