"""Load benchmark of ``codejury serve`` (part of ``make bench``): webhook bursts against the embedded queue.

``codejury serve`` runs as its own process (the command itself, on loopback, with its SQLite queue
and two review runners: ``--concurrency 2``), against the fake GitLab of this process and the
scripted model (``--plugin codejury.testing.scripted``); the deliveries are sent from here, as a
forge sends them from another machine. 10 merge requests
receive 20 pushes each; every push is made on the fake first, then its ``Merge Request Hook``
is delivered. With the 200 pushes go 200 deliveries that start no review (edited titles,
comments without a command) and 100 replays of earlier deliveries (same ``Idempotency-Key``):
500 deliveries, 20% duplicates, sent in bursts of 25 at once.

Checked and printed: deliveries lost (a unique delivery not answered 2xx, or a replay queued
again: a replay is answered ``duplicate``, or ``skipped`` again when it asks for no review),
reviews run against pushes made (coalescing), duplicate comments (a second summary on a merge
request, or two of codejury's open threads with the same finding marker), webhook response
times (p50, p99, max; the target is p99 <= 100 ms), and whether every merge request ends
reviewed at its latest head. Exit status 1 when a target is missed.

``--smoke``: 2 merge requests, 3 pushes each, bursts of 5 (15 deliveries); the p99 target is printed,
not enforced, while a delivery lost, a duplicate or a merge request left behind still exits 1.

Usage: python benchmarks/service.py [--mrs N] [--pushes N] [--burst N] [--seed N] [--smoke]
(``--serve-child PORT`` is the service's own process, started by the benchmark.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codejury_fakes.gitlab import FakeGitLab

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOKEN = "gl-hook-token-bench"
OLD = "".join(f"line {n}\n" for n in range(1, 31))
P99_TARGET_MS = 100.0
_FINDING_MARKER = re.compile(r"<!-- codejury:finding v1 (\S+) -->")


def merge_request_event(base: str, iid: int, head: str, *, new_commits: bool) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "iid": iid,
        "url": f"{base}/acme/widgets/-/merge_requests/{iid}",
        "action": "update",
        "state": "opened",
        "last_commit": {"id": head},
    }
    if new_commits:
        attrs["oldrev"] = "0" * 40
    return {
        "object_kind": "merge_request",
        "user": {"id": 1, "username": "alice"},
        "project": {"path_with_namespace": "acme/widgets"},
        "object_attributes": attrs,
    }


def note_event(base: str, iid: int, note_id: int) -> dict[str, Any]:
    return {
        "object_kind": "note",
        "user": {"id": 2, "username": "bob"},
        "project": {"path_with_namespace": "acme/widgets"},
        "object_attributes": {"id": note_id, "note": "Nice.", "noteable_type": "MergeRequest", "action": "create"},
        "merge_request": {"iid": iid, "url": f"{base}/acme/widgets/-/merge_requests/{iid}", "state": "opened"},
    }


def delivery(payload: dict[str, Any], event: str) -> tuple[bytes, dict[str, str]]:
    headers = {
        "X-Gitlab-Event": event,
        "X-Gitlab-Token": TOKEN,
        "Idempotency-Key": str(uuid.uuid4()),
        "Content-Type": "application/json",
    }
    return json.dumps(payload).encode(), headers


SERVE_FLAGS = ("--concurrency", "2", "--plugin", "codejury.testing.scripted", "--model", "scripted:reviewer",
               "--model-for", "coordinator=scripted:coordinator")  # fmt: skip


def serve_child(port: int) -> None:
    """The service's process: ``codejury serve`` with the scripted model active (``--serve-child PORT``)."""
    import functools

    from codejury.cli import cli
    from codejury.forges.gitlab import adapter as gitlab_mod
    from codejury.forges.gitlab.api import GitLabAPI
    from codejury.testing.scripted import Final, Raw, ScriptedResolver, finding

    found = finding("app.py", 5, "Unchecked input", severity="warning", category="validation")
    resolver = ScriptedResolver({"reviewer": [Final([found])], "coordinator": [Raw({"decisions": []})]})
    setattr(gitlab_mod, "GitLabAPI", functools.partial(GitLabAPI, backoff_s=0.001))  # noqa: B010  # fast retries
    with resolver.active():
        cli.main(["serve", "--host", "127.0.0.1", "--port", str(port), *SERVE_FLAGS], prog_name="codejury")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_child(port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, __file__, "--serve-child", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT
        )


def log_tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]


async def wait_ready(child: subprocess.Popen[bytes], base: str, log: Path) -> None:
    """Until ``codejury serve`` (``child``) answers ``/readyz`` at ``base``; RuntimeError with its log's tail
    when it exits or is not ready in 60 s."""
    import httpx2

    async with httpx2.AsyncClient(base_url=base, timeout=2) as client:
        deadline = time.monotonic() + 60
        while True:
            if child.poll() is not None:
                raise RuntimeError(f"codejury serve exited {child.returncode}:\n{log_tail(log)}")
            with contextlib.suppress(httpx2.HTTPError):
                if (await client.get("/readyz")).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"codejury serve did not become ready:\n{log_tail(log)}")
            await asyncio.sleep(0.1)


def stop_child(child: subprocess.Popen[bytes], sig: int = signal.SIGINT) -> None:
    """``sig`` to ``child`` if it still runs, then SIGKILL after 30 s."""
    if child.poll() is None:
        child.send_signal(sig)
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def published_state(gl: FakeGitLab, iids: Iterable[int], latest: Callable[[int], str]) -> tuple[list[int], int]:
    """The merge requests whose bot summary is missing or not at ``latest(iid)``, and the comments posted
    twice (a second summary, or two open threads carrying one finding marker)."""
    from codejury_fakes.gitlab import FakeGitLab

    from codejury.forges.markers import parse_summary

    stale: list[int] = []
    duplicates = 0
    for iid in iids:
        bot = [n for n in gl.notes(1, iid, system=False) if n["author"]["username"] == FakeGitLab.BOT]
        summaries = [s for s in (parse_summary(n["body"]) for n in bot) if s is not None]
        duplicates += max(0, len(summaries) - 1)
        if not summaries or summaries[0].head_sha != latest(iid):
            stale.append(iid)
        open_markers = Counter(
            m[1]
            for d in gl.discussions(1, iid)
            for n in d["notes"][:1]
            if n["author"]["username"] == FakeGitLab.BOT and not n.get("resolved")
            for m in [_FINDING_MARKER.search(n["body"])]
            if m
        )
        duplicates += sum(c - 1 for c in open_markers.values())
    return stale, duplicates


@contextlib.asynccontextmanager
async def serving(env: dict[str, str], log: Path) -> AsyncIterator[str]:
    """``codejury serve`` in a child process; yields its base URL once ``/readyz`` answers, stops it after."""
    port = free_port()
    child = start_child(port, env, log)
    base = f"http://127.0.0.1:{port}"
    try:
        await wait_ready(child, base, log)
        yield base
    finally:
        stop_child(child)


def job_counts(database: Path) -> dict[str, int]:
    """The service's review jobs by state, read from its SQLite file."""
    with contextlib.closing(sqlite3.connect(database, timeout=10)) as conn:
        rows = conn.execute("SELECT state, COUNT(*) FROM codejury_review_jobs GROUP BY state").fetchall()
    return {str(state): int(n) for state, n in rows}


async def post_delivery(base: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any], float]:
    """One delivery over a fresh HTTP/1.1 connection, as a forge sends it: (status, JSON answer, milliseconds).

    Written on the socket directly: a general HTTP client costs about a millisecond of this process's
    CPU per request, so with 50 sent at once the last would leave ~50 ms after the first and the
    figure would time the client. The clock runs from the request's bytes to the answer's last byte."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    request = f"POST /webhooks/gitlab HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\n"
    request += f"Connection: close\r\n{head}\r\n"
    try:
        t0 = time.perf_counter()
        writer.write(request.encode() + body)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 30)
        took = (time.perf_counter() - t0) * 1000
    finally:
        writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    _, _, payload = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), json.loads(payload or b"{}"), took


async def run(args: argparse.Namespace) -> int:
    from codejury_fakes.gitlab import FakeGitLab

    rng = random.Random(args.seed)

    with FakeGitLab() as gl, tempfile.TemporaryDirectory() as folder:
        iids = list(range(1, args.mrs + 1))
        for iid in iids:
            gl.add_mr(1, iid, files={"app.py": (OLD, OLD.replace("line 5\n", "line five\n"))})
        database = Path(folder) / "service.sqlite3"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
            "CODEJURY_RECORD_URL": f"sqlite:///{database}",
            "CODEJURY_GITLAB_URL": gl.url,  # the forge instance the service reviews on (and sends its token to)
            "CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN,
            "CODEJURY_GITLAB_WEBHOOK_TOKEN": TOKEN,
            # the reviews' repositories are fetched into this run's folder, not the user's cache (which the
            # service walks after each fetch to keep it under its size limit: its size would change the figures)
            "CODEJURY_REPO_CACHE": str(Path(folder) / "repos"),
        }
        # the schedule: every push, as many deliveries that start no review, then replays of earlier ones
        pushes = [iid for _ in range(args.pushes) for iid in iids]
        plan: list[tuple[str, int]] = [("push", iid) for iid in pushes] + [("other", rng.choice(iids)) for _ in pushes]
        rng.shuffle(plan)
        replays = len(plan) // 4  # 20% of all deliveries
        latencies: list[float] = []
        answers: Counter[str] = Counter()
        lost: list[str] = []
        sent: list[tuple[bytes, dict[str, str]]] = []
        started = time.perf_counter()
        log = Path(folder) / "serve.log"
        async with serving(env, log) as base:

            async def post(body: bytes, headers: dict[str, str], replay: bool) -> None:
                status, answer, took = await post_delivery(base, body, headers)
                latencies.append(took)
                outcome = str(answer.get("outcome"))
                answers[outcome] += 1
                if replay and outcome not in ("duplicate", "skipped"):  # a replay never queues a second job
                    lost.append(f"replay answered {status} {outcome}")
                if not replay and not (200 <= status < 300 and outcome != "duplicate"):
                    lost.append(f"delivery answered {status} {outcome}")

            queue = [(kind, iid, False) for kind, iid in plan]
            for _ in range(replays):  # replays go in after the first bursts, at random places
                queue.insert(rng.randrange(args.burst, len(queue) + 1), ("replay", 0, True))
            for start in range(0, len(queue), args.burst):
                burst: list[tuple[bytes, dict[str, str], bool]] = []
                earlier = list(sent)  # a replay repeats a delivery of an earlier burst, already answered
                for kind, iid, replay in queue[start : start + args.burst]:
                    if replay:
                        body, headers = rng.choice(earlier)
                    elif kind == "push":
                        changed = OLD.replace("line 5\n", f"line 5 v{rng.random()}\n")  # each push rewrites line 5
                        refs = gl.push(1, iid, files={"app.py": (OLD, changed)})
                        body, headers = delivery(
                            merge_request_event(gl.url, iid, refs["head_sha"], new_commits=True), "Merge Request Hook"
                        )
                    elif rng.random() < 0.5:
                        head = gl.diff_refs(1, iid)["head_sha"]
                        body, headers = delivery(
                            merge_request_event(gl.url, iid, head, new_commits=False), "Merge Request Hook"
                        )
                    else:
                        body, headers = delivery(note_event(gl.url, iid, rng.randrange(1, 10**6)), "Note Hook")
                    if not replay:
                        sent.append((body, headers))
                    burst.append((body, headers, replay))
                await asyncio.gather(*(post(b, h, r) for b, h, r in burst))
                await asyncio.sleep(args.pause)
            sending_s = time.perf_counter() - started
            deadline = time.monotonic() + args.timeout
            while True:
                counts = job_counts(database)
                if not counts.get("waiting") and not counts.get("running"):
                    break
                if time.monotonic() > deadline:
                    print(f"timed out with jobs left: {counts}")
                    return 1
                await asyncio.sleep(0.1)
        total_s = time.perf_counter() - started

        stale, duplicates = published_state(gl, iids, lambda iid: gl.diff_refs(1, iid)["head_sha"])

    latencies.sort()
    p50 = latencies[len(latencies) // 2]
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"deliveries: {len(latencies)} ({replays} replays) in bursts of {args.burst}; answers: {dict(answers)}")
    print(f"deliveries lost: {len(lost)}" + (f" ({lost[:3]})" if lost else ""))
    print(f"reviews run: {counts.get('done', 0)} for {len(pushes)} pushes on {len(iids)} merge requests ({counts})")
    print(f"duplicate reviews or comments: {duplicates}")
    print(
        f"webhook response: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms",
        f"(target p99 <= {P99_TARGET_MS:.0f} ms)",
    )
    print(f"merge requests not reviewed at their latest head: {len(stale)} {stale or ''}".rstrip())
    print(f"time: {sending_s:.1f} s sending, {total_s:.1f} s until the queue was empty")
    ok = not lost and not duplicates and not stale and (args.smoke or p99 <= P99_TARGET_MS)
    return 0 if ok else 1


def main() -> int:
    if sys.argv[1:2] == ["--serve-child"]:
        serve_child(int(sys.argv[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mrs", type=int, help="merge requests (default 10; 2 with --smoke)")
    parser.add_argument("--pushes", type=int, help="pushes per merge request (default 20; 3 with --smoke)")
    parser.add_argument("--burst", type=int, help="deliveries sent at once (default 25; 5 with --smoke)")
    parser.add_argument("--pause", type=float, default=0.05, help="seconds between bursts")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--smoke", action="store_true", help="smoke size: seconds, the p99 target not enforced")
    args = parser.parse_args()
    for name, full, smoke in (("mrs", 10, 2), ("pushes", 20, 3), ("burst", 25, 5)):
        if getattr(args, name) is None:
            setattr(args, name, smoke if args.smoke else full)
    if args.smoke:
        print(f"smoke size: {args.mrs} merge requests, {args.pushes} pushes each, bursts of {args.burst}")
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
