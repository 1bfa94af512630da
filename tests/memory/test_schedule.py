"""A review service proposes learned rules on a schedule: what one wake does, and when the task runs at all."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from codejury_fakes.gitlab import FakeGitLab
from codejury_fakes.gitlab.repository import opened_merge_requests

from codejury.memory.schedule import learn_once, start_learner
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from tests.memory.replay import fake_gitlab
from tests.memory.seed import remember


async def test_one_wake_proposes_once_per_repository_and_never_twice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    with fake_gitlab(monkeypatch) as gl:
        env = {"CODEJURY_GITLAB_URL": gl.url, "CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN}
        repository = f"{gl.url.split('://')[1]}/acme/widgets"
        for change in ("!1", "!2"):
            remember(url, repository, change, "generalist:magic number", "shape-a", by="bob")
        remember(url, "forge.example/acme/elsewhere", "!1", "generalist:magic number", "shape-a")  # no forge of ours
        store = Store(parse_record_url(url))
        lines: list[str] = []
        recent = datetime.now(UTC).replace(tzinfo=None) - timedelta(days=7)
        assert await learn_once(store, env, max_age_days=180, recent=recent, say=lines.append) == 1
        assert await learn_once(store, env, max_age_days=180, recent=recent, say=lines.append) == 0
        store.close()
        [proposed] = [m for m in opened_merge_requests(gl, 1) if m["source_branch"].startswith("codejury/")]
        assert proposed["iid"] == 1 and lines[0].startswith(f"learn {repository}: opened !1 with 1 learned rule(s)")
        assert lines[1] == f"learn {repository}: already proposed: the branch {proposed['source_branch']} holds " + (
            "these rules"
        )


async def test_the_learner_runs_only_when_its_interval_is_set(tmp_path: Path) -> None:
    store = Store(parse_record_url(f"sqlite:///{tmp_path / 'reviews.sqlite3'}"))
    said: list[str] = []
    assert start_learner(None, {}, store, said.append) is None
    config = tmp_path / "service.toml"
    config.write_text("[memory]\nlearn_every_hours = 24\n")
    assert start_learner(config, {}, None, said.append) is None  # no store: nothing to learn from
    task = start_learner(config, {}, store, said.append)
    assert task is not None and not task.done()
    task.cancel()
    assert said == ["learned rules are proposed every 24 h for the repositories reviewed here"]
    store.close()
