"""The dashboard page and the review page, rendered from a store (the CLI and a review service alike).

``render_dashboard(store, since=, repository=)`` reads the tables of ``codejury stats``
(``codejury.record.stats``), the same measures per time bucket (``codejury.dashboard.series``) and
the most recent reviews in full (``codejury.dashboard.detail``), and renders one HTML page: inline CSS and SVG, no
script, no external resource, and a Content-Security-Policy that forbids both, so the page opens
offline and a string from the store can never run as code. Templates autoescape every value.

By default each recent review is embedded in the page and its row links to it (``#review-N``,
shown with CSS ``:target``); a service passes ``review_link`` (uid → URL) to link to its own review
pages instead (``render_review_page``) and keep the dashboard small, and ``filters`` (its path and the
request's ``repository`` and ``since`` parameters) for links that narrow the page by repository and period.
With ``forges`` (the configured instances), a merge request number links to its page there
(``codejury.dashboard.repositories``): the one kind of link that leaves the page, a navigation, never a load.

Everything read from the store is scrubbed with ``redactor`` (the caller's known secrets) before
rendering, and the page once more after: a secret that reached a record is never shown.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypeVar
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from sqlalchemy import Connection, func, select

from codejury.dashboard import CONTENT_SECURITY_POLICY, charts
from codejury.dashboard.charts import Part
from codejury.dashboard.detail import ReviewDetail, load_details, recent_reviews
from codejury.dashboard.repositories import (
    ChangeLinks,
    RepositoryRow,
    add_outcomes,
    known_repositories,
    repository_table,
)
from codejury.dashboard.series import (
    Series,
    acted_outcomes,
    choose_buckets,
    finding_series,
    review_series,
    token_series,
)
from codejury.forges.hosts import ForgeHosts
from codejury.record import schema
from codejury.record.stats import Stats, assemble_stats, compute_stats, on_own_connection, review_scope
from codejury.record.store import Store, utc_naive
from codejury.render import counted, format_cost, format_duration, grounds, section_title
from codejury.secrets import Redactor

RECENT = 50
T = TypeVar("T")
MAX_MODELS = 8
TIER_COLORS = {"trivial": "#14b8a6", "lite": "#3b82f6", "full": "#7c3aed"}
SEVERITY_COLORS = {"critical": "#dc2626", "warning": "#f59e0b", "suggestion": "#3b82f6"}
VERDICT_COLORS = {
    "approved": "#16a34a",
    "approved_with_comments": "#84cc16",
    "significant_concerns": "#f59e0b",
    "requested_changes": "#dc2626",
    "not_reviewed": "#6b7280",
}
PALETTE = ("#2563eb", "#db2777", "#059669", "#d97706", "#7c3aed", "#0891b2", "#65a30d", "#9f1239", "#475569")
VERDICT_LABELS = {
    "approved": "Approved",
    "approved_with_comments": "Approved with comments",
    "significant_concerns": "Significant concerns",
    "requested_changes": "Changes requested",
    "not_reviewed": "Not reviewed",
}


def _color(name: str, known: dict[str, str], i: int) -> str:
    return known.get(name, PALETTE[i % len(PALETTE)])


def money(value: float | None) -> str:
    """Dollars: four decimals under a dollar (cheap models cost fractions of a cent), two above."""
    if value is None:
        return "–"
    return format_cost(value) if abs(value) < 1 else f"${value:,.2f}"


def duration(value: float | None) -> str:
    return "–" if value is None else format_duration(value)


def count(value: float | None) -> str:
    """A count, shortened: 950, 12.3k, 4.5M."""
    if value is None:
        return "–"
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}{suffix}".replace(".0" + suffix, suffix)
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%".replace(".0%", "%")


def when(value: datetime | None) -> str:
    return "–" if value is None else utc_naive(value).strftime("%Y-%m-%d %H:%M UTC")


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("codejury.dashboard", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        money=money, duration=duration, count=count, counted=counted, percent=percent, when=when, section=section_title,
        verdict=lambda v: VERDICT_LABELS.get(v, v),
    )  # fmt: skip
    env.globals["verdict_color"] = lambda v: VERDICT_COLORS.get(v, "#6b7280")
    env.globals["severity_color"] = lambda s: SEVERITY_COLORS.get(s, "#6b7280")
    env.globals["finding_grounds"] = grounds
    env.globals["content_security_policy"] = Markup(CONTENT_SECURITY_POLICY)  # a constant: its quotes stay quotes
    return env


@dataclass
class Dashboard:
    """What the page shows: the tables, the same over time, the recent reviews."""

    stats: Stats
    series: Series | None
    recent: list[ReviewDetail]
    generated_at: datetime
    repositories: list[RepositoryRow] = field(default_factory=list)
    """The reviews in scope by repository, the most expensive first."""
    known_repositories: list[str] = field(default_factory=list)
    """Every repository the store has reviews of, in scope or not (the filter's choices)."""


def dashboard_data(
    store: Store,
    *,
    since: datetime | None = None,
    repository: str | None = None,
    recent: int = RECENT,
    now: datetime | None = None,
) -> Dashboard:
    """The tables, their series over time (from ``since``, or the first review, to now) and the recent reviews.

    Each table is built from the rows its series reads (grouped by bucket as well), so every row is
    read once for both. The two heaviest reads, the reviewer runs and the acted-on outcomes, run
    on connections of their own in worker threads while this one reads the reviews, the findings
    and the recent reviews: the database works on them at once (SQLite's reader releases the GIL).
    """
    now = now or datetime.now(UTC)
    scope = review_scope(since, repository)
    filtered = since is not None or repository is not None
    r = schema.reviews
    with store.connect() as conn:  # opens (and, for an empty store, migrates) before the workers connect
        first, last = conn.execute(select(func.min(r.c.recorded_at), func.max(r.c.recorded_at)).where(scope)).one()
        known = known_repositories(conn)
        if first is None:  # nothing in scope: every table empty, no series, no recent review
            stats = compute_stats(conn, since=since, repository=repository, store=store.shown)
            return Dashboard(stats=stats, series=None, recent=[], generated_at=now, known_repositories=known)
        buckets = choose_buckets(since or first, max(utc_naive(now), utc_naive(last)))
        series = Series(buckets=buckets)
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="codejury-dashboard") as pool:
            runs_done = pool.submit(on_own_connection, store, token_series, buckets, scope, filtered=filtered)
            acted_done = pool.submit(on_own_connection, store, acted_outcomes, buckets, scope)
            cost_duration = review_series(conn, buckets, scope, series)
            findings = finding_series(conn, buckets, scope, series)
            details = load_details(conn, recent_reviews(conn, scope, recent)) if recent > 0 else []
            repositories = repository_table(conn, scope)
            series.models, runs = runs_done.result()
            series.acted, acted_on, acted_by_repository = acted_done.result()
        stats = assemble_stats(
            conn, since=since, repository=repository, store=store.shown, cost_duration=cost_duration,
            findings=findings, runs=runs, acted_on=acted_on,
        )  # fmt: skip
    return Dashboard(
        stats=stats, series=series, recent=details, generated_at=now,
        repositories=add_outcomes(repositories, acted_by_repository), known_repositories=known,
    )  # fmt: skip


def _top_models(series: Series) -> list[str]:
    return list(series.models)[:MAX_MODELS]


def build_charts(data: Dashboard) -> dict[str, Markup]:
    """Every chart of the page as inline SVG (or a one-line 'no data' note), by name."""
    stats, series = data.stats, data.series
    out: dict[str, Markup] = {}
    if series is not None:
        labels = series.buckets.labels()
        unit = series.buckets.unit
        out["verdicts"] = charts.stacked_bar_chart(
            labels,
            [Part(VERDICT_LABELS.get(v, v), n, _color(v, VERDICT_COLORS, i)) for i, (v, n) in
             enumerate(series.verdicts.items())],
            label=f"Reviews per {unit} by verdict", fmt=count,
        )  # fmt: skip
        out["tiers"] = charts.stacked_bar_chart(
            labels,
            [Part(t, [p.reviews for p in points], _color(t, TIER_COLORS, i)) for i, (t, points) in
             enumerate(series.tiers.items())],
            label=f"Reviews per {unit} by risk tier", fmt=count,
        )  # fmt: skip
        for key, title, fmt in (("cost", "Cost per review", money), ("duration", "Duration per review", duration)):
            lines = []
            for i, (tier, points) in enumerate(series.tiers.items()):
                color = _color(tier, TIER_COLORS, i)
                lines.append(Part(f"{tier} median", [getattr(p, f"{key}_median") for p in points], color))
                lines.append(Part(f"{tier} P95", [getattr(p, f"{key}_p95") for p in points], color, dashed=True))
            out[key] = charts.line_chart(labels, lines, label=f"{title} per {unit}, by tier", fmt=fmt)
        out["severities"] = charts.stacked_bar_chart(
            labels,
            [Part(s, n, _color(s, SEVERITY_COLORS, i)) for i, (s, n) in enumerate(series.severities.items())],
            label=f"Findings per {unit} by severity", fmt=count,
        )  # fmt: skip
        out["acted_time"] = charts.line_chart(
            labels,
            [
                Part("acted on", [p.acted_on_rate for p in series.acted], "#16a34a"),
                Part("dismissed", [p.dismissed_rate for p in series.acted], "#6b7280", dashed=True),
            ],
            label=f"Acted-on rate of the findings published per {unit}", fmt=percent, most=1.0,
        )  # fmt: skip
        models = _top_models(series)
        out["tokens_time"] = charts.stacked_bar_chart(
            labels,
            [Part(m, [p.input_tokens + p.output_tokens for p in series.models[m]], PALETTE[i % len(PALETTE)])
             for i, m in enumerate(models)],
            label=f"Tokens (input and output) per {unit}, by model", fmt=count,
        )  # fmt: skip
        out["cache_time"] = charts.line_chart(
            labels,
            [Part(m, [p.cache_hit_rate for p in series.models[m]], PALETTE[i % len(PALETTE)])
             for i, m in enumerate(models)],
            label=f"Cache hit rate per {unit}, by model", fmt=percent, most=1.0,
        )  # fmt: skip
    reviewers = stats.findings_by_reviewer.rows
    out["by_reviewer"] = charts.hbar_chart(
        [r.reviewer for r in reviewers],
        [Part(s, [getattr(r, s) for r in reviewers], SEVERITY_COLORS[s]) for s in SEVERITY_COLORS],
        label="Findings by reviewer and severity", fmt=count,
    )  # fmt: skip
    acted = stats.acted_on.by_reviewer
    out["acted_reviewer"] = charts.hbar_chart(
        [r.reviewer for r in acted],
        [
            Part("acted on", [r.acted_on_rate for r in acted], "#16a34a"),
            Part("dismissed", [r.dismissed_rate for r in acted], "#6b7280"),
        ],
        label="Acted-on and dismissed rate by reviewer (of followed-up findings)", fmt=percent,
    )  # fmt: skip
    tokens = stats.tokens_by_model.rows[:MAX_MODELS]
    out["tokens_model"] = charts.hbar_chart(
        [t.model for t in tokens],
        [
            Part("cache read", [t.cache_read_tokens for t in tokens], "#0891b2"),
            Part("uncached input", [max(0, t.input_tokens - t.cache_read_tokens) for t in tokens], "#2563eb"),
            Part("output", [t.output_tokens for t in tokens], "#d97706"),
        ],
        label="Tokens by model", fmt=count,
    )  # fmt: skip
    return out


def _acted_total(stats: Stats) -> float | None:
    followed = sum(r.followed_up for r in stats.acted_on.by_reviewer)
    acted = sum(r.acted_on for r in stats.acted_on.by_reviewer)
    return acted / followed if followed else None


SINCE_CHOICES = (("7d", "7 days"), ("30d", "30 days"), ("90d", "90 days"), ("all", "all time"))
"""The period links of a served dashboard (any ``since`` that ``parse_since`` reads works as a parameter)."""


@dataclass(frozen=True)
class Filters:
    """A served dashboard's filters, as query parameters of ``path``: ``repository`` and ``since``."""

    path: str
    repository: str | None = None
    since: str | None = None

    def url(self, *, repository: str | None | bool = True, since: str | None | bool = True) -> str:
        """This page with ``repository`` and ``since`` changed (True: kept; None: dropped)."""
        chosen = {
            "repository": self.repository if repository is True else repository,
            "since": self.since if since is True else since,
        }
        query = urlencode({k: v for k, v in chosen.items() if isinstance(v, str) and v})
        return f"{self.path}?{query}" if query else self.path


def render_dashboard_data(
    data: Dashboard,
    *,
    review_link: Callable[[str], str] | None = None,
    redactor: Redactor | None = None,
    forges: ForgeHosts | None = None,
    filters: Filters | None = None,
) -> str:
    """The page for ``data`` (see the module docstring for ``review_link``, ``redactor``, ``forges`` and
    ``filters``)."""
    redactor = redactor or Redactor()
    data = redactor.scrub(data)
    links = ChangeLinks(forges) if forges is not None else None
    context: dict[str, Any] = {
        "d": data,
        "stats": data.stats,
        "series": data.series,
        "charts": build_charts(data),
        "acted_total": _acted_total(data.stats),
        "all_row": next((r for r in data.stats.cost_duration.rows if r.tier == "all"), None),
        "embedded": review_link is None,
        "link": review_link or (lambda uid: ""),
        "change_url": (lambda repository, change: links.url(repository, change)) if links else (lambda *_: None),
        "filters": filters,
        "since_choices": SINCE_CHOICES,
    }
    return redactor.redact(environment().get_template("dashboard.html.j2").render(context))


def render_dashboard(
    store: Store,
    *,
    since: datetime | None = None,
    repository: str | None = None,
    recent: int = RECENT,
    now: datetime | None = None,
    review_link: Callable[[str], str] | None = None,
    redactor: Redactor | None = None,
    forges: ForgeHosts | None = None,
    filters: Filters | None = None,
) -> str:
    """The dashboard of ``store``'s reviews recorded since ``since`` in ``repository`` (all when None)."""
    data = dashboard_data(store, since=since, repository=repository, recent=recent, now=now)
    return render_dashboard_data(data, review_link=review_link, redactor=redactor, forges=forges, filters=filters)


def render_review_section(detail: ReviewDetail) -> Markup:
    """One review in full as an HTML fragment: verdict, findings by section, failed reviewers, files left out."""
    macro = environment().get_template("_review.html.j2").module.review_section  # type: ignore[attr-defined]
    return Markup(macro(detail, True))


def load_review(conn: Connection, uid: str) -> ReviewDetail | None:
    """The review recorded with ``uid``, in full; None when there is none."""
    rows = recent_reviews(conn, schema.reviews.c.uid == uid, 1)
    return load_details(conn, rows)[0] if rows else None


def render_review_page(store: Store, uid: str, *, redactor: Redactor | None = None) -> str | None:
    """A page of its own for the review recorded with ``uid``; None when the store has no such review."""
    with store.connect() as conn:
        detail = load_review(conn, uid)
    if detail is None:
        return None
    redactor = redactor or Redactor()
    detail = redactor.scrub(detail)
    page = environment().get_template("review_page.html.j2").render(d=detail, store=store.shown)
    return redactor.redact(page)
