"""The embedded default end to end: ``codejury serve``'s app on a real uvicorn on loopback, its SQLite queue,
the fake forges and the scripted model. A signed delivery ends as a review published on the merge request."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
import uvicorn
from codejury_fakes.github import ACTIONS_LOGIN, FakeGitHub
from codejury_fakes.github.records import Reply
from codejury_fakes.gitlab import FakeGitLab
from codejury_fakes.loopback import LoopbackServer, QuietHandler
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import select

from codejury.forges.errors import ForgeUnavailable
from codejury.forges.github import adapter as github_mod
from codejury.forges.github.api import GitHubAPI
from codejury.forges.markers import parse_summary
from codejury.service.commands import ServiceOptions, build_service
from codejury.service.github_app import GitHubAppTokens
from codejury.service.local_queue import LocalQueue
from codejury.service.tables import jobs, make_engine
from codejury.service.webhooks import ReviewRequest
from codejury.testing.scripted import Final, Raw, ScriptedResolver
from codejury.testing.scripted import finding as model_finding
from tests.service.helpers import (
    GITHUB_SECRET,
    GITLAB_TOKEN,
    NEW,
    OLD,
    github_delivery,
    github_pr_event,
    gitlab_delivery,
)
from tests.service.helpers import gitlab_mr_event as mr_event

FINDING = model_finding("app.py", 5, "Unchecked input", severity="warning", category="validation")
MODEL = ("scripted:reviewer", ("coordinator=scripted:coordinator",))


SCRIPTED_PLUGIN = "codejury.testing.scripted"
"""The service's reviews load it (``--plugin``): the active resolver's models are ``scripted:NAME``."""


@pytest.fixture
def scripted() -> Iterator[ScriptedResolver]:
    resolver = ScriptedResolver({"reviewer": [Final([FINDING])], "coordinator": [Raw({"decisions": []})]})
    with resolver.active():
        yield resolver


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """``app`` on a real uvicorn on a free loopback port, lifespan included; yields its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning"))
    task = asyncio.create_task(server.serve())
    for _ in range(200):
        if server.started:
            break
        await asyncio.sleep(0.02)
    assert server.started, "uvicorn did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


async def until(check: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


def gitlab_summaries(gl: FakeGitLab) -> list[str]:
    return [
        n["body"]
        for n in gl.notes(1, 7, system=False)
        if n["author"]["username"] == FakeGitLab.BOT and parse_summary(n["body"])
    ]


def options(tmp_path: Path, **env: str) -> ServiceOptions:
    model, model_for = MODEL
    return ServiceOptions(
        concurrency=1,
        model=model,
        model_for=model_for,
        plugins=(SCRIPTED_PLUGIN,),
        env={"CODEJURY_RECORD_URL": f"sqlite:///{tmp_path / 'reviews.sqlite3'}", **env},
    )


async def test_a_gitlab_push_is_reviewed_and_published_by_the_embedded_queue(
    gl: FakeGitLab, scripted: ScriptedResolver, tmp_path: Path
) -> None:
    opts = options(
        tmp_path,
        CODEJURY_GITLAB_TOKEN=FakeGitLab.BOT_TOKEN,
        CODEJURY_GITLAB_WEBHOOK_TOKEN=GITLAB_TOKEN,
        CODEJURY_GITLAB_URL=gl.url,
    )
    async with serving(build_service(opts, say=lambda line: None)) as base, httpx2.AsyncClient(base_url=base) as c:
        body, headers = gitlab_delivery(mr_event(f"{gl.url}/acme/widgets/-/merge_requests/7"))
        answer = await c.post("/webhooks/gitlab", content=body, headers=headers)
        assert answer.status_code == 202 and answer.json()["outcome"] == "queued"
        await until(lambda: len(gitlab_summaries(gl)) == 1)
        [summary] = gitlab_summaries(gl)
        assert "Unchecked input" in summary
        for _ in range(100):  # the record stage runs after the publish stage
            if "codejury_reviews_total{tier=" in (await c.get("/metrics")).text:
                break
            await asyncio.sleep(0.05)
        assert "codejury_reviews_total{tier=" in (await c.get("/metrics")).text
        assert (await c.get("/readyz")).json() == {"ready": True}
    from codejury.record import schema
    from codejury.record.store import Store
    from codejury.record.target import sqlite_target

    store = Store(sqlite_target(tmp_path / "reviews.sqlite3"))
    with store.connect() as conn:  # recorded in the service's store
        assert conn.execute(select(schema.reviews.c.change_id)).scalars().all() == ["!7"]
    store.close()


async def test_a_push_for_a_head_already_reviewed_calls_no_model_and_posts_nothing(
    gl: FakeGitLab, scripted: ScriptedResolver, tmp_path: Path
) -> None:
    """A second delivery for the head the bot has just reviewed (a push queued while that head was being
    reviewed, a relabel, a reopen) finds the review in the bot's summary and stops before any model."""
    opts = options(
        tmp_path,
        CODEJURY_GITLAB_TOKEN=FakeGitLab.BOT_TOKEN,
        CODEJURY_GITLAB_WEBHOOK_TOKEN=GITLAB_TOKEN,
        CODEJURY_GITLAB_URL=gl.url,
    )
    lines: list[str] = []
    head = gl.diff_refs(1, 7)["head_sha"]
    url = f"{gl.url}/acme/widgets/-/merge_requests/7"
    async with serving(build_service(opts, say=lines.append)) as base, httpx2.AsyncClient(base_url=base) as c:
        body, headers = gitlab_delivery(mr_event(url, head_sha=head))
        assert (await c.post("/webhooks/gitlab", content=body, headers=headers)).json()["outcome"] == "queued"
        await until(lambda: any("reviewed and published" in line for line in lines))
        reviews = scripted.resolved.count("scripted:reviewer")
        assert reviews >= 1
        body, headers = gitlab_delivery(mr_event(url, head_sha=head, action="reopen"))
        assert (await c.post("/webhooks/gitlab", content=body, headers=headers)).json()["outcome"] == "queued"
        await until(lambda: any("nothing to do" in line for line in lines))
    assert any(f"head {head[:12]} is already reviewed" in line for line in lines)
    assert scripted.resolved.count("scripted:reviewer") == reviews, "no model was set up for the second job"
    assert len(gitlab_summaries(gl)) == 1


# -- the queue itself: persisted across restarts, retried with backoff --------------------------------
def request(n: int = 7) -> ReviewRequest:
    return ReviewRequest("gitlab", f"https://gitlab.example/acme/widgets/-/merge_requests/{n}", f"gitlab:a/w!{n}")


def recording(
    ran: list[str], fail_first: int = 0, gate: asyncio.Event | None = None
) -> Callable[[ReviewRequest], Awaitable[str]]:
    failures = {"left": fail_first}

    async def run(req: ReviewRequest) -> str:
        if gate is not None:
            await gate.wait()
        if failures["left"] > 0:
            failures["left"] -= 1
            raise ForgeUnavailable("GitLab answered 503", status=503)
        ran.append(req.key)
        return "reviewed and published"

    return run


async def test_queued_jobs_survive_a_restart(tmp_path: Path) -> None:
    url = f"sqlite+pysqlite:///{tmp_path / 'q.sqlite3'}"
    before = LocalQueue(make_engine(url), recording([]))
    assert await before.submit(request(7)) == "queued"
    assert await before.submit(request(8)) == "queued"
    before.engine.dispose()  # the process stops before any runner took them
    ran: list[str] = []
    after = LocalQueue(make_engine(url), recording(ran))
    await after.start()
    try:
        await until(lambda: len(ran) == 2, 10)
    finally:
        await after.close()
    assert sorted(ran) == ["gitlab:a/w!7", "gitlab:a/w!8"]


async def test_a_review_cut_short_by_a_stop_runs_again_at_the_next_start(tmp_path: Path) -> None:
    url = f"sqlite+pysqlite:///{tmp_path / 'q.sqlite3'}"
    gate = asyncio.Event()  # never set: the first process stops in the middle of the review
    first = LocalQueue(make_engine(url), recording([], gate=gate))
    await first.submit(request())
    await first.start()
    await until(lambda: first.engine.connect().execute(select(jobs.c.state)).scalar() == "running", 10)
    await first.close()
    ran: list[str] = []
    second = LocalQueue(make_engine(url), recording(ran))
    await second.start()
    try:
        await until(lambda: ran == ["gitlab:a/w!7"], 10)
    finally:
        await second.close()


@pytest.mark.waits
async def test_a_forge_outage_is_retried_with_backoff_then_reviewed(tmp_path: Path) -> None:
    ran: list[str] = []
    lines: list[str] = []
    queue = LocalQueue(
        make_engine(f"sqlite+pysqlite:///{tmp_path / 'q.sqlite3'}"),
        recording(ran, fail_first=2),
        backoff_s=0.2,
        say=lines.append,
    )
    await queue.submit(request())
    started = time.monotonic()
    await queue.start()
    try:
        await until(lambda: ran == ["gitlab:a/w!7"], 15)
    finally:
        await queue.close()
    assert time.monotonic() - started >= 0.2 + 0.4  # waited 0.2 s, then 0.4 s
    assert sum("retrying later" in line for line in lines) == 2


async def test_one_review_per_merge_request_at_a_time_and_one_waiting(tmp_path: Path) -> None:
    gate = asyncio.Event()
    ran: list[str] = []
    queue = LocalQueue(make_engine(f"sqlite+pysqlite:///{tmp_path / 'q.sqlite3'}"), recording(ran, gate=gate))
    await queue.submit(request())
    await queue.start()
    try:
        await until(lambda: queue.engine.connect().execute(select(jobs.c.state)).scalar() == "running", 10)
        outcomes = [await queue.submit(request()) for _ in range(4)]  # pushes while the review runs
        assert outcomes == ["queued", "coalesced", "coalesced", "coalesced"]
        await asyncio.sleep(0.3)
        assert await queue.counts() == {"running": 1, "waiting": 1}  # not started beside the running one
        gate.set()
        await until(lambda: len(ran) == 2, 10)
    finally:
        await queue.close()


# -- GitHub App: installation token from a JWT ---------------------------------------------------------
class FakeAppTokens(LoopbackServer):
    """GitHub's ``POST /app/installations/{id}/access_tokens``: checks the App's JWT with its public key."""

    thread_name = "fake-github-app"

    def __init__(self, public_pem: bytes, app_id: str, token: str, lifetime_s: float = 3600) -> None:
        self.calls: list[int] = []
        outer = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                self.read_body()
                parts = self.path.strip("/").split("/")
                auth = self.headers.get("Authorization", "").removeprefix("Bearer ")
                try:
                    claims = jwt.decode(auth, public_pem, algorithms=["RS256"])
                    ok = claims["iss"] == app_id and parts[:2] == ["app", "installations"]
                except jwt.PyJWTError:
                    ok = False
                if not ok:
                    self._send(401, {"message": "A JSON web token could not be decoded"})
                    return
                outer.calls.append(int(parts[2]))
                expires = (datetime.now(UTC) + timedelta(seconds=lifetime_s)).strftime("%Y-%m-%dT%H:%M:%SZ")
                self._send(201, {"token": token, "expires_at": expires})

            def _send(self, status: int, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        super().__init__(Handler)


class FakeGitHubWithApp(FakeGitHub):
    """The fake GitHub answering a GitHub App's ``POST /app/installations/{id}/access_tokens`` too, on
    the same API as everything else (as GitHub does), with the App's JWT checked."""

    def __init__(self, public_pem: bytes, app_id: str, token: str) -> None:
        super().__init__("octo/app")
        self.app_calls: list[int] = []
        self._app = (public_pem, app_id, token)

    def _serve(self, method: str, target: str, headers: dict[str, str], body: Any) -> Reply:
        parts = target.split("?", 1)[0].strip("/").split("/")
        if method != "POST" or parts[:2] != ["app", "installations"] or parts[3:] != ["access_tokens"]:
            return super()._serve(method, target, headers, body)
        public_pem, app_id, token = self._app
        try:
            claims = jwt.decode(headers.get("authorization", "").removeprefix("Bearer "), public_pem, ["RS256"])
        except jwt.PyJWTError:
            return Reply(401, {"message": "A JSON web token could not be decoded"})
        if claims["iss"] != app_id:
            return Reply(401, {"message": "Integration not found"})
        self.app_calls.append(int(parts[2]))
        expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return Reply(201, {"token": token, "expires_at": expires})


def rsa_pair() -> tuple[str, bytes]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


async def test_installation_tokens_are_cached_and_refreshed_before_expiry() -> None:
    private, public = rsa_pair()
    with FakeAppTokens(public, "4242", "ghs_installation", lifetime_s=3600) as fake:
        now = [time.time()]
        tokens = GitHubAppTokens("4242", private, fake.origin, refresh_margin_s=300, clock=lambda: now[0])
        assert await tokens.token(11) == "ghs_installation"
        assert await tokens.token(11) == "ghs_installation"
        assert fake.calls == [11]  # cached
        now[0] += 3600 - 299  # inside the refresh margin
        await tokens.token(11)
        assert fake.calls == [11, 11]
        wrong = GitHubAppTokens("9999", private, fake.origin)
        from codejury.forges.errors import ForgeAuthError

        with pytest.raises(ForgeAuthError, match="installation 11"):
            await wrong.token(11)


async def test_a_github_app_delivery_is_reviewed_with_the_installation_token(
    monkeypatch: pytest.MonkeyPatch, scripted: ScriptedResolver, tmp_path: Path
) -> None:
    monkeypatch.setattr(github_mod, "GitHubAPI", functools.partial(GitHubAPI, backoff_s=0.001))
    private, public = rsa_pair()
    with FakeGitHubWithApp(public, "4242", "ghs_app_installation") as gh:
        gh.add_user("alice")
        gh.add_token("ghs_app_installation", kind="actions")
        gh.add_pr(number=7, author="alice", files={"app.py": (OLD, NEW)}, body="Adds things.")
        opts = options(
            tmp_path,
            CODEJURY_GITHUB_WEBHOOK_SECRET=GITHUB_SECRET,
            CODEJURY_GITHUB_APP_ID="4242",
            CODEJURY_GITHUB_APP_PRIVATE_KEY=private,
            CODEJURY_GITHUB_API_URL=gh.api_url,  # the fake is the configured GitHub, App tokens included
        )
        async with serving(build_service(opts, say=lambda line: None)) as base, httpx2.AsyncClient(base_url=base) as c:
            event = github_pr_event(f"{gh.api_url}/octo/app/pull/7", installation=31)
            body, headers = github_delivery(event)
            assert (await c.post("/webhooks/github", content=body, headers=headers)).status_code == 202

            def summaries() -> list[str]:
                return [x.body for x in gh.issue_comments(7) if x.user == ACTIONS_LOGIN and parse_summary(x.body)]

            await until(lambda: len(summaries()) == 1)
        assert gh.app_calls == [31]
        assert "Unchecked input" in summaries()[0]
