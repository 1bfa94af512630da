"""The service reviews what a change's own claims would hide: a ``.gitattributes`` line that makes the forge
list a Python file without its patch, and a new hand-written ``*.min.js``. The head commit the service fetches
decides: the file's bytes are text, so it is reviewed and the analyzers' evidence is recorded."""

from __future__ import annotations

import functools
from pathlib import Path

import httpx2
import pytest
from codejury_fakes.github import FakeGitHub
from sqlalchemy import select

from codejury.forges.github import adapter as github_mod
from codejury.forges.github.api import GitHubAPI
from codejury.forges.markers import parse_summary
from codejury.record import schema
from codejury.record.store import Store
from codejury.record.target import sqlite_target
from codejury.service.commands import build_service
from codejury.testing.scripted import ScriptedResolver
from tests.forges.test_ci_checkout import BASE, HEAD, upstream
from tests.forges.test_ci_checkout import git as plain_git
from tests.service.helpers import GITHUB_SECRET, github_delivery, github_pr_event
from tests.service.test_local_reviews import options, serving, until
from tests.service.test_service_head_tree import scripted

__all__ = ["scripted"]  # the fixture

MINIFIED_NAME = "web/app.min.js"
HAND_WRITTEN = 'const q = new URLSearchParams(location.search);\neval(q.get("code"));\n'


async def test_a_webhook_review_reads_what_the_changes_gitattributes_and_a_minified_name_would_hide(
    scripted: ScriptedResolver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(github_mod, "GitHubAPI", functools.partial(GitHubAPI, backoff_s=0.001))
    repo, base, _ = upstream(tmp_path)  # feature: %-built SQL in reports.py
    plain_git(repo, "checkout", "-q", "feature")
    (repo / ".gitattributes").write_text("*.py -diff\n")
    (repo / "web").mkdir()
    (repo / MINIFIED_NAME).write_text(HAND_WRITTEN)
    plain_git(repo, "add", ".gitattributes", MINIFIED_NAME)
    plain_git(repo, "commit", "-q", "-m", "diff Python files as binary; a script named minified")
    head = plain_git(repo, "rev-parse", "HEAD")
    plain_git(repo, "checkout", "-q", "main")
    files = {
        "reports.py": (BASE, HEAD),
        ".gitattributes": (None, "*.py -diff\n"),
        MINIFIED_NAME: (None, HAND_WRITTEN),
    }
    with FakeGitHub("octo/app") as gh:
        gh.add_user("codejury-bot", permission="write")
        gh.add_token("ghp_codejury_bot", user="codejury-bot")
        gh.add_user("alice", permission="write")
        # GitHub honours the change's own -diff: it lists reports.py without a patch
        gh.add_pr(number=7, author="alice", files=files, head_sha=head, base_sha=base, patch_left_out=["reports.py"])
        gh.serve_git("octo/app", repo)
        opts = options(
            tmp_path,
            CODEJURY_GITHUB_WEBHOOK_SECRET=GITHUB_SECRET,
            CODEJURY_GITHUB_TOKEN="ghp_codejury_bot",
            CODEJURY_GITHUB_API_URL=gh.api_url,
            CODEJURY_REPO_CACHE=str(tmp_path / "repo-cache"),
        )

        def summaries() -> list[str]:
            return [c.body for c in gh.issue_comments(7) if c.user == "codejury-bot" and parse_summary(c.body)]

        async with serving(build_service(opts, say=lambda line: None)) as url, httpx2.AsyncClient(base_url=url) as c:
            body, headers = github_delivery(github_pr_event(f"{gh.api_url}/octo/app/pull/7", head_sha=head))
            assert (await c.post("/webhooks/github", content=body, headers=headers)).json()["outcome"] == "queued"
            await until(lambda: len(summaries()) == 1)
        [summary] = summaries()
    store = Store(sqlite_target(tmp_path / "reviews.sqlite3"))
    with store.connect() as conn:
        rows = conn.execute(select(schema.findings.c.path, schema.findings.c.evidence)).all()
    store.close()
    assert any(path == "reports.py" and "ruff:S608" in evidence for path, evidence in rows), rows
    assert "binary file" not in summary and "minified asset" not in summary, summary
