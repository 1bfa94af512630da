"""The distributed queue: Procrastinate on PostgreSQL, for ``codejury serve --database`` and ``codejury worker``.

One task, ``codejury.review``, deferred with ``lock`` set to the merge request's key and
``queueing_lock`` to its ``queueing_key`` (the key, or the key and ``forced`` for a review a person
asked for): Procrastinate runs at most one job per lock at a time and keeps at most one waiting per
queueing lock, so a push while one waits is dropped (``AlreadyEnqueued``) and the waiting job
reviews the newest head when it starts, and a person's command never drops into a push's job.
``ForgeUnavailable`` is retried by Procrastinate's ``RetryStrategy`` with exponential backoff.
Every worker also looks for stalled jobs (their worker stopped sending heartbeats: killed, its
machine gone) and queues them again; when a newer job already waits for the same merge request,
the stalled one is ended instead.

``codejury serve`` takes a burst's deliveries in a few statements on this queue's pool
(``intake`` → ``pg_intake.PostgresIntake``). The pool's connections are in autocommit, and one is
pinged before it is lent only when the server may have ended it (``check_quiet_connection``).

The schema is applied once, under an advisory lock, by whichever process starts first.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Literal

import procrastinate
import psycopg
import psycopg_pool
from procrastinate.exceptions import AlreadyEnqueued, ConnectorException, UniqueViolation
from procrastinate.jobs import JobDeferrer, Status
from procrastinate.schema import SchemaManager

from codejury.errors import ConfigError
from codejury.forges.errors import ForgeUnavailable
from codejury.service.logs import job_context
from codejury.service.webhooks import ReviewRequest
from codejury.telemetry.service_metrics import QueueDepth

if TYPE_CHECKING:
    from codejury.service.deliveries import Deliveries
    from codejury.service.intake import Intake

Outcome = Literal["queued", "coalesced"]
RunJob = Callable[[ReviewRequest], Awaitable[str]]
TASK_NAME = "codejury.review"
QUEUE = "reviews"
MAX_ATTEMPTS = 5
_SCHEMA_LOCK = 0x636A7572  # "cjur": one process applies the schema at a time
_RUNNER = "codejury_runner"
_DEPTH_QUERY = """
SELECT count(*) FILTER (WHERE j.status = 'todo') AS waiting,
       count(*) FILTER (WHERE j.status = 'doing') AS running,
       coalesce(extract(epoch FROM now() - min(d.since) FILTER (WHERE j.status = 'todo' AND d.since <= now())),
                0)::float AS oldest_waiting_s
FROM procrastinate_jobs j
CROSS JOIN LATERAL (
    SELECT coalesce(j.scheduled_at,
                    (SELECT min(e.at) FROM procrastinate_events e WHERE e.job_id = j.id AND e.type = 'deferred'),
                    now()) AS since
) d
WHERE j.queue_name = %(queue)s AND j.status IN ('todo', 'doing')
"""
"""Waiting (``todo``) and running (``doing``) review jobs, and the age of the oldest due waiting one: since
its retry was due (``scheduled_at``), else since it was deferred."""


def conninfo(url: str) -> str:
    """A libpq URL from ``postgresql://``, ``postgres://`` or ``postgresql+psycopg://``."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("postgresql", "postgres", "postgresql+psycopg"):
        raise ConfigError("--database expects postgresql://USER@HOST:PORT/DATABASE")
    return "postgresql://" + rest


async def _review_task(context: procrastinate.JobContext, request: dict[str, Any]) -> None:
    runner: RunJob = context.additional_context[_RUNNER]
    await runner(ReviewRequest.from_json(request))


async def _autocommit(conn: psycopg.AsyncConnection[Any]) -> None:
    """Each of Procrastinate's queries is one statement (a call to one of its functions): on a pooled connection
    in autocommit it costs one round trip, not three (``BEGIN``, the query, ``COMMIT``)."""
    await conn.set_autocommit(True)


async def check_quiet_connection(conn: psycopg.AsyncConnection[Any]) -> None:
    """The pool's check of a connection it is about to lend, without a round trip while the connection is quiet.

    A server that ends a connection (a restart, ``idle_session_timeout``, ``pg_terminate_backend``, a proxy
    going away) sends it an error and closes it, so an idle connection with something to read is the one
    that may be dead: that one is pinged (``AsyncConnectionPool.check_connection``, which raises and lets the
    pool replace it). Procrastinate's own choice pings every connection it lends: one more round trip per
    statement, which on a busy server cost as much of the serving process as the statement itself."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("the connection is closed")
    if _readable(conn.fileno()):
        await psycopg_pool.AsyncConnectionPool.check_connection(conn)


def _readable(fd: int) -> bool:
    """Whether ``fd`` has something to read (or was closed by its peer), without waiting."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])  # Windows has no poll()


def _pool(**options: Any) -> psycopg_pool.AsyncConnectionPool[Any]:
    return psycopg_pool.AsyncConnectionPool(**{**options, "check": check_quiet_connection})


def make_app(url: str, *, retry_wait_s: int = 5) -> procrastinate.App:
    """The Procrastinate app on ``url`` with the review task registered (not opened)."""
    connector = procrastinate.PsycopgConnector(conninfo=conninfo(url), configure=_autocommit, pool_factory=_pool)
    app = procrastinate.App(connector=connector)
    app.task(
        name=TASK_NAME,
        queue=QUEUE,
        pass_context=True,
        retry=procrastinate.RetryStrategy(
            max_attempts=MAX_ATTEMPTS, exponential_wait=retry_wait_s, retry_exceptions={ForgeUnavailable}
        ),
    )(_review_task)
    return app


async def apply_schema(url: str) -> None:
    """Create Procrastinate's tables unless they are there (safe with several processes starting)."""
    schema = SchemaManager.get_schema()
    try:
        conn = await psycopg.AsyncConnection.connect(conninfo(url), connect_timeout=10)
        async with conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            found = await (await conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")).fetchone()
            if not (found and found[0]):
                await conn.execute(schema)
    except psycopg.Error as exc:
        raise ConfigError(f"cannot prepare the job queue in the database: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


class PostgresQueue:
    """The service's side: defer review jobs; readiness is the database answering. Its connection pool
    also runs the service's claims of webhook deliveries (``deliveries.Statements``)."""

    def __init__(self, app: procrastinate.App) -> None:
        self.app = app

    async def insert_new(self, query: str, **params: object) -> bool:
        try:
            await self.app.connector.execute_query_async(query, **params)
        except UniqueViolation:
            return False
        return True

    async def execute(self, query: str, **params: object) -> None:
        await self.app.connector.execute_query_async(query, **params)

    def _deferrer(self, request: ReviewRequest) -> JobDeferrer:
        """The review task with ``request``'s locks: one job runs per merge request, one waits per queueing key."""
        return self.app.tasks[TASK_NAME].configure(lock=request.key, queueing_lock=request.queueing_key)

    async def submit(self, request: ReviewRequest) -> Outcome:
        try:
            await self._deferrer(request).defer_async(request=request.to_json())
        except AlreadyEnqueued:
            return "coalesced"
        return "queued"

    async def defer_all(self, requests: Sequence[ReviewRequest], conn: psycopg.AsyncConnection[Any]) -> None:
        """Defer a job for each request in one statement on ``conn``; ``AlreadyEnqueued`` (and none deferred)
        when one of their queueing locks has a job waiting."""
        jobs = [self._deferrer(r).make_new_job(request=r.to_json()) for r in requests]
        await self.app.job_manager.batch_defer_jobs_async(jobs, connection=conn)

    def connection(self) -> AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]:
        """A connection of the pool (autocommit), for the statements of ``pg_intake``."""
        connector = self.app.connector
        assert isinstance(connector, procrastinate.PsycopgConnector)
        return connector.pool.connection()

    def intake(self, deliveries: Deliveries) -> Intake | None:
        """How ``codejury serve`` takes deliveries with this queue: claims and jobs of a burst together
        (``pg_intake``), when ``deliveries`` run their statements on this queue's pool; else None."""
        from codejury.service.pg_intake import PostgresIntake

        return PostgresIntake(self, deliveries) if deliveries.statements is self else None

    async def ready(self) -> bool:
        try:
            return await self.app.job_manager.check_connection_async()
        except Exception:
            return False

    async def depth(self) -> QueueDepth:
        """Jobs waiting and running, and how long the oldest due waiting job has waited (for ``/metrics``)."""
        row = await self.app.connector.execute_query_one_async(_DEPTH_QUERY, queue=QUEUE)
        return QueueDepth(int(row["waiting"]), int(row["running"]), max(0.0, float(row["oldest_waiting_s"])))


async def requeue_stalled(app: procrastinate.App, *, after_s: float, say: Callable[[str], None]) -> int:
    """Queue again the jobs of workers silent for ``after_s`` seconds; returns how many were handled."""
    handled = 0
    for job in await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=after_s):
        assert job.id is not None
        try:
            await app.job_manager.retry_job(job)
            say(f"{job.lock}: its worker stopped answering; the review is queued again")
        except ConnectorException:  # a newer job of this merge request already waits: it supersedes this one
            await app.job_manager.finish_job_by_id_async(job.id, status=Status.FAILED, delete_job=False)
            say(f"{job.lock}: its worker stopped answering; a newer queued review replaces it")
        handled += 1
    return handled


async def run_worker(
    app: procrastinate.App,
    run_job: RunJob,
    *,
    concurrency: int = 1,
    heartbeat_s: float = 10.0,
    stalled_after_s: float = 30.0,
    say: Callable[[str], None] = lambda line: None,
) -> None:
    """Run review jobs until stopped (SIGINT/SIGTERM), retrying stalled ones every few seconds."""

    async def sweep() -> None:
        while True:
            await asyncio.sleep(max(1.0, stalled_after_s / 3))
            try:
                await requeue_stalled(app, after_s=stalled_after_s, say=say)
            except Exception as exc:  # a database hiccup: try again at the next sweep
                say(f"could not look for stalled reviews: {type(exc).__name__}")

    async def run_and_log(request: ReviewRequest) -> str:
        with job_context(request.key):  # the job's lines carry its key
            outcome = await run_job(request)
            say(f"{request.key}: {outcome}")  # as the embedded queue logs each job
        return outcome

    sweeper = asyncio.create_task(sweep(), name="codejury-stalled-sweep")
    try:
        await app.run_worker_async(
            queues=[QUEUE],
            concurrency=concurrency,
            update_heartbeat_interval=heartbeat_s,
            stalled_worker_timeout=stalled_after_s,
            additional_context={_RUNNER: run_and_log},
            install_signal_handlers=True,
        )
    finally:
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
