"""A review the service runs whose head commit the forge's git endpoint does not give (it stalls) reads the
changed files through the forge's API: the analyzers' evidence is recorded, and the summary says what the
tools could not see."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from codejury_fakes.gitlab import FakeGitLab
from sqlalchemy import select

from codejury.checkout import fetch as fetch_mod
from codejury.forges.markers import parse_summary
from codejury.record import schema
from codejury.record.store import Store
from codejury.record.target import sqlite_target
from codejury.service.commands import build_service
from codejury.testing.scripted import ScriptedResolver
from tests.forges.test_ci_checkout import BASE, HEAD, upstream
from tests.service.helpers import GITLAB_TOKEN, gitlab_delivery
from tests.service.helpers import gitlab_mr_event as mr_event
from tests.service.test_local_reviews import options, serving, until
from tests.service.test_service_head_tree import scripted

__all__ = ["scripted"]  # the fixture


async def test_a_webhook_review_of_a_head_that_stalls_reads_the_changed_files_through_the_api(
    scripted: ScriptedResolver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch_mod, "FETCH_TIMEOUT_S", 1.5)
    repo, base, head = upstream(tmp_path)
    with FakeGitLab() as gl:
        gl.add_mr(1, 7, files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
        gl.serve_git("acme/widgets", repo)
        gl.git.stall("acme/widgets")
        opts = options(
            tmp_path,
            CODEJURY_GITLAB_TOKEN=FakeGitLab.BOT_TOKEN,
            CODEJURY_GITLAB_WEBHOOK_TOKEN=GITLAB_TOKEN,
            CODEJURY_GITLAB_URL=gl.url,
            CODEJURY_REPO_CACHE=str(tmp_path / "repo-cache"),
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
        raw = [r for r in gl.requests if r.path.endswith("/repository/files/reports.py/raw")]
    store = Store(sqlite_target(tmp_path / "reviews.sqlite3"))
    with store.connect() as conn:  # the recorded finding: backed by ruff, which read the file the API gave
        evidence = conn.execute(select(schema.findings.c.evidence)).scalars().all()
    store.close()
    assert len(evidence) == 1 and "ruff:S608" in evidence[0]
    assert "no answer within 1.5 s" in summary
    assert "only the changed files were read, through the forge's API" in summary
    assert raw and all(r.query.get("ref") == head for r in raw)
    assert all(FakeGitLab.BOT_TOKEN not in line for line in lines)
