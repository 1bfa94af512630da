"""Deliveries taken in groups on PostgreSQL (``service.pg_intake``): the answers one delivery at a time would
get, in a few statements, on a real PostgreSQL server; and what happens when another process or the
database gets in the way."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace

import psycopg
import pytest

from codejury.record.target import parse_record_url
from codejury.service import pg_queue
from codejury.service.deliveries import Deliveries
from codejury.service.intake import SequentialIntake, intake_for
from codejury.service.pg_intake import PostgresIntake
from codejury.service.tables import make_engine
from codejury.service.webhooks import ReviewRequest


@dataclass
class Service:
    url: str
    queue: pg_queue.PostgresQueue
    deliveries: Deliveries

    def jobs(self) -> list[tuple[str, str]]:
        """(queueing lock, status) of every job, in the order they were deferred."""
        with psycopg.connect(self.url) as conn:
            rows = conn.execute("SELECT queueing_lock, status FROM procrastinate_jobs ORDER BY id").fetchall()
        return [(str(lock), str(status)) for lock, status in rows]

    def kept(self) -> set[str]:
        with psycopg.connect(self.url) as conn:
            return {str(row[0]) for row in conn.execute("SELECT id FROM codejury_webhook_deliveries").fetchall()}


@pytest.fixture
def open_service(new_pg_database: Callable[[], str]) -> Callable[[], AsyncIterator[Service]]:
    """``codejury serve --database``'s queue and deliveries on a fresh database (several may be open at once)."""

    async def opened() -> AsyncIterator[Service]:
        url = new_pg_database()
        engine = make_engine(parse_record_url(url).url)
        await pg_queue.apply_schema(url)
        app = pg_queue.make_app(url)
        try:
            async with app.open_async():
                queue = pg_queue.PostgresQueue(app)
                yield Service(url, queue, Deliveries(engine, queue))
        finally:
            engine.dispose()

    return opened


@pytest.fixture
async def service(open_service: Callable[[], AsyncIterator[Service]]) -> AsyncIterator[Service]:
    async for opened in open_service():
        yield opened


def review(mr: int, *, forced: bool = False) -> ReviewRequest:
    url = f"https://gitlab.example/acme/widgets/-/merge_requests/{mr}"
    return ReviewRequest("gitlab", url, f"gitlab:acme/widgets!{mr}", forced=forced)


Delivery = tuple[str, str, ReviewRequest]
"""(delivery header, event identity, what it asks for)."""


def burst() -> list[Delivery]:
    """Pushes to three merge requests, a person's review of one of them, the forge's redelivery of one push
    (its header again) and a replay of another under a fresh header (its event again)."""
    pushes: list[Delivery] = [(f"d-{n}", f"push-{n}", review(1 + n % 3)) for n in range(9)]
    return [
        *pushes[:5],
        ("d-1", "push-1", review(2)),  # redelivered while the first copy may still be in flight
        ("d-person", "note-1", review(1, forced=True)),
        *pushes[5:],
        ("d-fresh", "push-7", review(2)),  # a captured delivery sent again under a new id
    ]


async def test_serve_on_postgresql_takes_deliveries_in_groups_on_the_queues_pool(service: Service) -> None:
    assert isinstance(intake_for(service.deliveries, service.queue), PostgresIntake)
    elsewhere = Deliveries(service.deliveries.engine)  # deliveries kept apart from the queue's pool
    assert isinstance(intake_for(elsewhere, service.queue), SequentialIntake)


async def test_a_burst_gets_the_answers_of_one_delivery_at_a_time_in_a_few_groups(
    open_service: Callable[[], AsyncIterator[Service]],
) -> None:
    deliveries = burst()
    async for one_by_one in open_service():
        sequential = SequentialIntake(one_by_one.deliveries, one_by_one.queue)
        expected = [await sequential.take("gitlab", d, e, r) for d, e, r in deliveries]
        expected_jobs = one_by_one.jobs()
    async for grouped in open_service():
        intake = PostgresIntake(grouped.queue, grouped.deliveries)
        answers = await asyncio.gather(*(intake.take("gitlab", d, e, r) for d, e, r in deliveries))
        assert answers == expected
        assert grouped.jobs() == expected_jobs
        assert intake.groups < len(deliveries)
        assert expected.count("duplicate") == 2 and expected.count("queued") == 4  # three pushes' jobs and a person's
        again = await asyncio.gather(*(intake.take("gitlab", d, e, r) for d, e, r in deliveries))
        assert again == ["duplicate"] * len(deliveries)
        late = await intake.take("gitlab", "d-late", "push-late", review(3))
        assert late == "coalesced"  # a job of merge request 3 still waits
        assert grouped.jobs() == expected_jobs


async def test_a_job_another_process_queued_after_the_claim_takes_the_push_in(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    intake = PostgresIntake(service.queue, service.deliveries)
    claim = intake._claim

    async def claim_then_another_process_defers(conn: psycopg.AsyncConnection, group: list) -> tuple[set, set]:
        found = await claim(conn, group)
        assert await service.queue.submit(review(1)) == "queued"  # a second `codejury serve`, in between
        return found

    monkeypatch.setattr(intake, "_claim", claim_then_another_process_defers)
    answers = await asyncio.gather(
        intake.take("gitlab", "d-1", "push-1", review(1)), intake.take("gitlab", "d-2", "push-2", review(2))
    )
    assert answers == ["coalesced", "queued"]
    assert sorted(service.jobs()) == [("gitlab:acme/widgets!1", "todo"), ("gitlab:acme/widgets!2", "todo")]


async def test_deliveries_whose_jobs_could_not_be_queued_are_taken_when_the_forge_retries_them(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    intake = PostgresIntake(service.queue, service.deliveries)
    assert await intake.take("gitlab", "d-0", "push-0", review(3)) == "queued"
    defer_all = service.queue.defer_all

    async def database_gone(*args: object) -> None:
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(service.queue, "defer_all", database_gone)
    group = [("d-1", "push-1", review(1)), ("d-2", "push-2", review(1)), ("d-3", "push-3", review(3))]
    group.append(("d-0", "push-0", review(3)))  # a redelivery: still a duplicate
    answers = await asyncio.gather(*(intake.take("gitlab", d, e, r) for d, e, r in group), return_exceptions=True)
    assert [type(a).__name__ for a in answers[:2]] == ["OperationalError", "OperationalError"]
    assert answers[2:] == ["coalesced", "duplicate"]  # merge request 3's job was waiting: nothing to defer
    assert "gitlab:d-1" not in service.kept() and "gitlab#push-2" not in service.kept()
    monkeypatch.setattr(service.queue, "defer_all", defer_all)
    retried = await asyncio.gather(*(intake.take("gitlab", d, e, r) for d, e, r in group[:2]))
    assert retried == ["queued", "coalesced"]


async def test_a_delivery_another_process_is_claiming_is_a_duplicate_and_keeps_neither_key(service: Service) -> None:
    intake = PostgresIntake(service.queue, service.deliveries)
    with psycopg.connect(service.url) as other:  # another `codejury serve` took the same event, not yet committed
        other.execute("INSERT INTO codejury_webhook_deliveries VALUES ('gitlab#push-1', now())")
        taking = asyncio.create_task(intake.take("gitlab", "d-fresh", "push-1", review(1)))
        await asyncio.sleep(0.3)
        assert not taking.done()  # PostgreSQL holds the insert until the other transaction ends
        other.commit()
        assert await taking == "duplicate"
    assert service.kept() == {"gitlab#push-1"}
    assert service.jobs() == []
    assert await intake.take("gitlab", "d-2", "push-2", replace(review(1), head_sha="b" * 40)) == "queued"
