"""Taking in deliveries on PostgreSQL (``codejury serve --database``): a burst's claims and jobs in a few statements.

``PostgresIntake`` is the ``intake.GroupedIntake`` of Procrastinate's queue, as ``BatchedIntake``
is the embedded queue's: the deliveries that arrive while one group is being written go into the
next (a group commit), and a group costs one pooled connection and one or two statements whatever
its size:

1. ``_CLAIM``: the keys of every delivery in the group that was not received before (``deliveries``:
   its header and its event, both or neither), and the queueing locks among the group's that
   already have a waiting job, in one statement;
2. the new jobs, one per queueing lock that has none waiting, deferred together through
   Procrastinate (``JobManager.batch_defer_jobs_async``, on the same connection).

The answers are those of one delivery at a time in arrival order: a delivery whose keys were seen is
``duplicate``; the first new delivery of a queueing lock without a waiting job is ``queued`` and the
others of that lock ``coalesced``, as Procrastinate's ``AlreadyEnqueued`` would have them. Two
deliveries of one group never share a key (a second one waits for the next group), so "seen" means
"by an earlier group or another process". A job that another process queued between the two
statements makes Procrastinate refuse the whole deferral: the group's jobs are then deferred one at
a time (``PostgresQueue.submit``). A delivery whose job could not be queued has its keys released
and is answered with the error (503), so the forge's retry is taken as new.

Why: every round trip to PostgreSQL costs the serving process far more than the statement itself.
Measured with ``benchmarks/service_pg.py`` (2 cores shared with the database, the workers and the
fake forge): a delivery taken on its own cost the serving process 0.9–1.8 ms of CPU, against 0.2 ms
for a delivery that queues nothing, most of it in the socket writes of its four round trips (the
pool's check and the claim, the pool's check and the deferral), and a burst of 25 is answered one
after another, so the last answer waited for all of them. Taken in groups (and with the pool's
check made quiet, ``pg_queue.check_quiet_connection``): 0.28–0.36 ms per delivery.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from procrastinate.exceptions import AlreadyEnqueued

from codejury.service.intake import GroupedIntake, Pending
from codejury.service.tables import deliveries, utcnow

if TYPE_CHECKING:
    import psycopg

    from codejury.service.deliveries import Deliveries
    from codejury.service.pg_queue import PostgresQueue
    from codejury.service.requests import ReviewRequest

_CLAIM = f"""
WITH wanted AS (
    SELECT item, id FROM unnest(%(items)s::int[], %(ids)s::text[]) AS wanted(item, id)
), claimed AS (
    INSERT INTO {deliveries.name} (id, received_at)
    SELECT id, %(at)s FROM wanted
    WHERE item NOT IN (SELECT wanted.item FROM wanted JOIN {deliveries.name} seen USING (id))
    ON CONFLICT (id) DO NOTHING
    RETURNING id
)
SELECT true AS claimed, id FROM claimed
UNION ALL
SELECT false, queueing_lock FROM procrastinate_jobs WHERE status = 'todo' AND queueing_lock = ANY(%(locks)s::text[])
"""
"""The group's new keys (``claimed``: a delivery none of whose keys was received, or another process is
inserting, records them) and the queueing locks that already have a waiting job."""


class PostgresIntake(GroupedIntake):
    """Claims and jobs of concurrent deliveries written together on the queue's pool (see the module's docstring)."""

    def __init__(self, queue: PostgresQueue, deliveries: Deliveries) -> None:
        super().__init__()
        self.queue = queue
        self.deliveries = deliveries

    def _next_group(self, pending: list[Pending]) -> tuple[list[Pending], list[Pending]]:
        """The pending deliveries whose keys no earlier one of them has, and the rest (for the next group)."""
        group: list[Pending] = []
        later: list[Pending] = []
        taken: set[str] = set()
        for item in pending:
            keys = item.keys
            if taken.isdisjoint(keys):
                group.append(item)
                taken.update(keys)
            else:
                later.append(item)
        return group, later

    async def _written(self, outcomes: Sequence[str | Exception]) -> None:
        new = sum(1 for outcome in outcomes if outcome in ("queued", "coalesced"))
        with contextlib.suppress(Exception):  # the next pruning due takes what this one left
            await self.deliveries.count_claims(new)  # pruning, when due, after the answers

    async def _write(self, group: list[Pending]) -> list[str | Exception]:
        outcomes: list[str | Exception] = ["duplicate"] * len(group)
        async with self.queue.connection() as conn:
            claimed, waiting = await self._claim(conn, group)
            new: list[int] = []
            stray: list[str] = []
            for n, item in enumerate(group):
                if all(key in claimed for key in item.keys):
                    new.append(n)
                else:  # seen before, or another process is claiming it now: keys it took are not its own
                    stray += [key for key in item.keys if key in claimed]
            if stray:  # rare (a race with another process); if forgetting fails, they only make a retry a duplicate
                with contextlib.suppress(Exception):
                    await self.deliveries.forget(stray)
            by_lock: dict[str, list[int]] = defaultdict(list)
            for n in new:
                by_lock[group[n].request.queueing_key].append(n)
            first = [ns[0] for lock, ns in by_lock.items() if lock not in waiting]
            for ns in by_lock.values():
                for n in ns:
                    outcomes[n] = "coalesced"
            for n, outcome in zip(first, await self._defer(conn, [group[n].request for n in first]), strict=True):
                if isinstance(outcome, Exception):
                    followers = by_lock[group[n].request.queueing_key]
                    await self._release([group[m] for m in followers])
                    for m in followers:
                        outcomes[m] = outcome
                else:
                    outcomes[n] = outcome
        return outcomes

    async def _claim(self, conn: psycopg.AsyncConnection[Any], group: list[Pending]) -> tuple[set[str], set[str]]:
        items = [n for n, item in enumerate(group) for _ in item.keys]
        ids = [key for item in group for key in item.keys]
        locks = sorted({item.request.queueing_key for item in group})
        cursor = await conn.execute(_CLAIM, {"items": items, "ids": ids, "at": utcnow(), "locks": locks})
        rows = await cursor.fetchall()
        return {str(key) for claimed, key in rows if claimed}, {str(lock) for claimed, lock in rows if not claimed}

    async def _defer(self, conn: psycopg.AsyncConnection[Any], requests: list[ReviewRequest]) -> list[str | Exception]:
        """Each request's job deferred: ``queued``, ``coalesced`` (a job waits already), or why it was not."""
        if not requests:
            return []
        try:
            await self.queue.defer_all(requests, conn)
            return ["queued"] * len(requests)
        except AlreadyEnqueued:  # another process queued one of them since the claim: one at a time
            pass
        except Exception as exc:  # nothing was deferred
            return [exc] * len(requests)
        outcomes: list[str | Exception] = []
        for request in requests:
            try:
                outcomes.append(await self.queue.submit(request))
            except Exception as exc:
                outcomes.append(exc)
        return outcomes

    async def _release(self, items: list[Pending]) -> None:
        """Forget these deliveries: their jobs were not queued, so the forge's retry must be taken as new (they
        are answered with the error whether or not this succeeds, as ``SequentialIntake``'s are)."""
        with contextlib.suppress(Exception):
            await self.deliveries.forget([key for item in items for key in item.keys])
