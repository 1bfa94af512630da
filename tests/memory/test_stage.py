"""The memory stage in whole reviews: a security finding an analyzer backs is never suppressed by memory alone, a
dismissal stops counting when its reviewer's prompt changed, and a store that cannot be read suppresses nothing and
says so in every format."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from codejury.findings import Review
from codejury.memory.keys import digest
from codejury.render.markdown import render_review_markdown
from codejury.reviewers.roster import load_builtin_reviewers
from codejury.testing.scripted import Final, finding
from tests.engine_helpers import run_review, scripted_settings
from tests.judge.test_security_holds import CONFIRMS, NO_DECISIONS, SQL_LINE, approves, sql_change, the_sql_finding
from tests.memory.replay import Replay, fake_gitlab
from tests.memory.seed import remember

REPO = "gitlab.example.com/shop/orders"


async def _review(tmp_path: Path, store: str, change_id: str) -> tuple[Review, list[dict[str, Any]]]:
    """The SQL change reviewed as ``change_id`` of ``REPO``, its security hit confirmed; the memory keys of what
    it published."""
    change = sql_change(tmp_path / change_id[1:])
    change = replace(change, meta=replace(change.meta, repository=REPO, change_id=change_id))
    scripts = {"security": [Final([]), CONFIRMS], "coordinator": NO_DECISIONS}
    result, _, events = await run_review(change, scripts, settings=scripted_settings(analyzers=True, record_url=store))
    assert isinstance(result, Review)
    [memory] = [e for e in events.events if e["type"] == "memory"]
    return result, list(memory["keys"])


async def test_a_security_finding_an_analyzer_backs_is_published_though_dismissed_before(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    first, keys = await _review(tmp_path, store, "!4")
    assert not the_sql_finding(first).withholds_approval  # confirmed: it blocks as a critical, nothing held
    [key] = [k for k in keys if "ruff:S608" in k["rule"]]
    remember(store, REPO, "!4", key["rule"], key["shape"], by="bob")
    result, _ = await _review(tmp_path, store, "!9")
    sql = the_sql_finding(result)
    assert "ruff:S608" in sql.evidence and sql.withholds_approval and not approves(result)
    [remembered] = result.remembered
    assert (remembered.finding.start_line, remembered.suppressed, remembered.dismissed_in) == (SQL_LINE, False, "!4")
    text = render_review_markdown(result)
    assert "1 security finding dismissed before, published anyway (an analyzer backs it)" in text
    assert "dismissed in !4 by bob: won't fix (published)" in text
    assert "security evidence a model confirmed: withholds approval until a person dismisses it" in text


@pytest.mark.parametrize("same_prompt", [True, False], ids=["same-reviewer", "reviewer-changed"])
def test_a_dismissal_counts_while_its_reviewer_is_unchanged(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, same_prompt: bool
) -> None:
    store = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    with fake_gitlab(monkeypatch) as gl:
        version = digest(load_builtin_reviewers()["generalist"].prompt, 8) if same_prompt else "0ld0ld00"
        remember(store, f"{gl.url.split('://')[1]}/acme/widgets", "!4", "generalist:magic number",
                 digest("retries = 3"), rule_version=version)  # fmt: skip
        replay = Replay(gl, monkeypatch, tmp_path, store)
        gl.add_mr(1, 1, files={"pkg/a.py": (None, "import os\nretries = 3\n")})
        code, out, err = replay.review(1, [finding("pkg/a.py", 2, "Magic number")], "--format", "json")
        assert code == 0, err
        review = json.loads(out)
        published = [f["title"] for f in review["findings"]]
        assert published == ([] if same_prompt else ["Magic number"])
        assert [r["dismissed_in"] for r in review["remembered"]] == (["!4"] if same_prompt else [])


def test_memory_off_suppresses_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    with fake_gitlab(monkeypatch) as gl:
        version = digest(load_builtin_reviewers()["generalist"].prompt, 8)
        remember(store, f"{gl.url.split('://')[1]}/acme/widgets", "!4", "generalist:magic number",
                 digest("retries = 3"), rule_version=version)  # fmt: skip
        replay = Replay(gl, monkeypatch, tmp_path, store)
        (tmp_path / "no-analyzers.toml").write_text("analyzers = false\n[memory]\nenabled = false\n")
        monkeypatch.setattr(
            "tests.memory.replay.analyzers_off", lambda folder: ["--config", str(folder / "no-analyzers.toml")]
        )
        gl.add_mr(1, 1, files={"pkg/a.py": (None, "import os\nretries = 3\n")})
        code, out, err = replay.review(1, [finding("pkg/a.py", 2, "Magic number")], "--format", "json")
        assert code == 0, err
        review = json.loads(out)
        assert [f["title"] for f in review["findings"]] == ["Magic number"] and review["remembered"] == []
        assert not any("memory" in n for n in review["notes"])  # turned off is not a capability that failed


@pytest.mark.parametrize("broken", ["sqlite-directory", "postgresql-silent"])
def test_a_store_that_cannot_be_read_publishes_everything_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, broken: str, request: pytest.FixtureRequest
) -> None:
    if broken == "sqlite-directory":
        (tmp_path / "a-directory").mkdir()
        store = f"sqlite:///{tmp_path / 'a-directory'}"
    else:
        store = f"postgresql://codejury@127.0.0.1:{request.getfixturevalue('silent_server')}/reviews"
    with fake_gitlab(monkeypatch) as gl:
        replay = Replay(gl, monkeypatch, tmp_path, store)
        gl.add_mr(1, 1, files={"pkg/a.py": (None, "import os\nretries = 3\n")})
        code, out, err = replay.review(1, [finding("pkg/a.py", 2, "Magic number")], "--format", "json")
        assert code == 0, err
        review = json.loads(out)
        assert [f["title"] for f in review["findings"]] == ["Magic number"] and review["remembered"] == []
        [note] = [n for n in review["notes"] if n.startswith("memory was not consulted")]
        assert "\n" not in note and "memory was not consulted" in err
        assert "memory was not consulted" in replay.summary(1)
        assert list(replay.threads(1)) == [("Magic number", 2)]
