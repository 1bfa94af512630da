"""The service's routes over the in-process ASGI client: authentication, replays, coalescing, skips, ingest."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import select

from codejury.forges.hosts import forge_hosts
from codejury.record.model import ReviewRecord
from codejury.record.store import Store
from codejury.record.target import sqlite_target
from codejury.service.app import ServiceState, create_app
from codejury.service.deliveries import Deliveries
from codejury.service.local_queue import LocalQueue
from codejury.service.tables import jobs, make_engine
from codejury.service.webhooks import ReviewRequest
from tests.service.helpers import (
    GITHUB_SECRET,
    GITLAB_TOKEN,
    INGEST_TOKEN,
    github_delivery,
    github_pr_event,
    gitlab_delivery,
    gitlab_mr_event,
)
from tests.timing import FOREVER, bounded

PR_URL = "https://github.example/octo/app/pull/7"
MR_URL = "https://gitlab.example/acme/widgets/-/merge_requests/7"


async def _never(request: ReviewRequest) -> str:
    raise AssertionError("no job runs in these tests")


@pytest.fixture
def state(tmp_path: Path) -> ServiceState:
    engine = make_engine(f"sqlite+pysqlite:///{tmp_path / 'service.sqlite3'}")
    return ServiceState(
        queue=LocalQueue(engine, _never),  # not started: queued jobs stay in their table
        deliveries=Deliveries(engine),
        store=Store(sqlite_target(tmp_path / "reviews.sqlite3")),
        github_secret=GITHUB_SECRET,
        gitlab_token=GITLAB_TOKEN,
        ingest_token=INGEST_TOKEN,
        hosts=forge_hosts(
            {"CODEJURY_GITHUB_URL": "https://github.example", "CODEJURY_GITLAB_URL": "https://gitlab.example"}
        ),
    )


Client = Callable[[], Awaitable[httpx2.AsyncClient]]


@pytest.fixture
async def client(state: ServiceState) -> AsyncIterator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=create_app(state))
    async with httpx2.AsyncClient(transport=transport, base_url="http://service") as c:
        yield c


def queued(state: ServiceState) -> list[dict[str, Any]]:
    assert isinstance(state.queue, LocalQueue)
    with state.queue.engine.connect() as conn:
        rows = conn.execute(select(jobs.c.key, jobs.c.state, jobs.c.request).order_by(jobs.c.id)).all()
    return [{"key": k, "state": s, "request": json.loads(r)} for k, s, r in rows]


async def test_a_signed_github_delivery_is_queued_within_the_second(
    client: httpx2.AsyncClient, state: ServiceState
) -> None:
    body, headers = github_delivery(github_pr_event(PR_URL, head_sha="abc"))
    # no worker runs here: a route that waited for the review would never answer (the figure, webhook latency
    # p50/p99, is benchmarks/service.py's)
    with bounded(1.0, hung_s=FOREVER, what="answering the delivery"):
        answer = await client.post("/webhooks/github", content=body, headers=headers)
    assert answer.status_code == 202
    assert answer.json() == {"outcome": "queued", "key": "github:octo/app#7"}
    [job] = queued(state)
    assert job["state"] == "waiting" and job["request"]["url"] == PR_URL and job["request"]["head_sha"] == "abc"


@pytest.mark.parametrize("how", ["wrong secret", "missing", "tampered body", "not sha256"])
async def test_a_github_delivery_that_fails_the_signature_is_401_and_queues_nothing(
    client: httpx2.AsyncClient, state: ServiceState, how: str
) -> None:
    body, headers = github_delivery(
        github_pr_event(PR_URL), secret="not-the-secret" if how == "wrong secret" else GITHUB_SECRET
    )
    if how == "missing":
        del headers["X-Hub-Signature-256"]
    if how == "tampered body":
        body = body.replace(b"octo/app", b"evil/app")
    if how == "not sha256":
        headers["X-Hub-Signature-256"] = headers["X-Hub-Signature-256"].replace("sha256=", "sha1=")
    answer = await client.post("/webhooks/github", content=body, headers=headers)
    assert answer.status_code == 401
    assert queued(state) == []
    assert GITHUB_SECRET not in answer.text


@pytest.mark.parametrize("token", ["wrong", "", None])
async def test_a_gitlab_delivery_without_the_token_is_401_and_queues_nothing(
    client: httpx2.AsyncClient, state: ServiceState, token: str | None
) -> None:
    body, headers = gitlab_delivery(gitlab_mr_event(MR_URL), token=token or "")
    if token is None:
        del headers["X-Gitlab-Token"]
    answer = await client.post("/webhooks/gitlab", content=body, headers=headers)
    assert answer.status_code == 401
    assert queued(state) == []


async def test_a_replayed_delivery_is_answered_and_not_queued_again(
    client: httpx2.AsyncClient, state: ServiceState
) -> None:
    body, headers = github_delivery(github_pr_event(PR_URL), delivery="d-1")
    first = await client.post("/webhooks/github", content=body, headers=headers)
    again = await client.post("/webhooks/github", content=body, headers=headers)
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["outcome"] == "duplicate"
    body, headers = gitlab_delivery(gitlab_mr_event(MR_URL), idempotency_key="k-1")
    assert (await client.post("/webhooks/gitlab", content=body, headers=headers)).status_code == 202
    replay = await client.post("/webhooks/gitlab", content=body, headers=headers)
    assert replay.json()["outcome"] == "duplicate"
    assert [j["key"] for j in queued(state)] == ["github:octo/app#7", "gitlab:acme/widgets!7"]


async def test_pushes_to_one_merge_request_coalesce_into_one_waiting_job_at_the_newest_head(
    client: httpx2.AsyncClient, state: ServiceState
) -> None:
    outcomes = []
    for n in range(5):
        body, headers = gitlab_delivery(gitlab_mr_event(MR_URL, head_sha=f"sha{n}"))
        outcomes.append((await client.post("/webhooks/gitlab", content=body, headers=headers)).json()["outcome"])
    other = gitlab_mr_event(MR_URL.replace("/7", "/8"), iid=8)
    body, headers = gitlab_delivery(other)
    await client.post("/webhooks/gitlab", content=body, headers=headers)
    assert outcomes == ["queued", "coalesced", "coalesced", "coalesced", "coalesced"]
    jobs_now = queued(state)
    assert [j["key"] for j in jobs_now] == ["gitlab:acme/widgets!7", "gitlab:acme/widgets!8"]
    assert jobs_now[0]["request"]["head_sha"] == "sha4"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (github_pr_event(PR_URL, draft=True), "draft"),
        (github_pr_event(PR_URL, sender="renovate[bot]", sender_type="Bot"), "bot"),
        (github_pr_event(PR_URL, action="closed"), "closed"),
        (github_pr_event(PR_URL, action="labeled"), "labeled"),
    ],
)
async def test_github_drafts_bots_and_other_actions_are_skipped(
    client: httpx2.AsyncClient, state: ServiceState, payload: dict[str, Any], reason: str
) -> None:
    body, headers = github_delivery(payload)
    answer = await client.post("/webhooks/github", content=body, headers=headers)
    assert answer.status_code == 202
    assert answer.json()["outcome"] == "skipped" and reason in answer.json()["reason"]
    assert queued(state) == []


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (gitlab_mr_event(MR_URL, draft=True), "draft"),
        (gitlab_mr_event(MR_URL, username="project_1_bot"), "bot"),
        (gitlab_mr_event(MR_URL, oldrev=None), "without new commits"),
        (gitlab_mr_event(MR_URL, action="approved"), "approved"),
    ],
)
async def test_gitlab_drafts_bots_and_edits_are_skipped(
    client: httpx2.AsyncClient, state: ServiceState, payload: dict[str, Any], reason: str
) -> None:
    body, headers = gitlab_delivery(payload)
    answer = await client.post("/webhooks/gitlab", content=body, headers=headers)
    assert answer.json()["outcome"] == "skipped" and reason in answer.json()["reason"]
    assert queued(state) == []


async def test_an_oversized_body_is_413_before_anything_else(client: httpx2.AsyncClient, state: ServiceState) -> None:
    state.max_webhook_bytes = 2000
    payload = github_pr_event(PR_URL)
    payload["pull_request"]["body"] = "x" * 5000
    body, headers = github_delivery(payload)
    answer = await client.post("/webhooks/github", content=body, headers=headers)
    assert answer.status_code == 413
    assert queued(state) == []


async def test_a_github_ping_is_answered(client: httpx2.AsyncClient) -> None:
    body, headers = github_delivery({"zen": "Keep it logically awesome."}, event="ping")
    answer = await client.post("/webhooks/github", content=body, headers=headers)
    assert answer.status_code == 202 and "ping" in answer.json()["reason"]


async def test_with_no_webhook_secret_the_routes_are_off_and_the_service_says_why(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite+pysqlite:///{tmp_path / 's.sqlite3'}")
    bare = ServiceState(queue=LocalQueue(engine, _never), deliveries=Deliveries(engine))
    note = bare.webhook_routes_note()
    assert note is not None and "CODEJURY_GITHUB_WEBHOOK_SECRET" in note and "CODEJURY_GITLAB_WEBHOOK_TOKEN" in note
    transport = httpx2.ASGITransport(app=create_app(bare))
    async with httpx2.AsyncClient(transport=transport, base_url="http://service") as c:
        body, headers = github_delivery(github_pr_event(PR_URL), secret="")
        assert (await c.post("/webhooks/github", content=body, headers=headers)).status_code == 404
        assert (await c.get("/healthz")).status_code == 200
    with engine.connect() as conn:
        assert conn.execute(select(jobs.c.id)).all() == []


async def test_ingest_stores_a_record_once_and_refuses_a_wrong_token(
    client: httpx2.AsyncClient, state: ServiceState
) -> None:
    record = ReviewRecord(tier="lite", verdict="approved", repository="acme/widgets", change_id="7")
    body = record.model_dump_json()
    wrong = await client.post("/api/ingest", content=body, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    ok = {"Authorization": f"Bearer {INGEST_TOKEN}"}
    first = await client.post("/api/ingest", content=body, headers=ok)
    again = await client.post("/api/ingest", content=body, headers=ok)
    assert (first.status_code, first.json()["stored"]) == (200, True)
    assert (again.status_code, again.json()["stored"]) == (200, False)  # a retried ingest is stored once
    bad = await client.post("/api/ingest", content=b'{"tier": 3}', headers=ok)
    assert bad.status_code == 422
    assert state.store is not None
    with state.store.connect() as conn:
        from codejury.record import schema

        assert conn.execute(select(schema.reviews.c.repository)).scalars().all() == ["acme/widgets"]


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("verdict",), "lgtm"),
        (("tier",), "<img src=x onerror=alert(1)>"),
        (("findings", 0, "severity"), "blocker"),
        (("reviewers", 0, "status"), "fine"),
        (("breaker_transitions", 0, "to_state"), "exploded"),
    ],
)
async def test_ingest_refuses_a_value_outside_its_closed_set_and_stores_nothing(
    client: httpx2.AsyncClient, state: ServiceState, where: tuple[str | int, ...], value: str
) -> None:
    from codejury.testing import review_seed as seed

    good = seed.record(
        review_kwargs={"findings": [seed.finding()], "reviewers": [seed.reviewer("security", "m")]}, breaker=True
    )
    document = json.loads(good.model_dump_json())
    *path, key = where
    target = document
    for step in path:
        target = target[step]
    target[key] = value
    ok = {"Authorization": f"Bearer {INGEST_TOKEN}"}
    answer = await client.post("/api/ingest", content=json.dumps(document), headers=ok)
    assert answer.status_code == 422 and "not a review record" in answer.json()["error"]
    assert (await client.post("/api/ingest", content=good.model_dump_json(), headers=ok)).status_code == 200
    assert state.store is not None
    with state.store.connect() as conn:
        from codejury.record import schema

        assert conn.execute(select(schema.reviews.c.verdict, schema.reviews.c.tier)).all() == [
            ("requested_changes", "full")
        ], "only the valid record is stored"


async def test_health_readiness_and_metrics(client: httpx2.AsyncClient, state: ServiceState) -> None:
    assert (await client.get("/healthz")).text == "ok"
    not_started = await client.get("/readyz")
    assert not_started.status_code == 503 and "queue" in not_started.text  # the runners are not started
    assert isinstance(state.queue, LocalQueue)
    await state.queue.start()
    try:
        assert (await client.get("/readyz")).json() == {"ready": True}
    finally:
        await state.queue.close()
    body, headers = github_delivery(github_pr_event(PR_URL), secret="bad")
    await client.post("/webhooks/github", content=body, headers=headers)
    text = (await client.get("/metrics")).text
    assert 'codejury_webhook_deliveries_total{forge="github",outcome="unauthorized"} 1.0' in text
    assert "codejury_reviews_total" in text or "# HELP codejury_reviews" in text


async def test_the_dashboard_shows_an_ingested_review_and_opens_it(
    client: httpx2.AsyncClient, state: ServiceState
) -> None:
    state.dashboard_token = "dashboard-token-0123456789"
    viewer = {"Authorization": "Bearer dashboard-token-0123456789"}
    record = ReviewRecord(tier="lite", verdict="requested_changes", repository="acme/widgets", change_id="!7")
    ok = {"Authorization": f"Bearer {INGEST_TOKEN}"}
    assert (await client.post("/api/ingest", content=record.model_dump_json(), headers=ok)).status_code == 200
    page = await client.get("/dashboard", headers=viewer)
    assert page.status_code == 200 and "acme/widgets" in page.text
    assert f"/dashboard/reviews/{record.uid}" in page.text
    one = await client.get(f"/dashboard/reviews/{record.uid}", headers=viewer)
    assert one.status_code == 200 and "acme/widgets" in one.text
    assert (await client.get("/dashboard/reviews/no-such-uid", headers=viewer)).status_code == 404
