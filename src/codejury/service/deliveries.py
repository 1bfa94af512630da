"""Which webhook deliveries were already received: by their header, and by what their payload names.

A forge redelivers the same delivery (a retry, a replay from its settings page) with the same
identifier (GitHub's ``X-GitHub-Delivery``, GitLab's ``Idempotency-Key``). That header is not
covered by authentication (GitHub signs only the body; GitLab's token is a header of its own), so
anyone holding a captured delivery could send it again under a fresh identifier. Each delivery
that asks for a job is therefore also known by ``event_identity``: the event as its authenticated
payload names it (for a push, the merge request's ids, the action, the head commit and the time
the forge stamped on it; for a comment, the comment's id), hashed. ``claim`` records both keys in
one insert and says whether the delivery is new: a delivery that repeats either one is a replay,
and two copies arriving at once cannot both pass. ``release`` forgets a delivery whose review
could not be queued, so the forge's next attempt is not taken for a replay. Entries older than
``KEEP_DAYS`` are pruned.

On PostgreSQL with the job queue (``codejury serve --database``), a claim is one autocommit statement
on the queue's own connection pool, awaited on the event loop (``Statements``), rather than a hop to
a thread and four round trips through the engine (the pool's ping, ``BEGIN``, the insert, ``COMMIT``),
each waiting for a core while a burst of webhooks and the reviews beside it keep both busy; and
``codejury serve`` claims a burst's deliveries together (``pg_intake``), releases and prunes through
``forget`` and ``count_claims`` on the same pool.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import Connection, Engine, delete, select
from sqlalchemy.exc import IntegrityError

from codejury.service.tables import deliveries, in_db_thread, utcnow
from codejury.service.webhooks import ReviewRequest

KEEP_DAYS = 7
MAX_ID_CHARS = 200
_INSERT_KEYS = f"INSERT INTO {deliveries.name} (id, received_at) SELECT id, %(at)s FROM unnest(%(ids)s::text[]) AS id"
_DELETE_KEYS = f"DELETE FROM {deliveries.name} WHERE id = ANY(%(ids)s::text[])"
_PRUNE = f"DELETE FROM {deliveries.name} WHERE received_at < %(before)s"


class Statements(Protocol):
    """Statements on PostgreSQL awaited on the event loop, each a transaction of its own (autocommit),
    with ``%(name)s`` parameters."""

    async def insert_new(self, query: str, **params: object) -> bool:
        """Run an insert; False when it would break a unique constraint (then nothing is inserted)."""
        ...

    async def execute(self, query: str, **params: object) -> None: ...


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def event_identity(request: ReviewRequest, payload: Mapping[str, Any]) -> str:
    """What the authenticated payload says this event is, hashed: equal for a replay of it, whatever
    its headers, and different for every other push or comment.

    Only the payload is read (its kind too: a header could be changed), with ``request``, which was
    read from it: GitHub ``pull_request`` the pull request's id, repository and number, the action,
    the head SHA and ``updated_at``; a GitHub comment its id and URL (issue and review comments are
    numbered apart); GitLab merge request ``object_attributes.id``, project and iid, the action,
    ``last_commit.id``, ``oldrev`` and ``updated_at``; a GitLab note its id and action.
    """
    parts: list[object] = [request.forge, request.key, request.head_sha]
    if request.forge == "github":
        if request.chat is not None:
            comment = _object(payload.get("comment"))
            parts += ["comment", comment.get("id"), comment.get("html_url") or comment.get("url")]
        else:
            pull = _object(payload.get("pull_request"))
            parts += ["pull_request", pull.get("id"), pull.get("updated_at")]
        parts.append(payload.get("action"))
    else:
        attrs = _object(payload.get("object_attributes"))
        parts += [payload.get("object_kind"), attrs.get("id"), attrs.get("action")]
        if request.chat is None:
            parts += [attrs.get("oldrev"), attrs.get("updated_at")]
    text = "\x1f".join("" if part is None else str(part) for part in parts)
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def delivery_keys(forge: str, delivery: str, event: str) -> list[str]:
    """The rows of one delivery: ``forge#event`` always, ``forge:delivery-id`` when the header was sent
    (the two spellings cannot meet: a forge's name holds neither ``#`` nor ``:``)."""
    keys = [f"{forge}#{event}"]
    if delivery:
        keys.append(f"{forge}:{delivery[:MAX_ID_CHARS]}")
    return keys


class Deliveries:
    """The deliveries seen, in the service's database."""

    def __init__(self, engine: Engine, statements: Statements | None = None) -> None:
        """``statements``: the same PostgreSQL database as ``engine``, for claims and releases (see above)."""
        self.engine = engine
        self.statements = statements
        self._claimed = 0

    async def claim(self, forge: str, delivery: str, event: str) -> bool:
        """True when the delivery is new (its keys are now recorded), False for a replay: its
        ``delivery`` header or its ``event`` (``event_identity``) was already received."""
        keys = delivery_keys(forge, delivery, event)
        if self.statements is None:
            return await in_db_thread(self.engine, lambda: self._claim(keys))
        if not await self.statements.insert_new(_INSERT_KEYS, ids=keys, at=utcnow()):
            return False  # one statement: both keys are recorded, or neither
        await self.count_claims(1)
        return True

    def _claim(self, keys: list[str]) -> bool:
        try:
            with self.engine.begin() as conn:
                conn.execute(deliveries.insert().values([{"id": key, "received_at": utcnow()} for key in keys]))
        except IntegrityError:
            return False
        self.claimed(1)
        return True

    def claim_in(self, conn: Connection, forge: str, delivery: str, event: str) -> bool:
        """``claim`` inside the caller's transaction, for a caller that is the database's only writer (the
        embedded queue's SQLite file, written on its one thread): a replay inserts nothing."""
        keys = delivery_keys(forge, delivery, event)
        if conn.execute(select(deliveries.c.id).where(deliveries.c.id.in_(keys)).limit(1)).first() is not None:
            return False
        conn.execute(deliveries.insert().values([{"id": key, "received_at": utcnow()} for key in keys]))
        return True

    def claimed(self, count: int) -> None:
        """Count ``count`` new deliveries; old entries are pruned every 500."""
        if self._count(count):
            self._prune()

    def _count(self, count: int) -> bool:
        """Count ``count`` new deliveries; True when old entries are due to be pruned (the first, then every 500)."""
        before = self._claimed
        self._claimed += count
        return bool(count) and (before == 0 or before // 500 != self._claimed // 500)

    async def count_claims(self, count: int) -> None:
        """``claimed`` for a caller on the event loop (``statements`` set: one statement awaited there)."""
        if not self._count(count):
            return
        if self.statements is None:
            await in_db_thread(self.engine, self._prune)
        else:
            await self.statements.execute(_PRUNE, before=_oldest_kept())

    async def release(self, forge: str, delivery: str, event: str) -> None:
        """Forget a claimed delivery whose job could not be queued."""
        await self.forget(delivery_keys(forge, delivery, event))

    async def forget(self, keys: list[str]) -> None:
        """Forget these keys (``delivery_keys``)."""
        if self.statements is not None:
            await self.statements.execute(_DELETE_KEYS, ids=keys)
            return

        def forget() -> None:
            with self.engine.begin() as conn:
                conn.execute(delete(deliveries).where(deliveries.c.id.in_(keys)))

        await in_db_thread(self.engine, forget)

    def _prune(self) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(deliveries).where(deliveries.c.received_at < _oldest_kept()))


def _oldest_kept() -> datetime:
    return utcnow() - timedelta(days=KEEP_DAYS)
