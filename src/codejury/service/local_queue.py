"""The embedded queue: review jobs persisted in a SQLite file, run by tasks inside ``codejury serve``.

For one machine with no database server. Each job is a row (``codejury_review_jobs``) written
before the webhook is answered, so a restart loses nothing: jobs that were running when the
process stopped are queued again at start-up. Per merge request (``ReviewRequest.key``): at most
one job runs and one waits; a push while one is waiting is coalesced into it (the waiting job
reviews the merge request's head when it starts, so the newest push is what gets reviewed). A job
asked by a person (``ReviewRequest.forced``: it reviews even a head already reviewed) stays so when
a push is coalesced into it or it into a push's, and when a job it supersedes was one.
A job that meets ``ForgeUnavailable`` is retried after ``backoff_s * 2**attempt`` (at most
``max_attempts`` runs: the one ``RetryPolicy`` of ``codejury.retrying``); other failures end it as
``failed`` with the reason kept in its row.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import Connection, Engine, and_, exists, func, select, update
from sqlalchemy.orm import aliased

from codejury.forges.errors import ForgeUnavailable
from codejury.retrying import RetryPolicy
from codejury.service.logs import job_context
from codejury.service.tables import in_db_thread, jobs, utcnow
from codejury.service.webhooks import ReviewRequest
from codejury.telemetry.service_metrics import QueueDepth

Outcome = Literal["queued", "coalesced"]
RunJob = Callable[[ReviewRequest], Awaitable[str]]
MAX_ATTEMPTS = 5
BACKOFF_S = 30.0
POLL_S = 1.0


@dataclass(frozen=True)
class Claimed:
    id: int
    request: ReviewRequest
    attempts: int


class LocalQueue:
    """Jobs in the service's SQLite file, run by ``concurrency`` tasks of this process."""

    def __init__(
        self,
        engine: Engine,
        run_job: RunJob,
        *,
        concurrency: int = 2,
        max_attempts: int = MAX_ATTEMPTS,
        backoff_s: float = BACKOFF_S,
        say: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.engine = engine
        self.run_job = run_job
        self.concurrency = concurrency
        self.retry = RetryPolicy(max_retries=max_attempts - 1, backoff_s=backoff_s, max_wait_s=math.inf)
        self.say = say
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    # -- submitting --------------------------------------------------------------------------------
    async def submit(self, request: ReviewRequest) -> Outcome:
        outcome = await in_db_thread(self.engine, lambda: self._submit(request))
        self._wake.set()
        return outcome

    def wake(self) -> None:
        """Tell the runners that jobs were queued (``submit_in`` by the service's intake)."""
        self._wake.set()

    def _submit(self, request: ReviewRequest) -> Outcome:
        with self.engine.begin() as conn:
            return self.submit_in(conn, request)

    def submit_in(self, conn: Connection, request: ReviewRequest) -> Outcome:
        """Queue ``request`` inside the caller's transaction: coalesced into the merge request's waiting job, if any."""
        now = utcnow()
        payload = json.dumps(request.to_json())
        waiting = conn.execute(
            select(jobs.c.id, jobs.c.request).where(and_(jobs.c.key == request.key, jobs.c.state == "waiting"))
        ).first()
        if waiting is not None:
            merged = _merged(request, waiting.request)
            conn.execute(
                update(jobs).where(jobs.c.id == waiting.id).values(request=json.dumps(merged.to_json()), updated_at=now)
            )
            return "coalesced"
        conn.execute(
            jobs.insert().values(
                key=request.key, request=payload, state="waiting", attempts=0, run_after=now, updated_at=now
            )
        )
        return "queued"

    async def ready(self) -> bool:
        def check() -> bool:
            with self.engine.connect() as conn:
                conn.execute(select(jobs.c.id).limit(1))
            return True

        try:
            running = self._tasks != [] and all(not t.done() for t in self._tasks)
            return running and await in_db_thread(self.engine, check)
        except Exception:
            return False

    async def counts(self) -> dict[str, int]:
        """Jobs by state (waiting, running, done, failed)."""

        def count() -> dict[str, int]:
            with self.engine.connect() as conn:
                rows = conn.execute(select(jobs.c.state, jobs.c.id)).all()
            out: dict[str, int] = {}
            for state, _ in rows:
                out[state] = out.get(state, 0) + 1
            return out

        return await in_db_thread(self.engine, count)

    async def depth(self) -> QueueDepth:
        """Jobs waiting and running, and how long the oldest due waiting job has waited (for ``/metrics``)."""

        def read() -> QueueDepth:
            now = utcnow()
            active = jobs.c.state.in_(("waiting", "running"))
            with self.engine.connect() as conn:
                counts: dict[str, int] = dict(
                    conn.execute(select(jobs.c.state, func.count()).where(active).group_by(jobs.c.state)).all()
                )
                due = and_(jobs.c.state == "waiting", jobs.c.run_after <= now)
                oldest = conn.execute(select(func.min(jobs.c.run_after)).where(due)).scalar()
            age = max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0
            return QueueDepth(counts.get("waiting", 0), counts.get("running", 0), age)

        return await in_db_thread(self.engine, read)

    # -- running -----------------------------------------------------------------------------------
    async def start(self) -> None:
        """Queue again what was running when the process last stopped, then start the runners."""
        await in_db_thread(self.engine, self._requeue_interrupted)
        self._tasks = [
            asyncio.create_task(self._runner(), name=f"codejury-review-{n}") for n in range(self.concurrency)
        ]

    async def close(self) -> None:
        """Stop the runners; a review cut short runs again at the next start."""
        self._stopping = True
        self._wake.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    def _requeue_interrupted(self) -> None:
        now = utcnow()
        other = aliased(jobs)
        waiting_too = exists().where(and_(other.c.key == jobs.c.key, other.c.state == "waiting"))
        with self.engine.begin() as conn:
            superseded = conn.execute(
                select(jobs.c.id, jobs.c.request).where(and_(jobs.c.state == "running", waiting_too))
            ).all()
            for job_id, payload in superseded:
                _supersede(conn, job_id, ReviewRequest.from_json(json.loads(payload)), now)
            conn.execute(update(jobs).where(jobs.c.state == "running").values(state="waiting", updated_at=now))

    def _claim(self) -> Claimed | None:
        """The oldest due waiting job whose merge request has none running, now marked running."""
        now = utcnow()
        other = aliased(jobs)
        running_same = exists().where(and_(other.c.key == jobs.c.key, other.c.state == "running"))
        with self.engine.begin() as conn:
            candidates = conn.execute(
                select(jobs.c.id, jobs.c.request, jobs.c.attempts)
                .where(and_(jobs.c.state == "waiting", jobs.c.run_after <= now, ~running_same))
                .order_by(jobs.c.run_after, jobs.c.id)
                .limit(self.concurrency + 1)
            ).all()
            for job_id, payload, attempts in candidates:
                claimed = conn.execute(
                    update(jobs)
                    .where(and_(jobs.c.id == job_id, jobs.c.state == "waiting", ~running_same))
                    .values(state="running", attempts=attempts + 1, updated_at=now)
                )
                if claimed.rowcount == 1:
                    return Claimed(job_id, ReviewRequest.from_json(json.loads(payload)), attempts + 1)
        return None

    def _finish(self, job_id: int, state: str, error: str | None = None) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(jobs).where(jobs.c.id == job_id).values(state=state, error=error, updated_at=utcnow()))

    def _retry_later(self, job: Claimed, reason: str) -> None:
        """Back to waiting after a backoff, unless a newer push already waits for the same merge request."""
        now = utcnow()
        with self.engine.begin() as conn:
            if _supersede(conn, job.id, job.request, now):
                return
            delay = timedelta(seconds=self.retry.wait_s(job.attempts - 1) or 0.0)
            conn.execute(
                update(jobs)
                .where(jobs.c.id == job.id)
                .values(state="waiting", error=reason, run_after=now + delay, updated_at=now)
            )

    async def _runner(self) -> None:
        while not self._stopping:
            job = await in_db_thread(self.engine, self._claim)
            if job is None:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), POLL_S)
                continue
            await self._run(job)
            self._wake.set()  # a job of the same merge request may be waiting for this one

    async def _run(self, job: Claimed) -> None:
        with job_context(job.request.key):  # the job's lines carry its key
            await self._run_job(job)

    async def _run_job(self, job: Claimed) -> None:
        key = job.request.key
        try:
            outcome = await self.run_job(job.request)
        except ForgeUnavailable as exc:
            reason = str(exc)
            if not self.retry.allows(job.attempts - 1, self.retry.wait_s(job.attempts - 1)):
                self.say(f"{key}: forge unavailable, giving up after {job.attempts} attempts: {reason}")
                await in_db_thread(self.engine, lambda: self._finish(job.id, "failed", reason))
            else:
                self.say(f"{key}: forge unavailable, retrying later (attempt {job.attempts}): {reason}")
                await in_db_thread(self.engine, lambda: self._retry_later(job, reason))
            return
        except asyncio.CancelledError:
            raise  # stopping: the job stays running and is queued again at the next start
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            self.say(f"{key}: the review job failed: {reason}")
            await in_db_thread(self.engine, lambda: self._finish(job.id, "failed", reason))
            return
        self.say(f"{key}: {outcome}")
        await in_db_thread(self.engine, lambda: self._finish(job.id, "done"))


def _merged(request: ReviewRequest, waiting: str) -> ReviewRequest:
    """``request`` coalesced into the waiting job whose payload is ``waiting``: forced when either was."""
    if request.forced or not ReviewRequest.from_json(json.loads(waiting)).forced:
        return request
    return replace(request, forced=True)


def _supersede(conn: Connection, job_id: int, request: ReviewRequest, now: datetime) -> bool:
    """End job ``job_id`` when a newer job of its merge request waits (which takes over ``request``'s being
    forced); False when none waits."""
    newer = conn.execute(
        select(jobs.c.id, jobs.c.request).where(and_(jobs.c.key == request.key, jobs.c.state == "waiting"))
    ).first()
    if newer is None:
        return False
    if request.forced:
        taken = replace(ReviewRequest.from_json(json.loads(newer.request)), forced=True)
        conn.execute(update(jobs).where(jobs.c.id == newer.id).values(request=json.dumps(taken.to_json())))
    conn.execute(
        update(jobs).where(jobs.c.id == job_id).values(state="done", error="superseded by a newer push", updated_at=now)
    )
    return True
