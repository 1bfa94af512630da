"""Taking in a delivery that asks for a job: claim it (a replay is refused) and queue its job.

``SequentialIntake`` is the general case (a queue with a database of its own, Procrastinate's):
claim, then submit, and forget the claim when the job could not be queued, so the forge's retry is
not taken for a replay.

``BatchedIntake`` serves the embedded queue, whose jobs live in the same SQLite file as the
deliveries seen: the claim and the job are written in one transaction, and the deliveries that
arrive while one batch is being written go into the next (a group commit). A burst of fifty
webhooks then costs a few transactions on the file's one thread instead of a hundred, each of
which would also wait for the thread and, while reviews run beside it, for the interpreter lock
(measured with ``benchmarks/service.py``: the answers of a 50-delivery burst came up to ~140 ms
after it was sent, from ~0.35 ms of database work per step queued behind the others). A failed
batch rolls back whole: neither the claims nor the jobs are kept, and every delivery in it is
answered 503 so the forge sends it again.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from codejury.service.local_queue import LocalQueue
from codejury.service.tables import in_db_thread

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from codejury.service.deliveries import Deliveries
    from codejury.service.webhooks import ReviewRequest

Taken = Literal["queued", "coalesced", "duplicate"]


class Submits(Protocol):
    async def submit(self, request: ReviewRequest) -> str: ...


class Intake(Protocol):
    async def take(self, forge: str, delivery: str, event: str, request: ReviewRequest) -> str:
        """``duplicate`` for a replay (nothing queued), else the queue's outcome; raises when it could not queue."""
        ...


def intake_for(deliveries: Deliveries, queue: Submits) -> Intake:
    """Batched for the embedded queue in the deliveries' own database, else claim-then-submit."""
    if isinstance(queue, LocalQueue) and queue.engine is deliveries.engine:
        return BatchedIntake(deliveries, queue)
    return SequentialIntake(deliveries, queue)


class SequentialIntake:
    """Claim, then submit to a queue with its own database; the claim is forgotten if the submit fails."""

    def __init__(self, deliveries: Deliveries, queue: Submits) -> None:
        self.deliveries = deliveries
        self.queue = queue

    async def take(self, forge: str, delivery: str, event: str, request: ReviewRequest) -> str:
        if not await self.deliveries.claim(forge, delivery, event):
            return "duplicate"
        try:
            return await self.queue.submit(request)
        except Exception:
            await self.deliveries.release(forge, delivery, event)
            raise


@dataclass
class _Pending:
    forge: str
    delivery: str
    event: str
    request: ReviewRequest
    answer: asyncio.Future[Taken]


class BatchedIntake:
    """Claims and jobs of concurrent deliveries written together, in one transaction per batch."""

    def __init__(self, deliveries: Deliveries, queue: LocalQueue) -> None:
        self.deliveries = deliveries
        self.queue = queue
        self._pending: list[_Pending] = []
        self._writer: asyncio.Task[None] | None = None
        self.batches = 0
        """Transactions written (fewer than deliveries taken under a burst)."""

    async def take(self, forge: str, delivery: str, event: str, request: ReviewRequest) -> str:
        answer: asyncio.Future[Taken] = asyncio.get_running_loop().create_future()
        self._pending.append(_Pending(forge, delivery, event, request, answer))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_batches(), name="codejury-intake")
        return await answer

    async def _write_batches(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                taken = await in_db_thread(self.deliveries.engine, functools.partial(self._write, batch))
            except Exception as exc:  # the transaction rolled back: nothing of the batch is kept
                for item in batch:
                    if not item.answer.done():
                        item.answer.set_exception(exc)
                continue
            self.batches += 1
            for item, outcome in zip(batch, taken, strict=True):
                if not item.answer.done():
                    item.answer.set_result(outcome)
            self.queue.wake()

    def _write(self, batch: list[_Pending]) -> list[Taken]:
        with self.deliveries.engine.begin() as conn:
            out = [self._take_in(conn, item) for item in batch]
        self.deliveries.claimed(sum(1 for outcome in out if outcome != "duplicate"))
        return out

    def _take_in(self, conn: Connection, item: _Pending) -> Taken:
        if not self.deliveries.claim_in(conn, item.forge, item.delivery, item.event):
            return "duplicate"
        return self.queue.submit_in(conn, item.request)
