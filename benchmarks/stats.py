"""The review store at scale: `codejury stats` over 100,000 recorded reviews, and recording overhead.

    python benchmarks/stats.py [--reviews N] [--store PATH] [--smoke]

1. Seeds N reviews (default 100,000) into a fresh SQLite store through the store's own schema:
   30 days, three tiers, 25 repositories, changes reviewed 1-6 times, 0-5 findings and 2-7
   reviewer runs each, forge bookkeeping on re-reviews (rows written in bulk; each review's JSON
   copy is a 1 KB document). ``--store PATH`` keeps the store there and reuses it on the next run
   (the recording step adds 201 reviews to it each time).
2. Times ``codejury stats --since all --format json`` as a user runs it (a new process: start-up,
   imports, queries, rendering), best of 3; target <= 2 s.
3. Times recording one review through the store recorder into that store (record built from a
   Review and its events, queued, written, confirmed), 200 times; target <= 20 ms each.
4. Times recording against a store that is down: a PostgreSQL URL whose port accepts connections
   and never answers, and one whose port refuses them; target <= 2 s. Then closing that recorder (what
   a command's exit adds: target, no second wait on the store) and checking the daily caps against the
   silent server (target <= 2 s).

``--smoke``: 1,000 reviews, one ``codejury stats`` run, 20 recordings; the targets are printed, not enforced.
"""

from __future__ import annotations

import argparse
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from codejury.record import schema
from codejury.record.store import Store
from codejury.record.store_recorder import store_recorder
from codejury.record.target import sqlite_target
from codejury.testing import review_seed as seed

REVIEWERS = ["security", "performance", "code-quality", "documentation", "release", "agents-md", "codex"]
MODELS = ["anthropic:claude-sonnet-4-5", "anthropic:claude-haiku-4-5", "openai:gpt-5.1", "openai:gpt-5-mini"]
CATEGORIES = ["sql-injection", "n+1-query", "stale-docstring", "dead-code", "secret", "race", "missing-test"]
SEVERITIES = ["critical", "warning", "suggestion"]


def seed_store(path: Path, n: int, rng: random.Random) -> None:
    store = Store(sqlite_target(path))
    store.migrate()
    start = datetime.now(UTC).replace(tzinfo=None) - timedelta(days=30)
    reviews: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    earlier: list[dict[str, Any]] = []
    documents: list[dict[str, Any]] = []
    review_id = 0
    last_fps: list[str] = []
    while review_id < n:
        repo = f"github.com/acme/repo{rng.randrange(25)}"
        change = f"#{rng.randrange(1, 10**6)}"
        at = start + timedelta(seconds=rng.uniform(0, 29 * 86400))
        last_fps = []
        for visit in range(rng.randint(1, 6)):
            if review_id >= n:
                break
            review_id += 1
            at += timedelta(minutes=rng.uniform(5, 600))
            tier = rng.choices(["trivial", "lite", "full"], weights=[2, 5, 3])[0]
            cost = {"trivial": 0.01, "lite": 0.05, "full": 0.4}[tier] * rng.lognormvariate(0, 0.6)
            reviews.append({
                "id": review_id, "uid": f"bench-{review_id}", "recorded_at": at, "repository": repo,
                "change_id": change, "head_sha": f"{rng.getrandbits(160):040x}", "tier": tier,
                "verdict": rng.choice(["approved", "approved_with_comments", "requested_changes"]), "judged": True,
                "break_glass": rng.random() < 0.003, "break_glass_by": [], "requests": 10, "input_tokens": 40000,
                "output_tokens": 3000, "cache_read_tokens": 20000, "cache_write_tokens": 4000, "cost_usd": cost,
                "duration_s": rng.lognormvariate(4, 0.5), "failed_reviewers": 0, "failbacks": int(rng.random() < 0.02),
                "changed_since_known": visit > 0,
            })  # fmt: skip
            documents.append({"review_id": review_id, "review": {"verdict": "approved", "summary": "s" * 1000}})
            for name in rng.sample(REVIEWERS, rng.randint(2, 7)):
                failed = rng.random() < 0.01
                runs.append({
                    "review_id": review_id, "name": name, "role": "reviewer", "model": rng.choice(MODELS),
                    "status": "failed" if failed else "ok", "error": None, "requests": 3, "input_tokens": 8000,
                    "output_tokens": 600, "cache_read_tokens": rng.randrange(0, 8000), "cache_write_tokens": 500,
                    "cost_usd": 0.02, "duration_s": 20.0,
                })  # fmt: skip
                reviews[-1]["failed_reviewers"] += int(failed)
            if last_fps:
                for fp in last_fps:
                    status = rng.choice(["fixed", "open", "dismissed"])
                    earlier.append({"review_id": review_id, "fingerprint": fp, "status": status, "disputed": False})
            last_fps = []
            for k in range(rng.choices(range(6), weights=[4, 3, 2, 1, 1, 1])[0]):
                fp = f"{rng.getrandbits(64):016x}"
                last_fps.append(fp)
                findings.append({
                    "review_id": review_id, "fingerprint": fp, "reviewer": rng.choice(REVIEWERS),
                    "category": rng.choice(CATEGORIES), "severity": rng.choice(SEVERITIES), "path": f"src/m{k}.py",
                    "start_line": 10 * k + 1, "end_line": 10 * k + 3, "title": "A finding", "evidence": [],
                    "verified": None, "advisory": False,
                })  # fmt: skip
    with store.engine.begin() as conn:
        for table, rows in ((schema.reviews, reviews), (schema.reviewer_runs, runs), (schema.findings, findings),
                            (schema.earlier_findings, earlier), (schema.review_documents, documents)):  # fmt: skip
            for i in range(0, len(rows), 20_000):
                conn.execute(table.insert(), rows[i : i + 20_000])
    store.close()
    print(f"seeded {len(reviews):,} reviews, {len(runs):,} reviewer runs, {len(findings):,} findings")


def time_stats_command(path: Path, runs: int = 3) -> list[float]:
    command = [sys.executable, "-m", "codejury.cli", "stats", "--store", f"sqlite:///{path}", "--since", "all"]
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([*command, "--format", "json"], capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - started)
    assert '"reviews": ' in done.stdout
    return times


def time_recording(path: Path, n: int = 200) -> tuple[float, list[float]]:
    recorder = store_recorder(f"sqlite:///{path}", {})
    assert recorder is not None
    review = seed.review(findings=[seed.finding(line=i) for i in (3, 9, 14)],
                         reviewers=[seed.reviewer(r, MODELS[0]) for r in REVIEWERS[:5]])  # fmt: skip
    events = seed.events(failbacks=1, breaker=True, earlier={"0123456789abcdef": "fixed"}, changed_since=["a.py"])
    started = time.perf_counter()
    recorder.record(review, events)
    first = time.perf_counter() - started
    times = []
    for _ in range(n):
        started = time.perf_counter()
        recorder.record(review, events)
        times.append(time.perf_counter() - started)
        assert recorder.write_error is None, recorder.write_error
    recorder.close()
    return first, times


def time_store_down() -> tuple[float, float, str | None, float, float]:
    """Recording into a silent and a refusing PostgreSQL, closing the first recorder, checking the caps on it."""
    from codejury.config import DailyLimits
    from codejury.record.limits import check_caps

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts (the kernel completes the handshake) and never answers
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    refused_port = closed.getsockname()[1]
    closed.close()
    results = []
    closing = 0.0
    for port in (silent.getsockname()[1], refused_port):
        recorder = store_recorder(f"postgresql://codejury@127.0.0.1:{port}/reviews", {})
        assert recorder is not None
        started = time.perf_counter()
        recorder.record(seed.review(), seed.events())
        results.append((time.perf_counter() - started, recorder.write_error))
        if not closing:
            started = time.perf_counter()
            recorder.close()
            closing = time.perf_counter() - started
    url = f"postgresql://codejury@127.0.0.1:{silent.getsockname()[1]}/reviews"
    started = time.perf_counter()
    checked = check_caps(DailyLimits(reviews_per_day=1), url, "acme/shop", datetime.now(UTC))
    caps = time.perf_counter() - started
    assert checked.unchecked is not None, "a silent store left the caps checked"
    silent.close()
    return results[0][0], results[1][0], results[0][1], closing, caps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, help="reviews to seed (default 100,000; 1,000 with --smoke)")
    parser.add_argument("--store", type=Path, help="keep the seeded store here (reused when it exists)")
    parser.add_argument("--smoke", action="store_true", help="smoke size: seconds, targets printed, not enforced")
    args = parser.parse_args()
    args.reviews = args.reviews or (1_000 if args.smoke else 100_000)
    if args.smoke:
        print(f"smoke size: {args.reviews:,} reviews, one stats run, 20 recordings")
    rng = random.Random(16)
    with tempfile.TemporaryDirectory(prefix="codejury-bench-stats-") as tmp:
        path = args.store or Path(tmp) / "reviews.sqlite3"
        if not path.exists():
            started = time.perf_counter()
            seed_store(path, args.reviews, rng)
            print(f"seeding took {time.perf_counter() - started:.1f} s; store {path.stat().st_size / 1e6:.0f} MB")
        stats_times = time_stats_command(path, runs=1 if args.smoke else 3)
        print(f"codejury stats over {args.reviews:,} reviews (new process, JSON): best {min(stats_times):.2f} s, "
              f"runs {', '.join(f'{t:.2f}' for t in stats_times)} s (target <= 2 s)")  # fmt: skip
        first, times = time_recording(path, n=20 if args.smoke else 200)
        ms = sorted(t * 1000 for t in times)
        print(
            f"recording one review into that store: median {statistics.median(ms):.1f} ms, "
            f"p95 {ms[int(len(ms) * 0.95) - 1]:.1f} ms, max {ms[-1]:.1f} ms over {len(ms)} "
            f"(first, opening the store: {first * 1000:.0f} ms) (target <= 20 ms)"
        )
    hung, refused, why, closing, caps = time_store_down()
    print(f"recording with the store down: hung server {hung:.2f} s ({why}); refused port {refused:.2f} s "
          "(target <= 2 s)")  # fmt: skip
    print(f"closing the recorder with the store down: {closing * 1000:.1f} ms (target: no second wait)")
    print(f"checking the daily caps against the hung server: {caps:.2f} s (target <= 2 s)")


if __name__ == "__main__":
    main()
