"""The service sends a forge token only to the configured forge, never to a host a delivery names.

A capture server on loopback records every request it receives, with its headers. Signed
deliveries (GitLab merge request and note hooks; GitHub ``pull_request``, ``issue_comment`` and
``pull_request_review_comment`` events) whose merge request URL names it are refused: 403
``foreign_host``, one log line naming the host, the delivery counted in ``/metrics``, nothing
queued, and the capture server receives nothing. So is a URL on the configured forge that names
another project than the payload's own. A job whose URL names another host (queued by an older
version, or written into the queue by anyone) is refused by the job itself before any request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from codejury_fakes.loopback import LoopbackServer, QuietHandler
from sqlalchemy import select

from codejury.forges.hosts import forge_hosts
from codejury.service.app import ServiceState, create_app
from codejury.service.chat import ChatCommand
from codejury.service.commands import ServiceOptions, build_service
from codejury.service.deliveries import Deliveries
from codejury.service.jobs import JobRunner, ReviewSetup
from codejury.service.local_queue import LocalQueue
from codejury.service.tables import jobs, make_engine
from codejury.service.webhooks import ReviewRequest
from tests.service.helpers import (
    GITHUB_SECRET,
    GITLAB_TOKEN,
    github_delivery,
    github_pr_event,
    gitlab_delivery,
    gitlab_mr_event,
)
from tests.service.test_local_reviews import SCRIPTED_PLUGIN, options, serving

GITLAB_BOT_TOKEN = "glpat-service-bot-0123456789"
GITHUB_BOT_TOKEN = "ghp_service_bot_0123456789"
TOKENS = (GITLAB_BOT_TOKEN, GITHUB_BOT_TOKEN, GITLAB_TOKEN, GITHUB_SECRET)


class CaptureServer(LoopbackServer):
    """Answers every request ``200 {}`` and records it: ``(method, path, headers)``."""

    thread_name = "capture-server"

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        outer = self

        class Handler(QuietHandler):
            def _record(self) -> None:
                self.read_body()
                outer.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
                self.send_body(200, "application/json", b"{}")

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _record

        super().__init__(Handler)


@pytest.fixture
def capture() -> Iterator[CaptureServer]:
    with CaptureServer() as server:
        yield server


def service_options(tmp_path: Path, **env: str) -> ServiceOptions:
    """``codejury serve`` with both forges' webhooks and bot tokens, and the default forge hosts."""
    return options(
        tmp_path,
        CODEJURY_GITLAB_TOKEN=GITLAB_BOT_TOKEN,
        CODEJURY_GITHUB_TOKEN=GITHUB_BOT_TOKEN,
        CODEJURY_GITLAB_WEBHOOK_TOKEN=GITLAB_TOKEN,
        CODEJURY_GITHUB_WEBHOOK_SECRET=GITHUB_SECRET,
        **env,
    )


def gitlab_note(mr_url: str, project: str = "acme/widgets") -> dict[str, Any]:
    return {
        "object_kind": "note",
        "user": {"id": 5, "username": "alice"},
        "project": {"path_with_namespace": project},
        "object_attributes": {"id": 91, "note": "/codejury ask why?", "noteable_type": "MergeRequest"},
        "merge_request": {"iid": 7, "url": mr_url, "state": "opened"},
    }


def github_comment(pr_url: str, repo: str = "octo/app") -> dict[str, Any]:
    return {
        "action": "created",
        "issue": {"number": 7, "html_url": pr_url, "pull_request": {"html_url": pr_url}},
        "comment": {"id": 81, "body": "/codejury review", "user": {"login": "alice"}},
        "repository": {"full_name": repo},
        "sender": {"login": "alice", "type": "User"},
    }


def github_review_comment(pr_url: str, repo: str = "octo/app") -> dict[str, Any]:
    return {
        "action": "created",
        "pull_request": {"number": 7, "html_url": pr_url},
        "comment": {"id": 82, "body": "/codejury help", "user": {"login": "alice"}},
        "repository": {"full_name": repo},
        "sender": {"login": "alice", "type": "User"},
    }


Delivery = tuple[str, bytes, dict[str, str]]


def delivery(kind: str, base: str, *, project: str = "acme/widgets", repo: str = "octo/app") -> Delivery:
    """``(route, body, headers)`` of a signed delivery whose merge request URL is on ``base``."""
    mr_url = f"{base}/acme/widgets/-/merge_requests/7"
    pr_url = f"{base}/octo/app/pull/7"
    if kind == "gitlab merge request":
        return ("/webhooks/gitlab", *gitlab_delivery(gitlab_mr_event(mr_url, project)))
    if kind == "gitlab note":
        body, headers = gitlab_delivery(gitlab_note(mr_url, project))
        return "/webhooks/gitlab", body, {**headers, "X-Gitlab-Event": "Note Hook"}
    if kind == "github pull request":
        return ("/webhooks/github", *github_delivery(github_pr_event(pr_url, repo)))
    if kind == "github issue comment":
        return ("/webhooks/github", *github_delivery(github_comment(pr_url, repo), event="issue_comment"))
    assert kind == "github review comment"
    event = github_review_comment(pr_url, repo)
    return ("/webhooks/github", *github_delivery(event, event="pull_request_review_comment"))


KINDS = ["gitlab merge request", "gitlab note", "github pull request", "github issue comment", "github review comment"]


def queued_jobs(app: Any) -> list[str]:
    queue = app.state.service.queue
    assert isinstance(queue, LocalQueue)
    with queue.engine.connect() as conn:
        return [str(k) for k in conn.execute(select(jobs.c.key)).scalars()]


def counted(metrics: str, forge: str, outcome: str) -> float:
    for line in metrics.splitlines():
        if line.startswith(f'codejury_webhook_deliveries_total{{forge="{forge}",outcome="{outcome}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def refused_by_the_service(tmp_path: Path, capture: CaptureServer, found: Delivery, **env: str) -> str:
    """Deliver ``found`` to a running ``codejury serve``; check the refusal; return its one log line."""
    route, body, headers = found
    forge = route.rsplit("/", 1)[1]
    lines: list[str] = []
    app = build_service(service_options(tmp_path, **env), say=lines.append)
    async with serving(app) as base, httpx2.AsyncClient(base_url=base) as c:
        answer = await c.post(route, content=body, headers=headers)
        await asyncio.sleep(0.3)  # time for a queued job to start, had one been queued
        metrics = (await c.get("/metrics")).text
        assert queued_jobs(app) == []
    assert answer.status_code == 403, answer.text
    assert answer.json()["outcome"] == "foreign_host"
    assert counted(metrics, forge, "foreign_host") == 1.0
    assert capture.requests == []
    [line] = [x for x in lines if "refused" in x]
    assert all(token not in x for x in lines for token in TOKENS)
    assert all(token not in answer.text for token in TOKENS)
    return line


@pytest.mark.parametrize("kind", KINDS)
async def test_a_delivery_naming_another_host_is_refused_and_that_host_hears_nothing(
    tmp_path: Path, capture: CaptureServer, kind: str
) -> None:
    line = await refused_by_the_service(tmp_path, capture, delivery(kind, capture.origin))
    setting = "CODEJURY_GITLAB_URL" if kind.startswith("gitlab") else "CODEJURY_GITHUB_URL"
    assert capture.origin in line and setting in line


@pytest.mark.parametrize("kind", KINDS)
async def test_a_url_on_the_configured_forge_naming_another_project_is_refused(
    tmp_path: Path, capture: CaptureServer, kind: str
) -> None:
    """The capture server is the configured forge here: the payload says acme/widgets or octo/app, the URL not."""
    found = delivery(kind, capture.origin, project="other/project", repo="other/repo")
    line = await refused_by_the_service(
        tmp_path, capture, found, CODEJURY_GITLAB_URL=capture.origin, CODEJURY_GITHUB_URL=capture.origin
    )
    assert "other/" in line


# -- URL tricks, against a configured https://gitlab.example ------------------------------------------
@pytest.fixture
def state(tmp_path: Path) -> ServiceState:
    engine = make_engine(f"sqlite+pysqlite:///{tmp_path / 'service.sqlite3'}")

    async def never(request: ReviewRequest) -> str:
        raise AssertionError("no job runs here")

    return ServiceState(
        queue=LocalQueue(engine, never),  # not started: a queued job stays in its table
        deliveries=Deliveries(engine),
        gitlab_token=GITLAB_TOKEN,
        hosts=forge_hosts({"CODEJURY_GITLAB_URL": "https://gitlab.example"}),
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://gitlab.example.evil.test/acme/widgets/-/merge_requests/7",  # a suffix
        "https://evilgitlab.example/acme/widgets/-/merge_requests/7",
        "https://evil.test/gitlab.example/acme/widgets/-/merge_requests/7",  # the host in the path
        "https://gitlab.example@evil.test/acme/widgets/-/merge_requests/7",  # user info
        "https://gitlab.example:443@evil.test/acme/widgets/-/merge_requests/7",
        "https://evil.test\\@gitlab.example/acme/widgets/-/merge_requests/7",  # a backslash
        "https://evil.test#@gitlab.example/acme/widgets/-/merge_requests/7",
        "http://gitlab.example/acme/widgets/-/merge_requests/7",  # plain http to an https forge
        "https://gitlab.example:8443/acme/widgets/-/merge_requests/7",  # another port
        "https://gitl\u0430b.example/acme/widgets/-/merge_requests/7",  # a Cyrillic a
        "https://gitlab%2eexample/acme/widgets/-/merge_requests/7",
        "https://gitlab.example./acme/widgets/-/merge_requests/7",
    ],
)
async def test_a_url_that_only_looks_like_the_configured_host_is_refused(state: ServiceState, url: str) -> None:
    lines: list[str] = []
    state.say = lines.append
    body, headers = gitlab_delivery(gitlab_mr_event(url))
    transport = httpx2.ASGITransport(app=create_app(state))
    async with httpx2.AsyncClient(transport=transport, base_url="http://service") as c:
        answer = await c.post("/webhooks/gitlab", content=body, headers=headers)
    assert answer.status_code == 403 and answer.json()["outcome"] == "foreign_host", answer.text
    assert len(lines) == 1 and "gitlab delivery refused" in lines[0]
    assert isinstance(state.queue, LocalQueue)
    with state.queue.engine.connect() as conn:
        assert conn.execute(select(jobs.c.key)).all() == []


@pytest.mark.parametrize(
    "url",
    [
        "https://gitlab.example/acme/widgets/-/merge_requests/7",
        "https://GitLab.Example:443/acme/widgets/-/merge_requests/7/diffs",  # the same host, written otherwise
    ],
)
async def test_a_url_on_the_configured_host_is_queued(state: ServiceState, url: str) -> None:
    body, headers = gitlab_delivery(gitlab_mr_event(url))
    transport = httpx2.ASGITransport(app=create_app(state))
    async with httpx2.AsyncClient(transport=transport, base_url="http://service") as c:
        answer = await c.post("/webhooks/gitlab", content=body, headers=headers)
    assert answer.status_code == 202 and answer.json()["outcome"] == "queued", answer.text


# -- the job checks again ---------------------------------------------------------------------------
JobFor = Callable[[str], ReviewRequest]
JOBS: dict[str, JobFor] = {
    "gitlab review": lambda base: ReviewRequest(
        "gitlab", f"{base}/acme/widgets/-/merge_requests/7", "gitlab:acme/widgets!7"
    ),
    "gitlab chat": lambda base: ReviewRequest(
        "gitlab",
        f"{base}/acme/widgets/-/merge_requests/7",
        "gitlab:acme/widgets!7 chat 91",
        chat=ChatCommand("help", "", "alice", 91, author_id=5),
    ),
    "github review": lambda base: ReviewRequest("github", f"{base}/octo/app/pull/7", "github:octo/app#7"),
    "github chat": lambda base: ReviewRequest(
        "github", f"{base}/octo/app/pull/7", "github:octo/app#7 chat 81", chat=ChatCommand("review", "", "alice", 81)
    ),
}


@pytest.mark.parametrize("job", list(JOBS))
async def test_a_queued_job_naming_another_host_is_refused_before_any_request(capture: CaptureServer, job: str) -> None:
    """As a job from an older version, or one written into the PostgreSQL queue, would arrive."""
    env = {
        "CODEJURY_GITLAB_TOKEN": GITLAB_BOT_TOKEN,
        "CODEJURY_GITHUB_TOKEN": GITHUB_BOT_TOKEN,
        "CODEJURY_RECORD_URL": "none",
    }
    runner = JobRunner(ReviewSetup(model="scripted:reviewer", plugins=(SCRIPTED_PLUGIN,)), env)
    try:
        outcome = await runner.run(JOBS[job](capture.origin))
    finally:
        await runner.close()
    assert outcome.startswith("refused, nothing fetched:") and capture.origin in outcome, outcome
    assert "\n" not in outcome and all(token not in outcome for token in TOKENS)
    assert capture.requests == []


async def test_a_queued_job_naming_another_project_on_the_configured_forge_is_refused(capture: CaptureServer) -> None:
    env = {
        "CODEJURY_GITLAB_TOKEN": GITLAB_BOT_TOKEN,
        "CODEJURY_GITLAB_URL": capture.origin,
        "CODEJURY_RECORD_URL": "none",
    }
    runner = JobRunner(ReviewSetup(model="scripted:reviewer", plugins=(SCRIPTED_PLUGIN,)), env)
    try:
        request = ReviewRequest("gitlab", f"{capture.origin}/other/project/-/merge_requests/7", "gitlab:acme/widgets!7")
        outcome = await runner.run(request)
    finally:
        await runner.close()
    assert outcome.startswith("refused, nothing fetched:") and "other/project" in outcome, outcome
    assert capture.requests == []
