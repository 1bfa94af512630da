"""Load benchmark of the distributed service (part of ``make bench``): ``codejury serve --database postgresql://…``
and ``codejury worker`` processes on a real PostgreSQL server, on loopback.

A PostgreSQL server of its own (``codejury.testing.postgres``: ``initdb`` and ``pg_ctl`` in a
temporary directory), ``codejury serve --database URL`` and 2 ``codejury worker`` processes
(``codejury.testing.scripted_worker``: the scripted model, answering at once), each a process of
its own, against the fake GitLab of this process. The fake serves one repository over git's smart
HTTP protocol: 10,000 generated source files and ``app.py``, and 10 merge requests on it; each
receives 20 pushes (a commit rewriting line 5 of ``app.py``: the first opens the merge request,
the others update it). Every push is made on the fake, then its signed ``Merge Request Hook`` is
delivered; 20 % of all deliveries are a forge's retries of earlier ones (same body, same
``Idempotency-Key``): 200 pushes, 250 deliveries, sent in bursts of 25 at once. The workers share
one repository cache (one machine) and store their reviews in the same database.

The queue keeps one waiting job per merge request: a push while one waits is coalesced into it,
and that job reviews the newest head when it starts. So a push superseded before a worker got to
it is never reviewed, by design; what must hold is that no delivery is lost, no head is reviewed
twice, and every merge request ends reviewed at its latest push.

Checked and printed: deliveries accepted and lost (a unique delivery not answered 2xx with
``queued`` or ``coalesced``, or a retry not answered ``duplicate``); reviews run, by head (from
the reviews stored in PostgreSQL: distinct heads reviewed, heads superseded, heads reviewed more
than once); duplicate comments (a second summary on a merge request, or two open threads with one
finding marker); merge requests not reviewed at their latest head; queue jobs that failed;
webhook response times (p50, p99, max, and p10 to p95), the CPU time the serving process spent per
delivery while they were sent (read from ``/proc``: the webhook path's own cost, which the response
times only show through whatever else the machine runs) and the machine's load average before and
after (every process here shares its cores: the database, the workers, the fake forge and this
one sending; on a machine busy with other work the response times measure that work too); the
repository cache, timed from
the workers' own ``git fetch`` runs (a wrapper first on their PATH logs each fetch's wall time
and the cache's size on disk after it, never its arguments or environment): the first fetch of
the repository, the update fetches of later pushes, and the cache hit rate (reviews that needed
no fetch, over reviews). Targets: webhook p99 <= 100 ms, no head reviewed twice (a review that
posts nothing new still costs a model run). Exit status 1 when a target is missed, and at any
size when a delivery is lost, a head is reviewed twice, something is posted twice, a merge request
is left behind, a job fails, or the token appears in a log.

``--smoke``: 2 merge requests, 10 pushes each (20 pushes), 1 worker, 200 files, bursts of 5; the
p99 target is printed, not enforced. Where PostgreSQL cannot be started here, one line says so; the exit
status is then 1, or 0 at smoke size.

Usage: python benchmarks/service_pg.py [--mrs N] [--pushes N] [--workers N] [--files N] [--burst N]
                                       [--duplicates F] [--seed N] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from codejury_fakes.gitlab import FakeGitLab  # noqa: E402
from index import generate  # noqa: E402

from codejury.testing.postgres import (  # noqa: E402
    PostgresServer,
    PostgresStartFailed,
    PostgresUnavailable,
    postgres_server,
)
from service import (  # noqa: E402
    P99_TARGET_MS,
    TOKEN,
    delivery,
    free_port,
    merge_request_event,
    post_delivery,
    published_state,
    stop_child,
    wait_ready,
)

ROOT = Path(__file__).resolve().parent.parent
OLD = "".join(f"VALUE_{n} = {n}\n" for n in range(1, 31))
PROJECT = "acme/widgets"

# A wrapper for git, first on the workers' PATH: each `git … fetch …` is timed, and the size of the
# repository it fetched into (its working directory: the cache's bare repository, held under the
# cache's lock while git runs) is measured after it. Nothing of its arguments or environment is logged.
GIT_WRAPPER = """#!/bin/sh
case " $* " in
  *" fetch "*) ;;
  *) exec {git} "$@" ;;
esac
start=$(date +%s.%N)
{git} "$@"
rc=$?
end=$(date +%s.%N)
size=$(find . -type f -printf '%s\\n' | awk '{{s += $1}} END {{print s + 0}}')
echo "$start $end $rc $size" >> {log}
exit $rc
"""


def _git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x",
           "PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # fmt: skip
    done = subprocess.run(["git", *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def app_text(iid: int, push: int) -> str:
    return OLD.replace("VALUE_5 = 5\n", f'VALUE_5 = "merge request {iid}, push {push}"\n')


def build_repository(root: Path, files: int, iids: list[int], pushes: int) -> tuple[str, dict[int, list[str]]]:
    """A base commit (``files`` generated files and ``app.py``) and, per merge request, a branch of ``pushes``
    commits each rewriting ``app.py``; (base sha, {iid: head shas in push order})."""
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    generate(root, files)
    (root / "app.py").write_text(OLD)
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "base")
    base = _git(root, "rev-parse", "HEAD")
    entries = [line for line in _git(root, "ls-tree", base).splitlines() if not line.endswith("\tapp.py")]
    heads: dict[int, list[str]] = {}
    for iid in iids:
        parent, heads[iid] = base, []
        for push in range(1, pushes + 1):  # plumbing: no work tree, no index of 10,000 files per commit
            blob = _git(root, "hash-object", "-w", "--stdin", stdin=app_text(iid, push))
            tree = _git(root, "mktree", stdin="\n".join([*entries, f"100644 blob {blob}\tapp.py"]) + "\n")
            parent = _git(root, "commit-tree", tree, "-p", parent, "-m", f"merge request {iid}, push {push}")
            heads[iid].append(parent)
        _git(root, "update-ref", f"refs/heads/mr-{iid}", parent)
    return base, heads


def _size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


@contextlib.asynccontextmanager
async def serving(database: str, env: dict[str, str], log: Path) -> AsyncIterator[tuple[str, int]]:
    """``codejury serve --database URL`` in a child process; yields its base URL and process id once ``/readyz``
    answers."""
    port = free_port()
    code = "import sys; from codejury.cli import cli; cli.main(sys.argv[1:], prog_name='codejury')"
    argv = [sys.executable, "-c", code, "serve", "--host", "127.0.0.1", "--port", str(port), "--database", database]
    child = _start(argv, env, log)
    base = f"http://127.0.0.1:{port}"
    try:
        await wait_ready(child, base, log)
        yield base, child.pid
    finally:
        stop_child(child)


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system) process ``pid`` has used so far, or None where ``/proc`` cannot say."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def load_average() -> str:
    """The machine's 1-minute load average and cores, to read the figures by ("unknown" where not available)."""
    try:
        return f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    except OSError:
        return "unknown"


@contextlib.contextmanager
def workers(count: int, database: str, env: dict[str, str], folder: Path) -> Iterator[list[Path]]:
    """``count`` ``codejury worker`` processes (the scripted model, no delay); yields their log files."""
    logs = [folder / f"worker-{n + 1}.log" for n in range(count)]
    procs: list[subprocess.Popen[bytes]] = []
    flags = ["--database", database, "--concurrency", "1", "--heartbeat", "1"]
    try:
        for log in logs:
            procs.append(
                _start([sys.executable, "-m", "codejury.testing.scripted_worker", "0", "--", *flags], env, log)
            )
        deadline = time.monotonic() + 120
        for proc, log in zip(procs, logs, strict=True):  # started and listening before the first delivery
            while "worker ready" not in log.read_text(errors="replace"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"codejury worker did not become ready:\n{_tail(log)}")
                time.sleep(0.1)
        yield logs
    finally:
        for proc in procs:
            stop_child(proc, signal.SIGTERM)  # each finishes the job it holds


def _start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]


def job_statuses(database: str) -> Counter[str]:
    import psycopg

    with psycopg.connect(database) as conn:
        rows = conn.execute("SELECT status, count(*) FROM procrastinate_jobs GROUP BY status").fetchall()
    return Counter({str(status): int(n) for status, n in rows})


def reviews_by_head(database: str) -> Counter[tuple[str, str]]:
    """(change id, head sha) -> how many reviews were stored for it."""
    from sqlalchemy import func, select

    from codejury.record import schema
    from codejury.record.store import Store
    from codejury.record.target import parse_record_url

    store = Store(parse_record_url(database))
    try:
        with store.connect() as conn:
            query = select(schema.reviews.c.change_id, schema.reviews.c.head_sha, func.count()).group_by(
                schema.reviews.c.change_id, schema.reviews.c.head_sha
            )
            return Counter({(str(c), str(h)): int(n) for c, h, n in conn.execute(query)})
    finally:
        store.close()


def migrate(database: str) -> None:
    """The review store's schema, before several workers write to it."""
    from codejury.record.store import Store
    from codejury.record.target import parse_record_url

    store = Store(parse_record_url(database))
    store.migrate()
    store.close()


def fetches(log: Path) -> list[tuple[float, int, int]]:
    """The workers' ``git fetch`` runs in order: (wall seconds, exit status, cache bytes after it)."""
    if not log.exists():
        return []
    rows = [line.split() for line in log.read_text().splitlines() if line.strip()]
    rows.sort(key=lambda r: float(r[0]))
    return [(float(end) - float(start), int(rc), int(size)) for start, end, rc, size in rows]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def run(args: argparse.Namespace, pg: PostgresServer, folder: Path) -> int:

    rng = random.Random(args.seed)
    iids = list(range(1, args.mrs + 1))
    t = time.perf_counter()
    base, heads = build_repository(folder / "source", args.files, iids, args.pushes)
    made_s, size_mb = time.perf_counter() - t, _size_mb(folder / "source" / ".git")
    print(f"repository: {args.files:,} files and app.py, {len(iids)} branches of {args.pushes} commits "
          f"({size_mb:.1f} MB of git objects, made in {made_s:.1f} s)")  # fmt: skip

    database = pg.new_database()
    migrate(database)
    cache, bindir, fetch_log = folder / "repo-cache", folder / "bin", folder / "fetches.log"
    bindir.mkdir()
    wrapper = bindir / "git"
    wrapper.write_text(GIT_WRAPPER.format(git=shutil.which("git") or "/usr/bin/git", log=fetch_log))
    wrapper.chmod(0o755)

    with FakeGitLab() as gl:
        gl.serve_git(PROJECT, folder / "source")
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "CODEJURY_GITLAB_URL": gl.url,  # the forge instance reviewed (and the only one its token goes to)
            "CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN,
            "CODEJURY_GITLAB_WEBHOOK_TOKEN": TOKEN,
            "CODEJURY_CACHE_DIR": str(folder / "cache"),
        }
        env.pop("CODEJURY_RECORD_URL", None)  # reviews are stored in --database
        worker_env = {**env, "CODEJURY_REPO_CACHE": str(cache), "PATH": f"{bindir}{os.pathsep}{env.get('PATH', '')}"}

        # the schedule: each merge request's pushes in order, merge requests interleaved at random; then the
        # retries of earlier deliveries, at random places after the first burst
        plan = [iid for iid in iids for _ in range(args.pushes)]
        rng.shuffle(plan)
        retries = round(len(plan) * args.duplicates / (1 - args.duplicates))
        queue: list[int | None] = list(plan)
        for _ in range(retries):
            queue.insert(rng.randrange(args.burst, len(queue) + 1), None)
        pushed: Counter[int] = Counter()
        sent: list[tuple[bytes, dict[str, str]]] = []
        latencies: list[float] = []
        answers: Counter[str] = Counter()
        lost: list[str] = []
        accepted = 0
        with workers(args.workers, database, worker_env, folder) as worker_logs:
            async with serving(database, env, folder / "serve.log") as (url, serve_pid):
                load_before = load_average()
                started, cpu_before = time.perf_counter(), cpu_seconds(serve_pid)

                async def post(body: bytes, headers: dict[str, str], retry: bool) -> None:
                    nonlocal accepted
                    status, answer, took = await post_delivery(url, body, headers)
                    latencies.append(took)
                    outcome = str(answer.get("outcome"))
                    answers[outcome] += 1
                    if retry and outcome != "duplicate":  # a retry never queues a second job
                        lost.append(f"retry answered {status} {outcome}")
                    elif not retry and (200 <= status < 300 and outcome in ("queued", "coalesced")):
                        accepted += 1
                    elif not retry:
                        lost.append(f"push answered {status} {outcome}")

                for start in range(0, len(queue), args.burst):
                    earlier = list(sent)  # a retry repeats a delivery of an earlier burst, already answered
                    burst: list[tuple[bytes, dict[str, str], bool]] = []
                    for item in queue[start : start + args.burst]:
                        if item is None:
                            body, headers = rng.choice(earlier)
                            burst.append((body, headers, True))
                            continue
                        iid = item
                        pushed[iid] += 1
                        n, head = pushed[iid], heads[iid][pushed[iid] - 1]
                        files = {"app.py": (OLD, app_text(iid, n))}
                        if n == 1:
                            gl.add_mr(1, iid, files=files, head_sha=head, base_sha=base, source_branch=f"mr-{iid}")
                        else:
                            gl.push(1, iid, files=files, head_sha=head)
                        event = merge_request_event(gl.url, iid, head, new_commits=n > 1)
                        if n == 1:
                            event["object_attributes"]["action"] = "open"
                        body, headers = delivery(event, "Merge Request Hook")
                        sent.append((body, headers))
                        burst.append((body, headers, False))
                    await asyncio.gather(*(post(b, h, r) for b, h, r in burst))
                    await asyncio.sleep(args.pause)
                sending_s = time.perf_counter() - started
                cpu_after, load_after = cpu_seconds(serve_pid), load_average()
                deadline = time.monotonic() + args.timeout
                while (statuses := job_statuses(database))["todo"] or statuses["doing"]:
                    if time.monotonic() > deadline:
                        print(f"timed out with jobs left: {dict(statuses)}")
                        return 1
                    await asyncio.sleep(0.2)
            total_s = time.perf_counter() - started
        logs = [log.read_text(errors="replace") for log in [*worker_logs, folder / "serve.log"]]
        published = sum(text.count(": reviewed and published") for text in logs)

        stale, duplicate_comments = published_state(gl, iids, lambda iid: heads[iid][-1])
        git_refused = [r for r in gl.git.requests if r.status != 200]

    by_head = reviews_by_head(database)
    reviews = sum(by_head.values())
    known = {(f"!{iid}", sha) for iid in iids for sha in heads[iid]}
    reviewed = {key for key in by_head if key in known}
    strangers = [key for key in by_head if key not in known]
    duplicate_reviews = sum(n - 1 for n in by_head.values())
    total_pushes = len(plan)
    failed_jobs = statuses["failed"] + statuses["aborted"]
    leaked = any(FakeGitLab.BOT_TOKEN in text for text in logs)
    runs = fetches(fetch_log)

    latencies.sort()
    p50, p99 = _percentile(latencies, 0.5), _percentile(latencies, 0.99)
    spread = ", ".join(f"p{round(q * 100)} {_percentile(latencies, q):.1f}" for q in (0.1, 0.25, 0.75, 0.9, 0.95))
    print(f"deliveries: {len(latencies)} ({total_pushes} pushes, {retries} retries of earlier deliveries) in bursts "
          f"of {args.burst}; answers: {dict(answers)}")  # fmt: skip
    print(f"deliveries accepted: {accepted}/{total_pushes}")
    print(f"deliveries lost: {len(lost)}" + (f" ({lost[:3]})" if lost else ""))
    print(f"reviews run: {reviews} by {args.workers} workers for {total_pushes} pushes on {len(iids)} merge requests "
          f"({published} published; jobs {dict(statuses)})")  # fmt: skip
    print(f"heads reviewed: {len(reviewed)}/{total_pushes}; superseded by a newer push "
          f"before a worker took them, not reviewed: {total_pushes - len(reviewed)}")  # fmt: skip
    print(f"duplicate reviews: {duplicate_reviews} (a head reviewed twice); duplicate comments: {duplicate_comments}")
    print(f"merge requests not reviewed at their latest head: {len(stale)} {stale or ''}".rstrip())
    print(f"webhook response: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms "
          f"(target p99 <= {P99_TARGET_MS:.0f} ms); {spread} ms")  # fmt: skip
    if cpu_before is not None and cpu_after is not None:
        print(f"serving process while sending: {(cpu_after - cpu_before) * 1000 / len(latencies):.2f} ms of CPU "
              f"per delivery; load average {load_before} before, {load_after} after")  # fmt: skip
    if runs:
        first_s, _, first_bytes = runs[0]
        print(f"first fetch of a {args.files:,}-file repository: {first_s:.2f} s, {first_bytes / 1e6:.1f} MB on disk")
        updates = [(s, after - before) for (s, _, after), (_, _, before) in zip(runs[1:], runs, strict=False)]
        if updates:
            walls = [s for s, _ in updates]
            added = sorted(b for _, b in updates)
            print(f"update fetch (1 file changed): median {_percentile(walls, 0.5):.2f} s, max {max(walls):.2f} s over "
                  f"{len(updates)} fetches, +{added[len(added) // 2] / 1e3:.1f} KB each (median); "
                  f"{runs[-1][2] / 1e6:.1f} MB on disk in all")  # fmt: skip
    hits = reviews - len(runs)
    print(f"cache hit rate: {hits}/{reviews} reviews ({hits / max(reviews, 1):.0%}) needed no fetch; "
          f"{len(runs)} fetches, {max(0, len(runs) - 1)} of them update fetches instead of a whole tree")  # fmt: skip
    print(f"time: {sending_s:.1f} s sending, {total_s:.1f} s until the queue was empty")
    problems = [
        *(["a review of a head this benchmark never pushed"] if strangers else []),
        *(["a git fetch failed"] if any(rc for _, rc, _ in runs) else []),
        *([f"{len(git_refused)} git requests refused by the forge"] if git_refused else []),
        *(["no git fetch was made: the reviews did not read the head commit's tree"] if not runs else []),
        *([f"{failed_jobs} jobs failed"] if failed_jobs else []),
        *(["the forge token appears in a log"] if leaked else []),
        *([f"{published} reviews published, {reviews} stored"] if published != reviews else []),
    ]
    for problem in problems:
        print(f"problem: {problem}")
    if failed_jobs:
        print("the workers' last lines:", *(line for text in logs[:-1] for line in text.splitlines()[-5:]), sep="\n  ")
    targets = p99 <= P99_TARGET_MS and not duplicate_reviews
    print(f"targets (webhook p99 <= {P99_TARGET_MS:.0f} ms, no head reviewed twice):", "met" if targets else "NOT met")
    ok = not lost and not duplicate_comments and not duplicate_reviews and not stale and not problems
    return 0 if ok and (args.smoke or targets) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mrs", type=int, help="merge requests (default 10; 2 with --smoke)")
    parser.add_argument("--pushes", type=int, help="pushes per merge request (default 20; 10 with --smoke)")
    parser.add_argument("--workers", type=int, help="codejury worker processes (default 2; 1 with --smoke)")
    parser.add_argument("--files", type=int, help="files in the repository (default 10,000; 200 with --smoke)")
    parser.add_argument("--burst", type=int, help="deliveries sent at once (default 25; 5 with --smoke)")
    parser.add_argument("--duplicates", type=float, default=0.2, help="share of deliveries that are retries")
    parser.add_argument("--pause", type=float, default=0.05, help="seconds between bursts")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the queue to empty")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--smoke", action="store_true", help="smoke size: seconds, the p99 target not enforced")
    args = parser.parse_args()
    for name, full, smoke in (("mrs", 10, 2), ("pushes", 20, 10), ("workers", 2, 1), ("files", 10_000, 200),
                              ("burst", 25, 5)):  # fmt: skip
        if getattr(args, name) is None:
            setattr(args, name, smoke if args.smoke else full)
    if not 0 <= args.duplicates < 1 or min(args.mrs, args.pushes, args.workers, args.files, args.burst) < 1:
        parser.error("--mrs, --pushes, --workers, --files and --burst must be at least 1; --duplicates in [0, 1)")
    if args.duplicates and args.burst >= args.mrs * args.pushes:
        parser.error("--burst must be smaller than the pushes in all (a retry repeats a delivery of an earlier burst)")
    if args.smoke:
        print(f"smoke size: {args.mrs} merge requests, {args.pushes} pushes each, {args.workers} worker, "
              f"{args.files} files, bursts of {args.burst}")  # fmt: skip
    try:
        with postgres_server() as pg, tempfile.TemporaryDirectory(prefix="codejury-service-pg-bench-") as folder:
            return asyncio.run(run(args, pg, Path(folder)))
    except PostgresUnavailable as exc:
        print(f"PostgreSQL is not available here, the service benchmark on PostgreSQL did not run: {exc}")
        return 0 if args.smoke else 1
    except PostgresStartFailed as exc:
        print(f"PostgreSQL did not start: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
