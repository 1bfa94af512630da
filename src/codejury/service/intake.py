"""Taking in a delivery that asks for a job: claim it (a replay is refused) and queue its job.

``SequentialIntake`` is the general case (a queue with a database of its own, Procrastinate's):
claim, then submit, and forget the claim when the job could not be queued, so the forge's retry is
not taken for a replay.

``GroupedIntake`` is a group commit: the deliveries that arrive while one group is being written
go together into the next. ``BatchedIntake`` is the one of the embedded queue, whose jobs live in
the same SQLite file as the deliveries seen: the claim and the job are written in one transaction. A burst of fifty
webhooks then costs a few transactions on the file's one thread instead of a hundred, each of
which would also wait for the thread and, while reviews run beside it, for the interpreter lock
(measured with ``benchmarks/service.py``: the answers of a 50-delivery burst came up to ~140 ms
after it was sent, from ~0.35 ms of database work per step queued behind the others). A failed
batch rolls back whole: neither the claims nor the jobs are kept, and every delivery in it is
answered 503 so the forge sends it again. ``pg_intake.PostgresIntake`` is the one of Procrastinate's
queue on PostgreSQL (``PostgresQueue.intake``).
"""

from __future__ import annotations

import asyncio
import functools
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from codejury.service.deliveries import delivery_keys
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


@runtime_checkable
class TakesDeliveries(Protocol):
    """A queue that knows how to take deliveries together with its own database (``PostgresQueue``)."""

    def intake(self, deliveries: Deliveries) -> Intake | None:
        """Its intake for ``deliveries``, or None when they are not kept where this queue can reach them."""
        ...


def intake_for(deliveries: Deliveries, queue: Submits) -> Intake:
    """Batched for the embedded queue in the deliveries' own database, the queue's own intake when the
    deliveries run their statements on it (PostgreSQL: ``pg_intake``), else claim-then-submit."""
    if isinstance(queue, LocalQueue) and queue.engine is deliveries.engine:
        return BatchedIntake(deliveries, queue)
    own = queue.intake(deliveries) if isinstance(queue, TakesDeliveries) else None
    return own or SequentialIntake(deliveries, queue)


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
class Pending:
    """A delivery waiting for its group to be written."""

    forge: str
    delivery: str
    event: str
    request: ReviewRequest
    answer: asyncio.Future[str]

    @property
    def keys(self) -> list[str]:
        """Its rows in the deliveries table (``deliveries.delivery_keys``)."""
        return delivery_keys(self.forge, self.delivery, self.event)


class GroupedIntake(ABC):
    """A group commit: the deliveries that arrive while one group is being written go together into the next."""

    def __init__(self) -> None:
        self._pending: list[Pending] = []
        self._writer: asyncio.Task[None] | None = None
        self.groups = 0
        """Groups written (fewer than deliveries taken under a burst)."""

    async def take(self, forge: str, delivery: str, event: str, request: ReviewRequest) -> str:
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending.append(Pending(forge, delivery, event, request, answer))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_groups(), name="codejury-intake")
        return await answer

    async def _write_groups(self) -> None:
        while self._pending:
            group, self._pending = self._next_group(self._pending)
            try:
                outcomes = await self._write(group)
            except Exception as exc:  # nothing of the group is kept
                outcomes = [exc] * len(group)
            self.groups += 1
            for item, outcome in zip(group, outcomes, strict=True):
                if item.answer.done():  # its request was cancelled
                    continue
                if isinstance(outcome, Exception):
                    item.answer.set_exception(outcome)
                else:
                    item.answer.set_result(outcome)
            await self._written(outcomes)

    def _next_group(self, pending: list[Pending]) -> tuple[list[Pending], list[Pending]]:
        """The group to write now, and what waits for the next one (default: all now)."""
        return pending, []

    @abstractmethod
    async def _write(self, group: list[Pending]) -> Sequence[str | Exception]:
        """Each delivery's outcome (``Taken``) or why its job could not be queued; raises when none was kept."""

    @abstractmethod
    async def _written(self, outcomes: Sequence[str | Exception]) -> None:
        """After a group's answers were given (``outcomes`` as ``_write`` returned them)."""


class BatchedIntake(GroupedIntake):
    """Claims and jobs of concurrent deliveries written together, in one transaction per batch."""

    def __init__(self, deliveries: Deliveries, queue: LocalQueue) -> None:
        super().__init__()
        self.deliveries = deliveries
        self.queue = queue

    async def _write(self, group: list[Pending]) -> list[Taken]:
        return await in_db_thread(self.deliveries.engine, functools.partial(self._write_all, group))

    async def _written(self, outcomes: Sequence[str | Exception]) -> None:
        self.queue.wake()

    def _write_all(self, batch: list[Pending]) -> list[Taken]:
        with self.deliveries.engine.begin() as conn:
            out = [self._take_in(conn, item) for item in batch]
        self.deliveries.claimed(sum(1 for outcome in out if outcome != "duplicate"))
        return out

    def _take_in(self, conn: Connection, item: Pending) -> Taken:
        if not self.deliveries.claim_in(conn, item.forge, item.delivery, item.event):
            return "duplicate"
        return self.queue.submit_in(conn, item.request)
