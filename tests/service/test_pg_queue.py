"""The distributed queue on a real PostgreSQL server: Procrastinate's locks, ``codejury worker`` processes
(the scripted model inside) that survive one of them being killed in the middle of a review, and what
serve and a worker export (the queue's depth; the reviews a worker ran, on its metrics port; JSON log lines)."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx2
import psycopg
import psycopg_pool
import pytest
from codejury_fakes.gitlab import FakeGitLab
from prometheus_client.parser import text_string_to_metric_families

from codejury import __version__
from codejury.forges.markers import parse_summary
from codejury.service import pg_queue
from codejury.service.commands import ServiceOptions, build_service
from codejury.service.webhooks import ReviewRequest
from tests.service.helpers import GITLAB_TOKEN, NEW, OLD, gitlab_delivery, gitlab_mr_event
from tests.service.test_chat import note_delivery
from tests.service.test_local_reviews import serving

ROOT = Path(__file__).parents[2]


def request(n: int = 7) -> ReviewRequest:
    return ReviewRequest("gitlab", f"https://gitlab.example/acme/widgets/-/merge_requests/{n}", f"gitlab:a/w!{n}")


async def test_one_job_waits_per_merge_request_and_the_rest_are_dropped(new_pg_database: Callable[[], str]) -> None:
    url = new_pg_database()
    await pg_queue.apply_schema(url)
    await pg_queue.apply_schema(url)  # a second process starting: nothing to do
    app = pg_queue.make_app(url)
    async with app.open_async():
        queue = pg_queue.PostgresQueue(app)
        assert await queue.ready()
        outcomes = [await queue.submit(request(7)) for _ in range(3)]
        assert outcomes == ["queued", "coalesced", "coalesced"]
        assert await queue.submit(request(8)) == "queued"
        todo = await app.job_manager.list_jobs_async(status="todo")
        assert sorted(j.lock or "" for j in todo) == ["gitlab:a/w!7", "gitlab:a/w!8"]


async def test_the_pool_pings_only_a_connection_the_server_ended_and_lends_a_new_one(
    new_pg_database: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = new_pg_database()
    await pg_queue.apply_schema(url)
    pinged: list[object] = []
    ping = psycopg_pool.AsyncConnectionPool.check_connection

    async def counted(conn: psycopg.AsyncConnection) -> None:
        pinged.append(conn)
        await ping(conn)

    monkeypatch.setattr(psycopg_pool.AsyncConnectionPool, "check_connection", staticmethod(counted))
    app = pg_queue.make_app(url)
    async with app.open_async():
        queue = pg_queue.PostgresQueue(app)
        assert [await queue.submit(request(n)) for n in range(1, 6)] == ["queued"] * 5
        assert await queue.ready()
        assert pinged == []  # quiet connections are lent without a round trip of their own
        with psycopg.connect(url, autocommit=True) as admin:  # a restart, an idle timeout, an administrator
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        await asyncio.sleep(0.2)
        assert await queue.submit(request(6)) == "queued"
        assert pinged  # the ended connections were pinged, failed and were replaced


def _statuses(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT status FROM procrastinate_jobs ORDER BY id").fetchall()]


def _worker(
    url: str, sleep_s: float, log: Path, env: dict[str, str], *more: str, extra: Sequence[str] = ()
) -> subprocess.Popen[bytes]:
    """A ``codejury worker`` process (``codejury.testing.scripted_worker``); ``extra``: its own arguments (``sql``:
    the reviewer's finding). Its temporary folders go next to ``log``, in the test's own directory: a worker
    killed mid-review cannot remove its job's folder."""
    flags = ["--database", url, "--heartbeat", "0.5", "--stalled-after", "2", *more]
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "codejury.testing.scripted_worker", str(sleep_s), *extra, "--", *flags],
            cwd=ROOT,
            env={**env, "TMPDIR": str(log.parent)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _stop(workers: Sequence[subprocess.Popen[bytes]]) -> None:
    """Stops each worker still running: SIGTERM (it finishes its job), then SIGKILL after 15 s."""
    for proc in workers:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def _worker_env(gl: FakeGitLab) -> dict[str, str]:
    """A ``codejury worker``'s environment: the fake GitLab (its URL and bot token), nothing recorded."""
    return {
        **os.environ,
        "CODEJURY_GITLAB_URL": gl.url,
        "CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN,
        "CODEJURY_RECORD_URL": "none",
        "PYTHONPATH": str(ROOT / "src"),
    }


def _service_options(url: str, gl: FakeGitLab) -> ServiceOptions:
    env = {"CODEJURY_GITLAB_WEBHOOK_TOKEN": GITLAB_TOKEN, "CODEJURY_GITLAB_URL": gl.url, "CODEJURY_RECORD_URL": "none"}
    return ServiceOptions(database=url, env=env)


async def _until(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


@pytest.mark.waits
async def test_a_killed_workers_review_is_finished_by_another_worker_without_duplicates(
    new_pg_database: Callable[[], str], gl: FakeGitLab, tmp_path: Path
) -> None:
    url = new_pg_database()
    env, opts = _worker_env(gl), _service_options(url, gl)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        service = build_service(opts, say=lambda line: None)
        async with serving(service) as base, httpx2.AsyncClient(base_url=base) as client:
            body, headers = gitlab_delivery(gitlab_mr_event(f"{gl.url}/acme/widgets/-/merge_requests/7"))
            answer = await client.post("/webhooks/gitlab", content=body, headers=headers)
            assert answer.json()["outcome"] == "queued"
            assert (await client.get("/readyz")).json() == {"ready": True}
        slow = _worker(url, 600, tmp_path / "slow.log", env)
        workers.append(slow)
        await _until(lambda: _statuses(url) == ["doing"], 60, "the first worker to start the review")
        slow.send_signal(signal.SIGKILL)  # mid-review: nothing posted yet, its heartbeat stops
        slow.wait(timeout=10)
        workers.append(_worker(url, 0, tmp_path / "fast.log", env))

        def summaries() -> list[str]:
            notes = gl.notes(1, 7, system=False)
            return [n["body"] for n in notes if n["author"]["username"] == FakeGitLab.BOT and parse_summary(n["body"])]

        await _until(lambda: _statuses(url) == ["succeeded"], 90, "the second worker to finish the review")
        log = (tmp_path / "fast.log").read_text(errors="replace")
        assert "queued again" in log
        assert len(summaries()) == 1 and "Unchecked input" in summaries()[0]
    finally:
        _stop(workers)


async def test_a_review_command_is_queued_in_postgresql_and_a_worker_publishes_one_review(
    new_pg_database: Callable[[], str], gl: FakeGitLab, tmp_path: Path
) -> None:
    url = new_pg_database()
    env, opts = _worker_env(gl), _service_options(url, gl)
    note = gl.add_note(1, 7, "/codejury review", author="bob")
    async with serving(build_service(opts, say=lambda line: None)) as base, httpx2.AsyncClient(base_url=base) as client:
        body, headers = note_delivery(gl, note)
        answer = await client.post("/webhooks/gitlab", content=body, headers=headers)
        assert answer.status_code == 202 and answer.json()["outcome"] == "queued"
    assert _statuses(url) == ["todo"]  # the chat job, waiting for a worker
    worker = _worker(url, 0, tmp_path / "worker.log", env)
    try:

        def summaries() -> list[str]:
            notes = gl.notes(1, 7, system=False)
            return [n["body"] for n in notes if n["author"]["username"] == FakeGitLab.BOT and parse_summary(n["body"])]

        await _until(lambda: _statuses(url) == ["succeeded", "succeeded"], 90, "the worker to run both jobs")
        assert len(summaries()) == 1 and "Unchecked input" in summaries()[0]
        log = (tmp_path / "worker.log").read_text(errors="replace")
        assert f"gitlab:acme/widgets!7 chat {note}: review: review queued" in log
        assert "gitlab:acme/widgets!7: reviewed and published" in log
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            worker.kill()
    with psycopg.connect(url) as conn:
        locks = [r[0] for r in conn.execute("SELECT lock FROM procrastinate_jobs ORDER BY id").fetchall()]
    assert locks == [f"gitlab:acme/widgets!7 chat {note}", "gitlab:acme/widgets!7"]  # the chat job queued the review


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_a_worker_exports_the_reviews_it_ran_and_logs_json_lines_without_the_token(
    new_pg_database: Callable[[], str], gl: FakeGitLab, tmp_path: Path
) -> None:
    url = new_pg_database()
    gl.add_mr(1, 8, files={"app.py": (OLD, NEW)})
    env, opts = _worker_env(gl), _service_options(url, gl)
    service = build_service(opts, say=lambda line: None)
    async with serving(service) as base, httpx2.AsyncClient(base_url=base) as client:
        for n in (7, 8):
            body, headers = gitlab_delivery(gitlab_mr_event(f"{gl.url}/acme/widgets/-/merge_requests/{n}", iid=n))
            assert (await client.post("/webhooks/gitlab", content=body, headers=headers)).json()["outcome"] == "queued"
        served = _samples((await client.get("/metrics")).text)  # serve reads the queue in PostgreSQL
    assert served[("codejury_review_jobs", (("state", "waiting"),))] == 2
    assert served[("codejury_review_jobs", (("state", "running"),))] == 0
    assert served[("codejury_review_queue_up", ())] == 1
    assert served[("codejury_review_oldest_waiting_job_age_seconds", ())] >= 0
    log = tmp_path / "worker.log"
    worker = _worker(url, 0, log, env, "--metrics-port", "0", "--log-format", "json")
    try:
        await _until(lambda: _statuses(url) == ["succeeded", "succeeded"], 90, "the worker to run both jobs")
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        [metrics_url] = [
            e["message"].removeprefix("metrics on ") for e in lines if e["message"].startswith("metrics on")
        ]
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(metrics_url, timeout=10).read().decode())
        got = _samples(text)
        reviews = sum(v for (name, _), v in got.items() if name == "codejury_reviews_total")
        assert reviews == 2  # both reviews, counted by the process that ran them
        assert got[("codejury_build_info", (("python", platform.python_version()), ("version", __version__)))] == 1
        assert got[("codejury_review_job_failures_total", (("reason", "error"),))] == 0
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            worker.kill()
    raw = log.read_text()
    assert FakeGitLab.BOT_TOKEN not in raw
    entries = [json.loads(line) for line in raw.splitlines() if line.strip()]  # every line is one JSON object
    assert all({"time", "level", "message"} <= set(e) for e in entries)
    done = [e for e in entries if e["message"].endswith(": reviewed and published")]
    assert sorted(e["job"] for e in done) == ["gitlab:acme/widgets!7", "gitlab:acme/widgets!8"]
