"""``codejury stats``: the tables over seeded records, checked against numbers computed by hand."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

from codejury.cli import cli
from codejury.errors import InputError
from codejury.fingerprint import fingerprint
from codejury.record.stats import Stats, compute_stats, parse_since, percentile
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from codejury.testing import review_seed as seed

R2, R3 = "github.com/acme/shop", "github.com/acme/tools"
M1, COORD = "anthropic:claude-sonnet-4-5", "anthropic:claude-opus-4-6"
# (tier, cost, duration, change id, repository)
SEEDS = [
    ("full", 0.10, 10.0, "#1", R2),
    ("full", 0.20, 20.0, "#1", R2),
    ("full", 0.30, 30.0, "#2", R2),
    ("full", 0.40, 40.0, "#3", R2),
    ("full", 1.00, 100.0, "#4", R2),
    ("lite", 0.02, 5.0, "#5", R2),
    ("lite", 0.04, 15.0, "#6", R3),
    ("trivial", 0.01, 2.0, "", R2),
]


def seeded(url: str) -> Store:
    store = Store(parse_record_url(url))
    for i, (tier, cost, duration, change, repo) in enumerate(SEEDS):
        reviewers = [seed.reviewer("security", M1, tokens=1000, cache_read=600, cache_write=100)]
        findings = []
        if i == 0:
            findings = [
                seed.finding(line=10),
                seed.finding(line=20, title="Another injection"),
                seed.finding("documentation", "README.md", 1, severity="suggestion", category="docs", title="Stale"),
            ]
            reviewers.append(seed.reviewer("performance", M1, status="failed", tokens=0, cache_read=0))
        if i == 1:
            findings = [seed.finding(severity="warning", title="Loose check", category="auth")]
        kwargs = {"tier": tier, "cost": cost, "duration": duration, "findings": findings, "reviewers": reviewers,
                  "break_glass": i == 3}  # fmt: skip
        failbacks = {2: 2, 4: 1}.get(i, 0)
        at = seed.T0 + seed.hours(i)
        store.write(seed.record(at, review_kwargs=kwargs, repository=repo, change_id=change, failbacks=failbacks))
    old = seed.record(datetime(2026, 9, 1, tzinfo=UTC), review_kwargs={"cost": 50.0}, repository=R2, change_id="#0")
    store.write(old)  # before --since: in no table
    return store


def stats_of(url: str, **kwargs: object) -> Stats:
    store = seeded(url)
    try:
        with store.connect() as conn:
            return compute_stats(conn, since=datetime(2026, 10, 1, tzinfo=UTC), **kwargs)  # type: ignore[arg-type]
    finally:
        store.close()


def test_percentiles_interpolate_between_the_closest_ranks() -> None:
    values = [0.1, 0.2, 0.3, 0.4, 1.0]
    assert percentile(values, 0.5) == 0.3
    assert percentile(values, 0.9) == pytest.approx(0.76)  # rank 3.6: 0.4 + 0.6 × (1.0 − 0.4)
    assert percentile([], 0.5) is None and percentile([7.0], 0.99) == 7.0


def test_every_table_matches_the_numbers_computed_by_hand(store_url: str) -> None:
    stats = stats_of(store_url)
    assert stats.reviews == 8  # the September review is before --since
    o = stats.overview
    assert (o.changes, o.repositories) == (7, 2)  # #1 twice; the review without a change id is its own change
    rows = {row.tier: row for row in stats.cost_duration.rows}
    assert [row.tier for row in stats.cost_duration.rows] == ["trivial", "lite", "full", "all"]
    full, lite, every = rows["full"], rows["lite"], rows["all"]
    assert full.reviews == 5 and full.cost_total_usd == pytest.approx(2.0)
    assert (full.cost_usd.median, full.cost_usd.p90, full.cost_usd.p95, full.cost_usd.p99) == pytest.approx(
        (0.3, 0.76, 0.88, 0.976)
    )
    assert (full.duration_s.median, full.duration_s.p90, full.duration_s.p95, full.duration_s.p99) == pytest.approx(
        (30.0, 76.0, 88.0, 97.6)
    )
    assert (lite.cost_usd.median, lite.cost_usd.p90, lite.cost_usd.p99) == pytest.approx((0.03, 0.038, 0.0398))
    # all 8 costs sorted: 0.01 0.02 0.04 0.1 0.2 0.3 0.4 1.0 → median (0.1 + 0.2) / 2; P90 at rank 6.3
    assert (every.cost_usd.median, every.cost_usd.p90, every.cost_usd.p95, every.cost_usd.p99) == pytest.approx(
        (0.15, 0.58, 0.79, 0.958)
    )
    by_reviewer = {row.reviewer: row for row in stats.findings_by_reviewer.rows}
    assert by_reviewer["security"].model_dump() == {
        "reviewer": "security", "critical": 2, "warning": 1, "suggestion": 0, "total": 3,
    }  # fmt: skip
    assert (by_reviewer["documentation"].suggestion, by_reviewer["documentation"].total) == (1, 1)
    tokens = {row.model: row for row in stats.tokens_by_model.rows}
    assert (tokens[M1].runs, tokens[M1].input_tokens, tokens[M1].cache_read_tokens) == (9, 8000, 4800)
    assert tokens[M1].cache_write_tokens == 800 and tokens[M1].cache_hit_rate == 0.6
    assert (tokens[COORD].runs, tokens[COORD].input_tokens, tokens[COORD].cache_hit_rate) == (8, 4000, 0.0)
    assert (stats.break_glass.break_glass, stats.break_glass.rate) == (1, 0.125)
    rel = stats.reliability
    assert (rel.reviewer_runs, rel.failed_runs, rel.failed_reviewer_rate) == (9, 1, 0.1111)
    assert (rel.reviews_with_failed_reviewer, rel.failbacks, rel.reviews_with_failback, rel.failback_rate) == (
        1, 3, 2, 0.25,
    )  # fmt: skip
    assert [(r.reviewer, r.failed) for r in rel.by_reviewer] == [("performance", 1), ("security", 0)]


def test_repo_narrows_every_table(store_url: str) -> None:
    stats = stats_of(store_url, repository=R3)
    assert stats.reviews == 1 and stats.overview.repositories == 1
    assert [row.tier for row in stats.cost_duration.rows] == ["lite", "all"]
    assert stats.findings_by_reviewer.rows == []


def test_acted_on_follows_each_finding_to_the_next_review_of_its_change(store_url: str) -> None:
    sql = seed.finding("security", "app/db.py", 10)
    n1 = seed.finding("performance", "app/orders.py", 5, title="Query in a loop", category="n+1", severity="warning")
    stale = seed.finding("documentation", "README.md", 2, title="Stale", category="docs", severity="suggestion")
    key = seed.finding("security", "app/keys.py", 3, title="Committed key", category="secret")
    quality = seed.finding(
        "code-quality", "app/a.py", 8, title="Dead code", category="dead-code", severity="suggestion"
    )
    fps = {f.title: fingerprint(f) for f in (sql, n1, stale, key, quality)}
    plan = [
        # change !7: a forge re-review (B) says what became of A's findings; C is a local run, no bookkeeping
        ("!7", "a", [sql, n1, stale], None, None),
        ("!7", "b", [n1], {fps[sql.title]: "fixed", fps[n1.title]: "open", fps[stale.title]: "dismissed"}, None),
        ("!7", "c", [], None, None),  # n1 gone on a new head, files unknown → acted on
        ("!8", "x", [key], None, None),
        ("!8", "x", [], None, None),  # the same head reviewed again: nothing was done
        ("!9", "e1", [quality], None, None),
        ("!9", "e2", [], None, ["app/b.py"]),  # gone, but its file did not change: not acted on
        ("!10", "z", [seed.finding("security", "app/z.py", 1, title="Never reviewed again")], None, None),
    ]
    store = Store(parse_record_url(store_url))
    try:
        for i, (change, head, findings, earlier, changed) in enumerate(plan):
            store.write(
                seed.record(
                    seed.T0 + seed.hours(i),
                    review_kwargs={"findings": findings},
                    change_id=change,
                    head_sha=head * 4,
                    earlier=earlier,
                    changed_since=changed,
                )  # fmt: skip
            )
        with store.connect() as conn:
            acted = compute_stats(conn).acted_on
    finally:
        store.close()
    rows = {r.reviewer: (r.published, r.followed_up, r.acted_on, r.dismissed) for r in acted.by_reviewer}
    assert rows == {
        "security": (3, 2, 1, 0),  # sql fixed; the key re-reviewed on the same head; one never followed up
        "performance": (2, 2, 1, 0),  # open at B, then gone at C
        "documentation": (1, 1, 0, 1),
        "code-quality": (1, 1, 0, 0),
    }
    security = next(r for r in acted.by_reviewer if r.reviewer == "security")
    assert (security.acted_on_rate, security.dismissed_rate) == (0.5, 0.0)
    by_category = {(r.reviewer, r.category): (r.published, r.acted_on) for r in acted.by_reviewer_category}
    assert by_category[("security", "sql-injection")] == (2, 1) and by_category[("security", "secret")] == (1, 0)


def run_stats(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["stats", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_command_prints_json_with_a_reviews_count_and_one_object_per_table(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/reviews.sqlite3"
    seeded(url).close()
    code, out, err = run_stats("--store", url, "--since", "2026-10-01", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["reviews"] == 8
    tables = {"overview", "cost_duration", "findings_by_reviewer", "tokens_by_model", "break_glass", "reliability",
              "acted_on"}  # fmt: skip
    assert tables <= set(data) and all(isinstance(data[t], dict) for t in tables)
    assert data["cost_duration"]["rows"][-1]["cost_usd"]["p90"] == pytest.approx(0.58)


def test_markdown_and_terminal_show_the_tables(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path}/reviews.sqlite3"
    seeded(url).close()
    code, out, err = run_stats("--store", url, "--since", "2026-10-01", "--format", "markdown")
    assert code == 0, err
    assert "## Cost per review by tier" in out and "| full | 5 | $2.0000 | $0.3000 | $0.7600 |" in out
    assert "## Acted-on rate by reviewer" in out and "## Tokens by model" in out
    monkeypatch.setenv("CODEJURY_RECORD_URL", url)  # no --store: the configured store
    code, out, err = run_stats("--since", "2026-10-01", "--format", "terminal")
    assert code == 0, err
    assert "Cost per review by tier" in out and "8 reviews since 2026-10-01" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "yesterday"], "--since expects a duration (30d, 12h, 2w), a date (2026-11-01) or 'all'"),
        (["--store", "mysql://root:pw@db/x"], "--store expects sqlite:///PATH, postgresql://HOST/DB"),
        (["--store", "none"], "recording is off"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, tmp_path: object) -> None:
    code, out, err = run_stats(*args)
    assert code == 2 and out == ""
    assert err.startswith(f"codejury: {message}") and err.count("\n") == 1 and "pw@" not in err


def test_a_store_that_is_not_there_is_one_line(tmp_path: object) -> None:
    code, _, err = run_stats("--store", f"sqlite:///{tmp_path}/none/reviews.sqlite3")
    assert code == 2 and "no review has been recorded there yet" in err and err.count("\n") == 1


def test_since_reads_durations_dates_and_all() -> None:
    now = datetime(2026, 11, 24, 12, tzinfo=UTC)
    assert parse_since("30d", now) == datetime(2026, 10, 25, 12, tzinfo=UTC)
    assert parse_since("12h", now) == datetime(2026, 11, 24, 0, tzinfo=UTC)
    assert parse_since("2026-11-01", now) == datetime(2026, 11, 1, tzinfo=UTC)
    assert parse_since("all", now) is None
    with pytest.raises(InputError):
        parse_since("last week", now)
