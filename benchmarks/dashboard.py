"""`codejury dashboard` over 100,000 recorded reviews.

    python benchmarks/dashboard.py [--reviews N] [--store PATH] [--smoke]

1. Seeds N reviews (default 100,000) over 30 days into a fresh SQLite store with the stats
   benchmark's seeding (``benchmarks/stats.py``), then records 50 complete reviews (findings with
   bodies, a failed reviewer, skipped files) as the newest, so the page embeds real full reviews.
   ``--store PATH`` keeps the store there and reuses it on the next run.
2. Times ``codejury dashboard --since all -o page.html`` as a user runs it (a new process: start-up,
   imports, queries, rendering, writing), best of 3; target <= 2 s. Then ``--since 7d``.
3. Prints where the time goes in-process: each read alone (a stats table and its series over time
   come from one read), all of them at once as the command reads them, and rendering.

``--smoke``: 1,000 reviews, 10 of them complete, one command run per period; the targets are printed,
not enforced.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import func, select

from codejury.dashboard.page import dashboard_data, render_dashboard_data
from codejury.dashboard.series import (
    Series,
    acted_outcomes,
    choose_buckets,
    finding_series,
    review_series,
    token_series,
)
from codejury.record import schema
from codejury.record.stats import review_scope
from codejury.record.store import Store
from codejury.record.target import sqlite_target
from codejury.testing.dashboard_seed import showcase_record

ROOT = Path(__file__).resolve().parents[1]


def _stats_benchmark() -> object:
    spec = importlib.util.spec_from_file_location("benchmark_stats", ROOT / "benchmarks" / "stats.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seed(path: Path, n: int, full: int = 50) -> None:
    started = time.perf_counter()
    _stats_benchmark().seed_store(path, n, random.Random(16))  # type: ignore[attr-defined]
    store = Store(sqlite_target(path))
    now = datetime.now(UTC)
    for i in range(full):
        record = showcase_record(now - timedelta(minutes=5 * (full - i)))
        store.write(record.model_copy(update={"uid": f"full-{i}"}))
    store.close()
    print(f"seeding took {time.perf_counter() - started:.1f} s; store {path.stat().st_size / 1e6:.0f} MB")


def time_command(path: Path, since: str, out: Path, runs: int = 3) -> list[float]:
    command = [sys.executable, "-m", "codejury.cli", "dashboard", "--store", f"sqlite:///{path}", "--since", since]
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([*command, "-o", str(out)], capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"codejury dashboard failed ({done.returncode}): {done.stderr.strip()}")
    assert out.stat().st_size > 10_000
    return times


def breakdown(path: Path) -> str:
    store = Store(sqlite_target(path))
    now = datetime.now(UTC)
    scope = review_scope(None, None)
    reads: list[str] = []
    with store.connect() as conn:
        first = conn.execute(select(func.min(schema.reviews.c.recorded_at))).scalar_one()
        buckets = choose_buckets(first, now)
        series = Series(buckets=buckets)
        for name, read in (
            ("reviews", lambda: review_series(conn, buckets, scope, series)),
            ("findings", lambda: finding_series(conn, buckets, scope, series)),
            ("reviewer runs", lambda: token_series(conn, buckets, scope, filtered=False)),
            ("acted-on outcomes", lambda: acted_outcomes(conn, buckets, scope)),
        ):
            started = time.perf_counter()
            read()
            reads.append(f"{name} {time.perf_counter() - started:.2f} s")
    started = time.perf_counter()
    data = dashboard_data(store, now=now)
    t_data = time.perf_counter() - started
    started = time.perf_counter()
    page = render_dashboard_data(data)
    t_render = time.perf_counter() - started
    store.close()
    return (
        f"in-process: each read alone (a table and its series at once): {', '.join(reads)}; all of them on three "
        f"connections at once {t_data:.2f} s; rendering {t_render:.2f} s ({len(page) / 1e6:.1f} MB page)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, help="reviews to seed (default 100,000; 1,000 with --smoke)")
    parser.add_argument("--store", type=Path, help="keep the seeded store here (reused when it exists)")
    parser.add_argument("--smoke", action="store_true", help="smoke size: seconds, targets printed, not enforced")
    args = parser.parse_args()
    args.reviews = args.reviews or (1_000 if args.smoke else 100_000)
    if args.smoke:
        print(f"smoke size: {args.reviews:,} reviews, 10 of them complete, one command run per period")
    with tempfile.TemporaryDirectory(prefix="codejury-bench-dashboard-") as tmp:
        path = args.store or Path(tmp) / "reviews.sqlite3"
        if not path.exists():
            seed(path, args.reviews, full=10 if args.smoke else 50)
        out = Path(tmp) / "dashboard.html"
        for since in ("all", "7d"):
            times = time_command(path, since, out, runs=1 if args.smoke else 3)
            print(
                f"codejury dashboard --since {since} over {args.reviews:,} reviews (new process): best "
                f"{min(times):.2f} s, runs {', '.join(f'{t:.2f}' for t in times)} s (target <= 2 s); "
                f"page {out.stat().st_size / 1e6:.2f} MB"
            )
        print(breakdown(path))


if __name__ == "__main__":
    main()
