"""Which webhook deliveries were already received: GitHub's ``X-GitHub-Delivery``, GitLab's ``Idempotency-Key``.

A forge redelivers the same delivery (a retry, a replay from its settings page) with the same
identifier: ``claim`` records it and says whether it is new, in one insert, so two copies
arriving at once cannot both pass. ``release`` forgets one whose review could not be queued, so
the forge's next attempt is not taken for a replay. Entries older than ``KEEP_DAYS`` are pruned.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine, delete
from sqlalchemy.exc import IntegrityError

from codejury.service.tables import deliveries, in_db_thread, utcnow

KEEP_DAYS = 7
MAX_ID_CHARS = 200


class Deliveries:
    """The deliveries seen, in the service's database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._claimed = 0

    async def claim(self, forge: str, delivery: str) -> bool:
        """True when ``delivery`` is new (and is now recorded), False for a replay."""
        return await in_db_thread(self.engine, lambda: self._claim(f"{forge}:{delivery[:MAX_ID_CHARS]}"))

    def _claim(self, key: str) -> bool:
        try:
            with self.engine.begin() as conn:
                conn.execute(deliveries.insert().values(id=key, received_at=utcnow()))
        except IntegrityError:
            return False
        self._claimed += 1
        if self._claimed % 500 == 1:
            self._prune()
        return True

    async def release(self, forge: str, delivery: str) -> None:
        key = f"{forge}:{delivery[:MAX_ID_CHARS]}"

        def forget() -> None:
            with self.engine.begin() as conn:
                conn.execute(delete(deliveries).where(deliveries.c.id == key))

        await in_db_thread(self.engine, forget)

    def _prune(self) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(deliveries).where(deliveries.c.received_at < utcnow() - timedelta(days=KEEP_DAYS)))
