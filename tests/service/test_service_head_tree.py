"""A review the service runs reads the head commit's tree, fetched into its repository cache.

The service has no checkout: the analyzers, the index and the tools read the commit the forge
serves over git (the fake forge's smart HTTP endpoint), with the bot's token as a header.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx2
import pytest
from codejury_fakes.gitlab import FakeGitLab
from sqlalchemy import select

from codejury.forges.markers import parse_summary
from codejury.record import schema
from codejury.record.store import Store
from codejury.record.target import parse_record_url, sqlite_target
from codejury.service.commands import build_service
from codejury.testing.scripted import Final, Raw, ScriptedResolver
from tests.forges.test_ci_checkout import BASE, HEAD, SQL, git, git_logging_shim, upstream
from tests.service.helpers import GITLAB_TOKEN, gitlab_delivery
from tests.service.helpers import gitlab_mr_event as mr_event
from tests.service.test_local_reviews import options, serving, until
from tests.service.test_pg_queue import _service_options, _statuses, _stop, _until, _worker, _worker_env


@pytest.fixture
def scripted() -> ScriptedResolver:
    resolver = ScriptedResolver({"reviewer": [Final([SQL])], "coordinator": [Raw({"decisions": []})]})
    with resolver.active():
        yield resolver


async def test_a_webhook_review_carries_analyzer_evidence_from_the_fetched_head_commit(
    scripted: ScriptedResolver, tmp_path: Path
) -> None:
    repo, base, head = upstream(tmp_path)
    with FakeGitLab() as gl:
        gl.add_mr(1, 7, files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
        gl.serve_git("acme/widgets", repo)
        cache = tmp_path / "repo-cache"
        opts = options(
            tmp_path,
            CODEJURY_GITLAB_TOKEN=FakeGitLab.BOT_TOKEN,
            CODEJURY_GITLAB_WEBHOOK_TOKEN=GITLAB_TOKEN,
            CODEJURY_GITLAB_URL=gl.url,
            CODEJURY_REPO_CACHE=str(cache),
        )
        lines: list[str] = []
        async with serving(build_service(opts, say=lines.append)) as url, httpx2.AsyncClient(base_url=url) as c:
            body, headers = gitlab_delivery(mr_event(f"{gl.url}/acme/widgets/-/merge_requests/7"))
            assert (await c.post("/webhooks/gitlab", content=body, headers=headers)).status_code == 202

            def summaries() -> list[str]:
                notes = gl.notes(1, 7, system=False)
                return [
                    n["body"] for n in notes if n["author"]["username"] == FakeGitLab.BOT and parse_summary(n["body"])
                ]

            await until(lambda: len(summaries()) == 1)
        [summary] = summaries()
        store = Store(sqlite_target(tmp_path / "reviews.sqlite3"))
        with store.connect() as conn:  # the recorded finding: backed by ruff, which read the fetched commit
            evidence = conn.execute(select(schema.findings.c.evidence)).scalars().all()
        store.close()
        assert len(evidence) == 1 and "ruff:S608" in evidence[0]
        assert "What this review could not do" not in summary
        assert {r.user for r in gl.git.requests if r.status == 200} == {FakeGitLab.BOT}
        assert list(cache.glob("*.git"))  # kept for the next review of this repository
        assert all(FakeGitLab.BOT_TOKEN not in line for line in lines)
        assert all(FakeGitLab.BOT_TOKEN.encode() not in f.read_bytes() for f in cache.rglob("*") if f.is_file())


# -- codejury serve --database postgresql://… and two codejury worker processes ------------------------
def _second_push(repo: Path, head: str) -> str:
    """A second push to the repository: a commit on top of ``head`` on a branch of its own."""
    git(repo, "checkout", "-q", "-b", "feature-2", head)
    (repo / "reports.py").write_text(HEAD_2)
    git(repo, "commit", "-qam", "count reports too")
    second = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    return second


HEAD_2 = HEAD + '\n\ndef count(conn):\n    return conn.execute("SELECT count(*) FROM reports").fetchone()\n'


async def test_two_workers_on_postgresql_review_two_pushes_of_one_repository_with_its_analyzers(
    new_pg_database: Callable[[], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, base, head = upstream(tmp_path)
    second = _second_push(repo, head)
    queue_url, record_url = new_pg_database(), new_pg_database()
    store = Store(parse_record_url(record_url))
    store.migrate()  # the schema, before two processes write to it
    store.close()
    cache = tmp_path / "repo-cache"
    argv_log = git_logging_shim(tmp_path, monkeypatch)  # first on PATH for the workers' git too
    workers: list[subprocess.Popen[bytes]] = []
    with FakeGitLab() as gl:
        gl.add_mr(1, 7, files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
        gl.add_mr(1, 8, files={"reports.py": (BASE, HEAD_2)}, head_sha=second, base_sha=base)
        gl.serve_git("acme/widgets", repo)
        env = {
            **_worker_env(gl),
            "CODEJURY_REPO_CACHE": str(cache),
            "CODEJURY_RECORD_URL": record_url,
        }
        try:
            service = build_service(_service_options(queue_url, gl), say=lambda line: None)
            async with serving(service) as url, httpx2.AsyncClient(base_url=url) as client:
                for iid, sha in ((7, head), (8, second)):
                    event = mr_event(f"{gl.url}/acme/widgets/-/merge_requests/{iid}", iid=iid, head_sha=sha)
                    body, headers = gitlab_delivery(event)
                    answer = await client.post("/webhooks/gitlab", content=body, headers=headers)
                    assert answer.json()["outcome"] == "queued"
            # both jobs wait; two workers start together, each takes one (its reviewer holds it 3 s), and both
            # fetch into one cache
            logs = [tmp_path / "worker-1.log", tmp_path / "worker-2.log"]
            workers += [_worker(queue_url, 3, log, env, "--concurrency", "1", extra=("sql",)) for log in logs]
            await _until(lambda: _statuses(queue_url) == ["succeeded", "succeeded"], 120, "both reviews")
        finally:
            _stop(workers)
        summaries = [
            n["body"]
            for iid in (7, 8)
            for n in gl.notes(1, iid, system=False)
            if n["author"]["username"] == FakeGitLab.BOT and parse_summary(n["body"])
        ]
        fetched = {r.user for r in gl.git.requests if r.status == 200}
    assert len(summaries) == 2 and all("What this review could not do" not in s for s in summaries)
    store = Store(parse_record_url(record_url))
    with store.connect() as conn:  # each recorded finding is backed by ruff, which read its own head commit
        evidence = conn.execute(select(schema.findings.c.evidence)).scalars().all()
    store.close()
    assert len(evidence) == 2 and all("ruff:S608" in e for e in evidence)
    assert fetched == {FakeGitLab.BOT}
    [cached] = list(cache.glob("*.git"))  # one repository, one cache entry, both pushes in it, intact
    for sha in (head, second):
        git(cached, "cat-file", "-e", f"{sha}^{{tree}}")  # fails the test unless git succeeds
    git(cached, "fsck", "--connectivity-only")
    texts = [log.read_text(errors="replace") for log in logs]
    assert [t.count(": reviewed and published") for t in texts] == [1, 1], texts  # one review each, at once
    token = FakeGitLab.BOT_TOKEN
    assert all(token not in text for text in texts)
    assert token not in argv_log.read_text()
    assert all(token.encode() not in f.read_bytes() for f in cache.rglob("*") if f.is_file())
