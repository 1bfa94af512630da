"""A review the service runs reads the head commit's tree, fetched into its repository cache.

The service has no checkout: the analyzers, the index and the tools read the commit the forge
serves over git (the fake forge's smart HTTP endpoint), with the bot's token as a header.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from sqlalchemy import select

from codejury.forges.markers import parse_summary
from codejury.record import schema
from codejury.record.store import Store
from codejury.record.target import sqlite_target
from codejury.service.commands import build_service
from codejury.testing.gitlab import FakeGitLab
from codejury.testing.scripted import Final, Raw, ScriptedResolver
from tests.forges.test_ci_checkout import BASE, HEAD, SQL, upstream
from tests.service.helpers import GITLAB_TOKEN, gitlab_delivery
from tests.service.helpers import gitlab_mr_event as mr_event
from tests.service.test_local_reviews import options, serving, until


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
