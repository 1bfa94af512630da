"""Webhook bodies an attacker controls: nesting that would exhaust the parser, and captured deliveries
sent again under a fresh delivery id (the one header a replay can change freely)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from codejury.record.target import parse_record_url
from codejury.service import pg_queue
from codejury.service.app import ServiceState
from codejury.service.deliveries import Deliveries
from codejury.service.intake import BatchedIntake, SequentialIntake
from codejury.service.local_queue import LocalQueue
from codejury.service.tables import make_engine
from codejury.service.webhooks import MAX_JSON_DEPTH, ReviewRequest
from tests.service.helpers import GITHUB_SECRET, github_delivery, github_pr_event, gitlab_delivery, gitlab_mr_event
from tests.service.test_app import MR_URL, PR_URL, client, queued, state

__all__ = ["client", "state"]  # the fixtures of the service's route tests


def signed(body: bytes) -> str:
    """GitHub's ``X-Hub-Signature-256`` of ``body``."""
    return "sha256=" + hmac.new(GITHUB_SECRET.encode(), body, hashlib.sha256).hexdigest()


def deep(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


def github_pull(head_sha: str, updated_at: str, *, action: str = "synchronize") -> dict[str, Any]:
    """A ``pull_request`` event with the ids GitHub sends: the pull request's own id and ``updated_at``."""
    event = github_pr_event(PR_URL, head_sha=head_sha, action=action)
    event["pull_request"] |= {"id": 1_900_000_007, "updated_at": updated_at}
    return event


def gitlab_push(head_sha: str, oldrev: str, updated_at: str) -> dict[str, Any]:
    """A merge request ``update`` with new commits, with the ids GitLab sends."""
    event = gitlab_mr_event(MR_URL, head_sha=head_sha, oldrev=oldrev)
    event["object_attributes"] |= {"id": 5_000_007, "updated_at": updated_at}
    return event


def github_comment(comment_id: int) -> dict[str, Any]:
    return {
        "action": "created",
        "issue": {"number": 7, "html_url": PR_URL, "pull_request": {"html_url": PR_URL}},
        "comment": {"id": comment_id, "body": "/codejury review", "html_url": f"{PR_URL}#issuecomment-{comment_id}"},
        "repository": {"full_name": "octo/app"},
        "sender": {"login": "alice", "type": "User"},
    }


def gitlab_note(note_id: int) -> dict[str, Any]:
    return {
        "object_kind": "note",
        "user": {"id": 2, "username": "bob"},
        "project": {"path_with_namespace": "acme/widgets"},
        "object_attributes": {"id": note_id, "note": "/codejury review", "noteable_type": "MergeRequest"},
        "merge_request": {"iid": 7, "url": MR_URL, "state": "opened"},
    }


async def outcome_count(client: httpx2.AsyncClient, forge: str, outcome: str) -> float:
    line = f'codejury_webhook_deliveries_total{{forge="{forge}",outcome="{outcome}"}} '
    found = [row for row in (await client.get("/metrics")).text.splitlines() if row.startswith(line)]
    return float(found[0].removeprefix(line)) if found else 0.0


@pytest.mark.parametrize("forge", ["github", "gitlab"])
@pytest.mark.parametrize("levels", [100_000, MAX_JSON_DEPTH + 1])
async def test_an_authenticated_body_nested_too_deep_is_400_and_queues_nothing(
    client: httpx2.AsyncClient, state: ServiceState, forge: str, levels: int
) -> None:
    body = deep(levels)
    if forge == "github":
        headers = github_delivery({})[1] | {"X-Hub-Signature-256": signed(body)}
    else:
        headers = gitlab_delivery({})[1]
    answer = await client.post(f"/webhooks/{forge}", content=body, headers=headers)
    assert answer.status_code == 400
    assert answer.json() == {
        "outcome": "bad_payload",
        "error": f"the payload nests deeper than {MAX_JSON_DEPTH} levels",
    }
    assert queued(state) == []
    assert await outcome_count(client, forge, "bad_payload") == 1.0


async def test_brackets_in_text_and_nesting_up_to_the_bound_are_still_reviewed(
    client: httpx2.AsyncClient, state: ServiceState
) -> None:
    event = github_pull("abc", "2026-11-02T10:00:00Z")
    event["pull_request"]["body"] = '[[[[{{{{ a description full of brackets \\" [[[[' * 200
    nested: dict[str, Any] = {}
    for _ in range(MAX_JSON_DEPTH - 3):  # with the event, pull_request and the innermost {}: exactly the bound
        nested = {"a": nested}
    event["pull_request"]["extra"] = nested
    body, headers = github_delivery(event)
    answer = await client.post("/webhooks/github", content=body, headers=headers)
    assert (answer.status_code, answer.json()["outcome"]) == (202, "queued")
    assert [job["key"] for job in queued(state)] == ["github:octo/app#7"]


async def test_a_captured_github_delivery_sent_again_with_a_fresh_delivery_id_is_a_duplicate(
    client: httpx2.AsyncClient, state: ServiceState
) -> None:
    body, headers = github_delivery(github_pull("abc", "2026-11-02T10:00:00Z"))
    first = await client.post("/webhooks/github", content=body, headers=headers)
    assert (first.status_code, first.json()["outcome"]) == (202, "queued")
    for fresh in ({"X-GitHub-Delivery": str(uuid.uuid4())}, {"X-GitHub-Delivery": ""}):
        replay = await client.post("/webhooks/github", content=body, headers=headers | fresh)
        assert (replay.status_code, replay.json()) == (200, {"outcome": "duplicate", "key": "github:octo/app#7"})
    assert len(queued(state)) == 1
    assert await outcome_count(client, "github", "duplicate") == 2.0


async def test_a_captured_gitlab_delivery_sent_again_with_a_fresh_idempotency_key_is_a_duplicate(
    client: httpx2.AsyncClient, state: ServiceState
) -> None:
    event = gitlab_push("b" * 40, "a" * 40, "2026-11-02 10:00:00 UTC")
    body, headers = gitlab_delivery(event)
    assert (await client.post("/webhooks/gitlab", content=body, headers=headers)).json()["outcome"] == "queued"
    fresh = headers | {"Idempotency-Key": str(uuid.uuid4())}
    replay = await client.post("/webhooks/gitlab", content=body, headers=fresh)
    assert (replay.status_code, replay.json()["outcome"]) == (200, "duplicate")
    # GitLab's token is a header: the body itself can be re-serialized, and it is still the same event
    rewritten = json.dumps(event, indent=2, sort_keys=True).encode()
    without_key = {k: v for k, v in headers.items() if k != "Idempotency-Key"}
    again = await client.post("/webhooks/gitlab", content=rewritten, headers=without_key)
    assert (again.status_code, again.json()["outcome"]) == (200, "duplicate")
    assert [job["key"] for job in queued(state)] == ["gitlab:acme/widgets!7"]


async def test_a_replayed_comment_command_runs_once(client: httpx2.AsyncClient, state: ServiceState) -> None:
    body, headers = github_delivery(github_comment(901), event="issue_comment")
    assert (await client.post("/webhooks/github", content=body, headers=headers)).json()["outcome"] == "queued"
    fresh = headers | {"X-GitHub-Delivery": str(uuid.uuid4())}
    assert (await client.post("/webhooks/github", content=body, headers=fresh)).json()["outcome"] == "duplicate"
    body, headers = gitlab_delivery(gitlab_note(77))
    headers["X-Gitlab-Event"] = "Note Hook"
    assert (await client.post("/webhooks/gitlab", content=body, headers=headers)).json()["outcome"] == "queued"
    fresh = headers | {"Idempotency-Key": str(uuid.uuid4())}
    assert (await client.post("/webhooks/gitlab", content=body, headers=fresh)).json()["outcome"] == "duplicate"
    assert [job["key"] for job in queued(state)] == ["github:octo/app#7 chat 901", "gitlab:acme/widgets!7 chat 77"]


async def test_different_pushes_to_one_merge_request_are_still_queued_and_coalesced(
    client: httpx2.AsyncClient, state: ServiceState
) -> None:
    github = [
        github_pull("abc", "2026-11-02T10:00:00Z", action="opened"),
        github_pull("def", "2026-11-02T10:05:00Z"),
        github_pull("abc", "2026-11-02T10:09:00Z"),  # a force-push back to the first head
    ]
    gitlab = [
        gitlab_push("b" * 40, "a" * 40, "2026-11-02 10:00:00 UTC"),
        gitlab_push("c" * 40, "b" * 40, "2026-11-02 10:05:00 UTC"),
        gitlab_push("b" * 40, "c" * 40, "2026-11-02 10:09:00 UTC"),  # back to the first head
    ]
    outcomes = []
    for event in github:
        body, headers = github_delivery(event)
        outcomes.append((await client.post("/webhooks/github", content=body, headers=headers)).json()["outcome"])
    for event in gitlab:
        body, headers = gitlab_delivery(event)
        outcomes.append((await client.post("/webhooks/gitlab", content=body, headers=headers)).json()["outcome"])
    assert outcomes == ["queued", "coalesced", "coalesced", "queued", "coalesced", "coalesced"]
    jobs_now = queued(state)
    assert [(j["key"], j["request"]["head_sha"]) for j in jobs_now] == [
        ("github:octo/app#7", "abc"),
        ("gitlab:acme/widgets!7", "b" * 40),
    ]


class FailsOnce:
    """The queue, unavailable for the first delivery."""

    def __init__(self, queue: LocalQueue) -> None:
        self.queue = queue
        self.failed = False

    async def submit(self, request: ReviewRequest) -> str:
        if not self.failed:
            self.failed = True
            raise OSError("database is locked")
        return await self.queue.submit(request)

    async def ready(self) -> bool:
        return True


@pytest.mark.parametrize("intake", ["batched", "sequential"])
async def test_a_delivery_that_could_not_be_queued_is_taken_when_the_forge_retries_it(
    client: httpx2.AsyncClient, state: ServiceState, monkeypatch: pytest.MonkeyPatch, intake: str
) -> None:
    local = state.queue
    assert isinstance(local, LocalQueue) and isinstance(state.taking, BatchedIntake)
    if intake == "sequential":  # a queue with its own database: claim, submit, forget the claim
        state.taking = SequentialIntake(state.deliveries, FailsOnce(local))
    else:  # the embedded queue: claim and job in one transaction, rolled back together
        submit_in = LocalQueue.submit_in
        failed: list[bool] = []

        def fails_once(queue: LocalQueue, conn: Any, request: ReviewRequest) -> str:
            if not failed:
                failed.append(True)
                raise OSError("database is locked")
            return submit_in(queue, conn, request)

        monkeypatch.setattr(LocalQueue, "submit_in", fails_once)
    body, headers = gitlab_delivery(gitlab_push("b" * 40, "a" * 40, "2026-11-02 10:00:00 UTC"))
    first = await client.post("/webhooks/gitlab", content=body, headers=headers)
    assert (first.status_code, first.json()["outcome"]) == (503, "queue_unavailable")
    retry = await client.post("/webhooks/gitlab", content=body, headers=headers)
    assert (retry.status_code, retry.json()["outcome"]) == (202, "queued")
    assert [job["key"] for job in queued(state)] == ["gitlab:acme/widgets!7"]


async def test_a_burst_of_deliveries_is_written_in_a_few_transactions(
    client: httpx2.AsyncClient, state: ServiceState
) -> None:
    intake = state.taking
    assert isinstance(intake, BatchedIntake)
    bodies = [
        gitlab_delivery(gitlab_push(f"{n:040x}", "a" * 40, f"2026-11-02 10:00:{n:02d} UTC")) for n in range(1, 41)
    ]
    answers = await asyncio.gather(*(client.post("/webhooks/gitlab", content=b, headers=h) for b, h in bodies))
    outcomes = [a.json()["outcome"] for a in answers]
    assert outcomes.count("queued") == 1 and outcomes.count("coalesced") == 39  # one merge request: one job waits
    replay = await client.post("/webhooks/gitlab", content=bodies[5][0], headers=bodies[5][1])
    assert replay.json()["outcome"] == "duplicate"
    assert intake.groups < 40  # grouped: the deliveries that arrived while one batch was written went together


@pytest.fixture(params=["sqlite", "postgresql", "postgresql-queue"])
async def seen(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Deliveries]:
    """The deliveries table on each database the service keeps it in; ``postgresql-queue`` as ``codejury serve
    --database`` claims them, through the job queue's connection pool."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'service.sqlite3'}"
    else:
        url = request.getfixturevalue("new_pg_database")()
    engine = make_engine(parse_record_url(url).url)
    if request.param == "postgresql-queue":
        await pg_queue.apply_schema(url)
        app = pg_queue.make_app(url)
        async with app.open_async():
            yield Deliveries(engine, pg_queue.PostgresQueue(app))
    else:
        yield Deliveries(engine)
    engine.dispose()


async def test_a_delivery_is_new_only_when_neither_its_id_nor_its_event_was_seen(seen: Deliveries) -> None:
    assert await seen.claim("gitlab", "key-1", "event-a")
    assert not await seen.claim("gitlab", "key-1", "event-b")  # the forge's own redelivery
    assert not await seen.claim("gitlab", "key-2", "event-a")  # the same event under a fresh id
    assert not await seen.claim("gitlab", "", "event-a")  # or with none
    assert await seen.claim("gitlab", "key-2", "event-d")  # a replay refused records nothing: key-2 is still new
    assert await seen.claim("github", "key-1", "event-a")  # each forge has its own
    assert await seen.claim("gitlab", "key-3", "event-c")
    await seen.release("gitlab", "key-3", "event-c")  # it could not be queued: the forge's retry is taken
    assert await seen.claim("gitlab", "key-3", "event-c")
