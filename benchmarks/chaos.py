"""Chaos benchmark (``make chaos``): whole reviews against the fault-injection provider server.

Runs the same REVIEWS reviews twice through the real OpenAI SDK against the loopback fake
provider: once fault-free, once with a seeded random mix of faults (error statuses with and
without Retry-After, quota, hangs, slow drips, dropped connections, malformed JSON,
truncated output). Every reviewer has a failback chain of two models on the same provider.
Prints completion rate, findings lost against the fault-free run, p50/p99 wall time,
breaker transitions and reviews that ended without approval because nothing could judge
them. Exit status 1 when a finding of a reviewer that succeeded is missing from its review.
Usage: python benchmarks/chaos.py [--reviews N] [--seed S] [--fault-rate R] [--smoke]
(``--smoke``: 3 reviews.)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

KEY = "chaos-key-0000"


def settings_for(base_url: str, stall_s: float) -> Any:
    from codejury_fakes.panel_replies import REVIEWERS

    from codejury.config import Settings, merge_file_table

    names = (*REVIEWERS, "coordinator")
    table: dict[str, Any] = {
        "providers": {"chaos": {"base_url": base_url, "api_key_env": "CHAOS_KEY"}},
        "models": {"top": "chaos:coordinator-a", "standard": "chaos:code_quality-a", "light": "chaos:documentation-a"},
        "reviewers": {n: {"model": f"chaos:{n}-a"} for n in names},
        "failback": {
            **{f"chaos:{n}-a": f"chaos:{n}-b" for n in names},
            **{f"chaos:{n}-b": "" for n in names},  # "" ends the chain
        },
        "stall_timeout_s": stall_s,
        "heartbeat_s": 600,
        "min_retry_window_s": 0,
        "breaker_cooldown_s": 5,
        "reviewer_timeout_s": 30,
        "overall_timeout_s": 60,
    }
    return merge_file_table(Settings(), table, "chaos")


async def one_review(change: Any, settings: Any, events: Any) -> tuple[Any, float]:
    from codejury.errors import ReviewFailed
    from codejury.pipeline import ReviewOptions, review
    from codejury.plugins import Plugins, make_plugin_manager

    opts = ReviewOptions(
        settings=settings,
        env={"CHAOS_KEY": KEY},
        events=events,
        warn=lambda _m: None,
        plugins=Plugins(make_plugin_manager()),
    )
    started = time.monotonic()
    try:
        result = await review(change, opts)
    except ReviewFailed:
        result = None
    return result, time.monotonic() - started


async def run(reviews: int, seed: int, rate: float) -> int:
    """The fault-free run, then the run under faults, on one change in a temporary repository removed after."""
    with tempfile.TemporaryDirectory(prefix="codejury-chaos-") as folder:
        return await _runs(Path(folder), reviews, seed, rate)


async def _runs(tmp: Path, reviews: int, seed: int, rate: float) -> int:
    from codejury_fakes.panel_replies import PATH, healthy
    from codejury_fakes.provider_server import FakeProviderServer, RandomFaults, default_faults

    from codejury.models import registry
    from codejury.record.events import EventLog
    from codejury.testing.changes import AUTH_NEW, AUTH_OLD, make_change

    kinds = [
        "rate_limited",
        "quota",
        "unavailable",
        "overloaded",
        "server_error",
        "hang",
        "slow",
        "drop",
        "malformed",
        "truncated",
    ]
    rates = {k: rate / len(kinds) for k in kinds}
    change = make_change(tmp, {PATH: (AUTH_OLD, AUTH_NEW)})
    outcomes: dict[str, list[tuple[Any, float]]] = {}
    transitions: list[dict[str, Any]] = []
    for label, fault_rates in (("fault-free", {}), ("faults", rates)):
        registry.clear_model_cache()
        with FakeProviderServer() as server:
            faults = RandomFaults(seed, fault_rates, healthy, faults=default_faults(hang_s=30.0))
            server.script_source("*", faults)
            settings = settings_for(server.openai_base_url, stall_s=1.0)
            results = []
            with EventLog(None, run_id=label) as events:
                for _ in range(reviews):
                    results.append(await one_review(change, settings, events))
                if label == "faults":
                    transitions = [e for e in events.events if e["type"] == "breaker"]
            await registry.close_cached_models()
            outcomes[label] = results
            if label == "faults":
                print(f"faults served: {dict(sorted(faults.counts().items()))}")
    clean = [r for r, _ in outcomes["fault-free"]]
    faulty = outcomes["faults"]
    completed = [r for r, _ in faulty if r is not None]
    lost = failed_reviewer_findings = 0
    for (ref, _), (got, _) in zip(outcomes["fault-free"], faulty, strict=True):
        expected = {(f.reviewer, f.title) for f in ref.findings} if ref else set()
        if got is None:
            failed_reviewer_findings += len(expected)
            continue
        ok = {r.name for r in got.reviewers if r.status == "ok"}
        present = {(f.reviewer, f.title) for f in got.findings}
        for reviewer, title in expected:
            if (reviewer, title) in present:
                continue
            if reviewer in ok:
                lost += 1  # a healthy reviewer's finding missing from the review: must never happen
            else:
                failed_reviewer_findings += 1
    walls = sorted(w for _, w in faulty)
    unjudged = sum(1 for r in completed if not r.judged)
    no_approval = sum(1 for r in completed if not r.judged and r.verdict not in ("approved", "approved_with_comments"))
    print(f"reviews: {reviews} (seed {seed}, fault rate {rate:.0%} per request, chains of 2 models per reviewer)")
    print(
        f"completion rate: {len(completed)}/{reviews} ({len(completed) / reviews:.0%}); fault-free run: "
        f"{sum(1 for r in clean if r is not None)}/{reviews}"
    )
    print(f"findings lost from reviewers that succeeded: {lost} (must be 0)")
    print(
        f"findings missing because their reviewer failed after its chain (listed as failed): {failed_reviewer_findings}"
    )
    p99 = walls[min(len(walls) - 1, int(len(walls) * 0.99))]
    print(f"wall time per review: p50 {statistics.median(walls):.2f} s, p99 {p99:.2f} s, max {walls[-1]:.2f} s")
    print(f"breaker transitions: {len(transitions)}")
    for t in transitions[:10]:
        print(f"  {t.get('model')}: {t.get('from_state')} -> {t.get('to_state')}")
    print(
        f"reviews published unjudged (coordinator chain exhausted): {unjudged}, of which without approval: "
        f"{no_approval}"
    )
    return 1 if lost else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, help="reviews in each run (default 50; 3 with --smoke)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fault-rate", type=float, default=0.3)
    parser.add_argument("--smoke", action="store_true", help="smoke size: seconds")
    args = parser.parse_args()
    reviews = args.reviews or (3 if args.smoke else 50)
    if args.smoke:
        print(f"smoke size: {reviews} reviews")
    from pydantic_ai import models

    models.ALLOW_MODEL_REQUESTS = True
    return asyncio.run(run(reviews, args.seed, args.fault_rate))


if __name__ == "__main__":
    raise SystemExit(main())
