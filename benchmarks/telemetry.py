"""Telemetry overhead on a scripted-model review (no real model; part of ``make bench``).

The same full-tier review (four reviewers, one tool call, two findings, the coordinator) is run
over and over, interleaved, in four set-ups: nothing configured (the default), metrics only (a
``LastRunRecorder`` writing a textfile), traces only (OTLP/HTTP to a collector on loopback), and
both. Printed: the median and p90 wall time per review of each, and the median's difference from
nothing configured; then the cost of one stage span while tracing is off; then what a collector that
refuses the spans and a Pushgateway that never answers add to one review (target: at most their 2 s
bounds, the review itself unaffected). Target: nothing
configured is the baseline itself (the only telemetry on that path is a shared no-op context per
stage), and the configured set-ups stay within a few milliseconds of it.

Usage: python benchmarks/telemetry.py [ROUNDS] [--smoke]
(``--smoke``: 3 rounds and 10,000 spans; the figures are printed, with no target enforced.)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PATH = "app/auth/users.py"
OLD = "import hashlib\n\n\ndef check(stored: str, given: str) -> bool:\n    return stored == given\n"
NEW = OLD + (
    "\n\ndef find_user(db, name):\n"
    "    query = \"SELECT name FROM users WHERE name = '%s'\" % name\n"
    "    return db.execute(query).fetchone()\n"
)


def change(tmp: Path) -> Any:
    import difflib

    from codejury.change.diffparse import parse_diff
    from codejury.change.types import ChangeMeta, ChangeSet

    root = tmp / "repo"
    (root / "app/auth").mkdir(parents=True, exist_ok=True)
    (root / PATH).write_text(NEW)
    body = "".join(
        difflib.unified_diff(OLD.splitlines(True), NEW.splitlines(True), fromfile=f"a/{PATH}", tofile=f"b/{PATH}")
    )
    diff = f"diff --git a/{PATH} b/{PATH}\nindex 1111111..2222222 100644\n{body}"
    return ChangeSet(files=parse_diff(diff), meta=ChangeMeta(title="Add lookup", repository="acme/shop"), root=root)


async def one_review(tmp: Path, *, metrics: bool, traces: str | None, push: str | None = None) -> float:
    from codejury.config import Settings
    from codejury.pipeline import ReviewOptions, review
    from codejury.plugins import Plugins
    from codejury.record.events import EventLog
    from codejury.reviewers.roster import BUILTIN_REVIEWERS
    from codejury.telemetry.last_run import LastRunRecorder
    from codejury.telemetry.tracing import start_tracing
    from codejury.testing.scripted import Raw, ScriptedResolver, ToolCall, finding

    scripts = {
        "security": [ToolCall("read_patch", {"path": PATH}), Raw({"findings": [finding(PATH, 8, "SQL injection")]})],
        "performance": [Raw({"findings": [finding(PATH, 9, "Query per call")]})],
        "coordinator": [Raw({"decisions": []})],
    }
    names = [*BUILTIN_REVIEWERS, "coordinator"]
    settings = Settings(
        models={"top": "scripted:top", "standard": "scripted:standard", "light": "scripted:light"},
        reviewer_models={n: f"scripted:{n}" for n in names},
        analyzers=False,
    )
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": traces} if traces else {}
    started = time.perf_counter()
    with EventLog(None, run_id="bench") as events:
        tracing = start_tracing(env, redact=events.redact)
        recorders = [LastRunRecorder(textfile=tmp / "codejury.prom")] if metrics else []
        if push is not None:
            recorders.append(LastRunRecorder(push_url=push, warn=lambda line: None))
        opts = ReviewOptions(
            settings=settings,
            env=env,
            events=events,
            warn=lambda line: print(line, file=sys.stderr),
            plugins=Plugins(ScriptedResolver(scripts).plugin_manager()),
            recorders=recorders,
        )
        await review(change(tmp), opts)
        if tracing is not None:
            tracing.close(lambda line: print(line, file=sys.stderr))
    return time.perf_counter() - started


def collector(status: int = 200) -> Any:
    from codejury_fakes.loopback import LoopbackServer, QuietHandler

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            self.read_body()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

    return LoopbackServer(Handler)


def silent_gateway() -> Any:
    """A Pushgateway that reads the push and never answers (until it stops)."""
    from codejury_fakes.loopback import LoopbackServer, QuietHandler

    class Handler(QuietHandler):
        def do_PUT(self) -> None:
            self.read_body()
            server.stopping.wait(60)

    server = LoopbackServer(Handler)
    return server


def faulty_peers(base: float, n: int) -> None:
    """What a refusing trace collector and a silent Pushgateway add to one review (median of ``n``)."""
    with tempfile.TemporaryDirectory() as tmp, collector(status=400) as refusing, silent_gateway() as gateway:
        traces = f"{refusing.origin}/v1/traces"
        refused = [asyncio.run(one_review(Path(tmp) / "refused", metrics=False, traces=traces)) for _ in range(n)]
        silent = [asyncio.run(one_review(Path(tmp) / "silent", metrics=False, traces=None, push=gateway.origin))
                  for _ in range(n)]  # fmt: skip
    for name, values in (("a trace collector that refuses", refused), ("a Pushgateway that never answers", silent)):
        median = statistics.median(values)
        print(f"  {name}: review median {median * 1000:.0f} ms, {(median - base) * 1000:+.0f} ms (target <= 2 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="?", type=int, help="reviews per set-up (default 30; 3 with --smoke)")
    parser.add_argument("--smoke", action="store_true", help="smoke size: seconds, figures printed")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.smoke else 30)
    if args.smoke:
        print(f"smoke size: {rounds} rounds, 10,000 spans")
    from pydantic_ai import models

    models.ALLOW_MODEL_REQUESTS = False
    setups = {
        "nothing configured": (False, False),
        "metrics": (True, False),
        "traces": (False, True),
        "both": (True, True),
    }
    times: dict[str, list[float]] = {name: [] for name in setups}
    with tempfile.TemporaryDirectory() as tmp, collector() as server:
        endpoint = f"{server.origin}/v1/traces"
        for name, (metrics, traces) in setups.items():  # warm-up: imports, first-use caches
            asyncio.run(one_review(Path(tmp) / name, metrics=metrics, traces=endpoint if traces else None))
        for _ in range(rounds):
            for name, (metrics, traces) in setups.items():
                took = asyncio.run(one_review(Path(tmp) / name, metrics=metrics, traces=endpoint if traces else None))
                times[name].append(took)
    base = statistics.median(times["nothing configured"])
    print(f"scripted full-tier review, {rounds} rounds each, interleaved")
    for name, values in times.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        diff = (median - base) * 1000
        print(f"  {name:<20} median {median * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   vs nothing {diff:+6.1f} ms")
    from codejury.telemetry.tracing import span

    n = 10_000 if args.smoke else 1_000_000
    per_call = timeit.timeit(lambda: span("filter").__enter__(), number=n) / n
    print(f"  a stage span while tracing is off: {per_call * 1e9:.0f} ns")
    faulty_peers(base, 1 if args.smoke else 3)


if __name__ == "__main__":
    main()
