"""People with write access stay in charge after a head was reviewed: their break glass, ``/codejury review``
and won't-fix replies act in the service (a real uvicorn, its SQLite queue, the fake forges, the scripted
model); a reader's command and a forged delivery still do nothing. A second push of a reviewed head still
reviews nothing (``test_local_reviews``)."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx2
import pytest
from codejury_fakes.github import FakeGitHub
from codejury_fakes.gitlab import FakeGitLab
from sqlalchemy import delete, select, update

from codejury.forges.github import adapter as github_mod
from codejury.forges.github.api import GitHubAPI
from codejury.forges.markers import parse_summary
from codejury.service import pg_queue
from codejury.service.commands import build_service
from codejury.service.local_queue import LocalQueue
from codejury.service.requests import ReviewRequest
from codejury.service.tables import jobs, make_engine
from codejury.testing.scripted import Final, Raw, ScriptedResolver
from tests.service.helpers import GITHUB_SECRET, NEW, OLD, github_delivery, github_pr_event, gitlab_delivery
from tests.service.helpers import gitlab_mr_event as mr_event
from tests.service.test_chat import finished_jobs, gitlab_options, note_delivery, service_client
from tests.service.test_local_reviews import FINDING, gitlab_summaries, options, serving, until

CRITICAL = {**FINDING, "severity": "critical"}


@pytest.fixture
def critical() -> Iterator[ScriptedResolver]:
    """Every review finds one critical problem (requested changes: no approval)."""
    resolver = ScriptedResolver({"reviewer": [Final([CRITICAL])], "coordinator": [Raw({"decisions": []})]})
    with resolver.active():
        yield resolver


async def reviewed_once(c: httpx2.AsyncClient, gl: FakeGitLab, tmp_path: Path) -> None:
    """A push of the merge request's head, reviewed and published (requested changes, no approval)."""
    url = f"{gl.url}/acme/widgets/-/merge_requests/7"
    body, headers = gitlab_delivery(mr_event(url, head_sha=gl.diff_refs(1, 7)["head_sha"]))
    assert (await c.post("/webhooks/gitlab", content=body, headers=headers)).json()["outcome"] == "queued"
    await until(lambda: len(finished_jobs(tmp_path)) == 1)
    [summary] = gitlab_summaries(gl)
    assert "Break glass" not in summary and gl.approvals(1, 7) == []


async def deliver(c: httpx2.AsyncClient, gl: FakeGitLab, note: int) -> str:
    body, headers = note_delivery(gl, note)
    answer = await c.post("/webhooks/gitlab", content=body, headers=headers)
    return str(answer.json()["outcome"])


async def test_a_writers_break_glass_after_a_reviewed_head_approves_and_a_readers_or_a_forged_one_does_not(
    gl: FakeGitLab, critical: ScriptedResolver, tmp_path: Path
) -> None:
    async with service_client(gitlab_options(tmp_path, gl)) as c:
        await reviewed_once(c, gl, tmp_path)
        reader = gl.add_note(1, 7, "break glass", author="rita")
        assert await deliver(c, gl, reader) == "queued"
        await until(lambda: len(finished_jobs(tmp_path)) == 2)
        await asyncio.sleep(0.3)  # a review queued by mistake would be claimed by now
        assert len(finished_jobs(tmp_path)) == 2 and gl.approvals(1, 7) == []

        forged = gl.add_note(1, 7, "break glass", author="bob")
        body, headers = note_delivery(gl, forged)
        refused = await c.post("/webhooks/gitlab", content=body, headers={**headers, "X-Gitlab-Token": "guessed"})
        assert refused.status_code == 401
        await asyncio.sleep(0.3)
        assert len(finished_jobs(tmp_path)) == 2 and gl.approvals(1, 7) == []
        assert critical.models["reviewer"].calls == 1

        writer = gl.add_note(1, 7, "break glass", author="bob")
        assert await deliver(c, gl, writer) == "queued"
        await until(lambda: len(finished_jobs(tmp_path)) == 4)  # the chat job and the review it queued
    [summary] = gitlab_summaries(gl)
    assert "**Break glass** invoked by bob" in summary
    assert parse_summary(summary) is not None and parse_summary(summary).verdict == "approved"  # type: ignore[union-attr]
    assert gl.approvals(1, 7) == [FakeGitLab.BOT]


async def test_review_command_after_a_reviewed_head_reviews_it_again(
    gl: FakeGitLab, critical: ScriptedResolver, tmp_path: Path
) -> None:
    lines: list[str] = []
    service = build_service(gitlab_options(tmp_path, gl), say=lines.append)
    async with serving(service) as base, httpx2.AsyncClient(base_url=base) as c:
        await reviewed_once(c, gl, tmp_path)
        assert critical.models["reviewer"].calls == 1
        note = gl.add_note(1, 7, "/codejury review", author="alice")
        assert await deliver(c, gl, note) == "queued"
        await until(lambda: len(finished_jobs(tmp_path)) == 3)
    assert critical.models["reviewer"].calls == 2
    assert sum("reviewed and published" in line for line in lines) == 2
    assert not any("nothing to do" in line for line in lines)


async def test_a_writers_wont_fix_after_a_reviewed_head_dismisses_the_finding_and_republishes(
    gl: FakeGitLab, tmp_path: Path
) -> None:
    # The re-review's reviewer, told in its change context that the finding was dismissed, does not raise it again.
    resolver = ScriptedResolver({"reviewer": [Final([CRITICAL]), Final([])], "coordinator": [Raw({"decisions": []})]})
    with resolver.active():
        async with service_client(gitlab_options(tmp_path, gl)) as c:
            await reviewed_once(c, gl, tmp_path)
            threads = [d for d in gl.discussions(1, 7) if d["notes"][0]["type"] == "DiffNote"]
            [thread] = [d for d in threads if "Unchecked input" in d["notes"][0]["body"]]
            before = parse_summary(gitlab_summaries(gl)[0])
            assert before is not None and before.verdict == "requested_changes"
            reader = gl.add_reply(1, 7, thread["id"], "won't fix", author="rita")
            assert await deliver(c, gl, reader) == "queued"
            await until(lambda: len(finished_jobs(tmp_path)) == 2)
            await asyncio.sleep(0.3)
            assert len(finished_jobs(tmp_path)) == 2 and resolver.models["reviewer"].calls == 1
            reply = gl.add_reply(1, 7, thread["id"], "won't fix: the caller validates it", author="bob")
            assert await deliver(c, gl, reply) == "queued"
            await until(lambda: len(finished_jobs(tmp_path)) == 4)
    [summary] = gitlab_summaries(gl)
    state = parse_summary(summary)
    assert state is not None and "dismissed" in state.findings.values()
    assert state.verdict in ("approved", "approved_with_comments")
    [thread] = [d for d in gl.discussions(1, 7) if d["id"] == thread["id"]]
    assert thread["notes"][0]["resolved"] is True
    assert any("Dismissed after the reply by bob" in n["body"] for n in thread["notes"])
    assert gl.approvals(1, 7) == [FakeGitLab.BOT]


def comment_event(gh: FakeGitHub, login: str, body: str) -> dict[str, Any]:
    """The ``issue_comment`` delivery GitHub sends for a new comment on pull request 7."""
    comment_id = gh.add_issue_comment(7, body, user=login)
    pr_url = f"{gh.api_url}/octo/app/pull/7"
    return {
        "action": "created",
        "issue": {"number": 7, "html_url": pr_url, "pull_request": {"html_url": pr_url}},
        "comment": {"id": comment_id, "body": body, "user": {"login": login}},
        "repository": {"full_name": "octo/app"},
        "sender": {"login": login, "type": "User"},
    }


async def test_github_break_glass_after_a_reviewed_head_from_a_writer_only_and_never_forged(
    monkeypatch: pytest.MonkeyPatch, critical: ScriptedResolver, tmp_path: Path
) -> None:
    monkeypatch.setattr(github_mod, "GitHubAPI", functools.partial(GitHubAPI, backoff_s=0.001))
    with FakeGitHub("octo/app") as gh:
        gh.add_user("codejury-bot", permission="write")
        gh.add_token("ghp_codejury_bot", user="codejury-bot")
        gh.add_user("alice", permission="write")
        gh.add_user("rita", permission="read")
        gh.add_pr(number=7, author="alice", files={"app.py": (OLD, NEW)}, body="Adds things.")
        opts = options(
            tmp_path,
            CODEJURY_GITHUB_WEBHOOK_SECRET=GITHUB_SECRET,
            CODEJURY_GITHUB_TOKEN="ghp_codejury_bot",
            CODEJURY_GITHUB_API_URL=gh.api_url,
        )

        def states() -> list[str]:
            return [r.state for r in gh.reviews(7) if r.user == "codejury-bot"]

        async with serving(build_service(opts, say=lambda line: None)) as base, httpx2.AsyncClient(base_url=base) as c:
            push = github_pr_event(f"{gh.api_url}/octo/app/pull/7", head_sha=gh.pull(7).head_sha)
            body, headers = github_delivery(push)
            assert (await c.post("/webhooks/github", content=body, headers=headers)).json()["outcome"] == "queued"
            await until(lambda: len(finished_jobs(tmp_path)) == 1)
            assert "APPROVED" not in states()

            forged, headers = github_delivery(comment_event(gh, "alice", "break glass"), event="issue_comment")
            headers["X-Hub-Signature-256"] = "sha256=" + "0" * 64
            assert (await c.post("/webhooks/github", content=forged, headers=headers)).status_code == 401
            reader, headers = github_delivery(comment_event(gh, "rita", "break glass"), event="issue_comment")
            assert (await c.post("/webhooks/github", content=reader, headers=headers)).json()["outcome"] == "queued"
            await until(lambda: len(finished_jobs(tmp_path)) == 2)
            await asyncio.sleep(0.3)  # a review queued by mistake would be claimed by now
            assert len(finished_jobs(tmp_path)) == 2 and "APPROVED" not in states()

            writer, headers = github_delivery(comment_event(gh, "alice", "break glass"), event="issue_comment")
            assert (await c.post("/webhooks/github", content=writer, headers=headers)).json()["outcome"] == "queued"
            await until(lambda: len(finished_jobs(tmp_path)) == 4)
        assert states()[-1] == "APPROVED"
        summaries = [x.body for x in gh.issue_comments(7) if x.user == "codejury-bot" and parse_summary(x.body)]
        assert len(summaries) == 1 and "**Break glass** invoked by alice" in summaries[0]
    assert critical.models["reviewer"].calls == 2


async def test_a_persons_review_keeps_acting_when_coalesced_with_a_push_or_superseded(tmp_path: Path) -> None:
    """The embedded queue keeps one waiting job per merge request: whichever of a push's and a person's
    review came first, the one that runs is forced; a stopped forced job hands it to the waiting one."""
    push = ReviewRequest("gitlab", "https://gitlab.example/a/w/-/merge_requests/7", "gitlab:a/w!7")
    person = replace(push, forced=True)
    assert ReviewRequest.from_json(json.loads(json.dumps(person.to_json()))) == person
    assert person.queueing_key != push.queueing_key  # PostgreSQL: one of each may wait
    queue = LocalQueue(make_engine(f"sqlite+pysqlite:///{tmp_path / 'q.sqlite3'}"), lambda request: _never())

    def waiting() -> list[ReviewRequest]:
        with queue.engine.connect() as conn:
            rows = conn.execute(select(jobs.c.request).where(jobs.c.state == "waiting")).scalars().all()
        return [ReviewRequest.from_json(json.loads(row)) for row in rows]

    assert [await queue.submit(person), await queue.submit(push)] == ["queued", "coalesced"]
    assert [r.forced for r in waiting()] == [True]
    with queue.engine.begin() as conn:  # it runs, and the process stops in the middle; a push waits
        conn.execute(update(jobs).values(state="running"))
    assert await queue.submit(push) == "queued" and [r.forced for r in waiting()] == [False]
    queue._requeue_interrupted()
    assert [r.forced for r in waiting()] == [True]
    with queue.engine.begin() as conn:
        conn.execute(delete(jobs))
    assert [await queue.submit(push), await queue.submit(person)] == ["queued", "coalesced"]
    assert [r.forced for r in waiting()] == [True]
    queue.engine.dispose()


async def _never() -> str:
    raise AssertionError("no job runs in this test")


async def test_on_postgresql_a_persons_review_waits_beside_a_push_and_runs_under_the_same_lock(
    new_pg_database: Callable[[], str],
) -> None:
    url = new_pg_database()
    await pg_queue.apply_schema(url)
    app = pg_queue.make_app(url)
    push = ReviewRequest("gitlab", "https://gitlab.example/a/w/-/merge_requests/7", "gitlab:a/w!7")
    async with app.open_async():
        queue = pg_queue.PostgresQueue(app)
        assert await queue.submit(push) == "queued"
        person = replace(push, forced=True)
        assert [await queue.submit(person), await queue.submit(person)] == ["queued", "coalesced"]
        todo = await app.job_manager.list_jobs_async(status="todo")
    assert sorted((j.lock or "", j.queueing_lock or "") for j in todo) == [
        ("gitlab:a/w!7", "gitlab:a/w!7"),
        ("gitlab:a/w!7", "gitlab:a/w!7 forced"),
    ]
    assert sorted(ReviewRequest.from_json(j.task_kwargs["request"]).forced for j in todo) == [False, True]
