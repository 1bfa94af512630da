"""Defect class 3: every timeout of a review fires, and no tool can hold a review past it.

Each case runs a review whose model asks for something slow: a catastrophic regular
expression, a tool that never returns, a provider that never answers; and asserts the review
ends within its bound with the cause named.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from codejury_fakes.provider_server import FakeProviderServer, HangReply
from pydantic_ai import models

from codejury.agents.bounded import Budget
from codejury.agents.tools import RepoTools
from codejury.errors import ReviewFailed
from codejury.models import registry
from codejury.testing.scripted import Final, ToolCall
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings
from tests.hostile.conftest import run_codejury
from tests.hostile.tool_reviews import CHANGED, KEY_ENV, make_repo, script_tools, tool_answers, write_config
from tests.timing import FOREVER, bounded, limit

CATASTROPHIC = ["^(a|aa)+$", "(x+x+)+y", "^(a+)+$", "(\\w+\\s?)+$"]
"""Patterns that backtrack exponentially in Python's ``re`` on the lines below (seconds to ages)."""
EVIL_LINES = "a" * 3000 + "!\n" + "x" * 3000 + "\n" + "word " * 600 + "!\n"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProviderServer]:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)
    registry.clear_model_cache()
    with FakeProviderServer() as srv:
        yield srv
    registry.clear_model_cache()


@pytest.mark.parametrize("mode", ["git", "working-tree"])
def test_catastrophic_regex_in_grep_does_not_hang_the_review(
    tmp_path: Path, server: FakeProviderServer, mode: str
) -> None:
    repo = make_repo(tmp_path)
    (repo / "evil.txt").write_text(EVIL_LINES)
    if mode == "git":
        from tests.hostile.tool_reviews import git

        git(repo, "add", "evil.txt")
        git(repo, "commit", "-q", "-m", "evil")
    script_tools(server, [("grep", {"pattern": p}) for p in CATASTROPHIC])
    config = write_config(tmp_path, server, reviewer_timeout_s=240, overall_timeout_s=240)
    args = ["review", "--repo", str(repo), "--base", "main", "--config", str(config), "--format", "json"]
    args += ["--fail-on", "never"]  # the verdict is not what this checks
    run = run_codejury(
        [*args, "--working-tree"] if mode == "working-tree" else args,
        cwd=tmp_path,
        env={KEY_ENV: "k"},
        timeout_s=300,
    )
    assert run.rc == 0, run.stderr
    # Python's re needs ages on the first of these patterns: each grep call stops at its 10 s budget, where the
    # review would run into its 240 s timeout (the whole test took 54 s beside a CPU hog, at a load of 19)
    run.assert_bounded(wall_s=90)
    answers = [a for a in tool_answers(server) if "pattern" in a or "no matches" in a]
    assert len(answers) >= len(CATASTROPHIC)
    # each slow pattern is named, or (on a starved machine) its call ran out of its 10 s budget;
    # ^(a+)+$ is optimised by the regex engine and simply does not match
    slow = [a for a in answers if "catastrophically" in a or "time limit" in a]
    assert len(slow) >= 3, answers
    assert json.loads(run.stdout)["reviewers"][0]["status"] == "ok"


def test_a_slow_pattern_uses_at_most_its_call_budget(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"f{i}.txt").write_text("x" * 3000 + "\n")
    tools = RepoTools(tmp_path, {}, time_budget_s=0.5)
    with bounded(0.5, hung_s=FOREVER, what="the grep"):  # unbounded, this pattern never ends on these lines
        answer = tools.grep("(x+x+)+y")
    assert "time limit" in answer


def test_the_tool_budget_never_outlives_the_reviewer_deadline() -> None:
    assert Budget(60, outer_deadline=time.monotonic() + 0.2).left() <= 0.2


def test_read_file_stops_at_its_time_budget_on_a_huge_file(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    lines = 64 * 100_000
    with big.open("wb") as fh:
        for _ in range(64):
            fh.write(b"short line\n" * 100_000)  # 70 MB of short lines
    tools = RepoTools(tmp_path, {}, time_budget_s=0.3)
    answer = tools.read_file("big.txt", 50_000_000)
    # Not timed: the whole file takes 3 to 9 s to read here, inside what a busy machine may add to 0.3 s. The
    # budget's own message, and the line it stopped at, show the read ended on its budget (the figure:
    # benchmarks/engine.py).
    stopped = re.match(r"error: stopped at line (\d+): the time limit of this call was reached", answer)
    assert stopped is not None, answer
    assert int(stopped[1]) < lines


class _NeverEnding:
    """A grep that ignores every limit but the stop flag (a hung network filesystem, say)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.ended = threading.Event()

    def grep(self, pattern: str, path_glob: str | None = None, budget: Budget | None = None) -> str:
        self.started.set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (budget is not None and budget.stopped):
            time.sleep(0.01)
        self.ended.set()
        return "no matches"


@pytest.mark.parametrize(
    ("settings", "cause"),
    [
        ({"reviewer_timeout_s": 1.0, "overall_timeout_s": 60.0}, "timed out after 1s"),
        ({"reviewer_timeout_s": 60.0, "overall_timeout_s": 1.0}, "overall review timeout"),
    ],
)
def test_reviewer_and_overall_timeouts_fire_while_a_tool_is_stuck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: dict[str, float], cause: str
) -> None:
    stuck = _NeverEnding()
    monkeypatch.setattr(RepoTools, "grep", lambda _tools, *args: stuck.grep(*args))
    change = make_change(tmp_path, {CHANGED: (AUTH_OLD, AUTH_NEW)})
    scripts = {"security": [ToolCall("grep", {"pattern": "execute"}), Final([])]}
    started = time.monotonic()
    try:
        result, _, _ = asyncio.run(run_review(change, scripts, settings=scripted_settings(**settings)))
        errors = {r.name: r.error for r in result.reviewers if r.status == "failed"}  # type: ignore[union-attr]
    except ReviewFailed as exc:  # on a starved machine the 1 s overall timeout can end every reviewer
        errors = {"security": cause} if f"security: {cause}" in str(exc) else {"review": str(exc)}
    wall = time.monotonic() - started  # asyncio.run waits for its worker threads: a stuck tool shows here
    assert stuck.started.is_set() and stuck.ended.is_set()
    assert wall < limit(1.0, hung_s=30), f"the review took {wall:.1f}s although its timeout is 1s"  # stuck: 30 s
    assert errors.get("security") == cause, errors


@pytest.mark.waits
@pytest.mark.parametrize(
    ("settings", "cause"),
    [
        ({"stall_timeout_s": 1, "reviewer_timeout_s": 60, "overall_timeout_s": 90}, "stalled"),
        # code_quality has its own 600 s timeout: the overall timeout ends it
        ({"stall_timeout_s": 60, "reviewer_timeout_s": 2, "overall_timeout_s": 6}, "timed out after 2s"),
        ({"stall_timeout_s": 60, "reviewer_timeout_s": 60, "overall_timeout_s": 2}, "overall review timeout"),
    ],
)
def test_every_review_timeout_fires_on_a_silent_provider(
    tmp_path: Path, server: FakeProviderServer, settings: dict[str, float], cause: str
) -> None:
    repo = make_repo(tmp_path)
    server.script("*", [HangReply(300)])  # ends when the server stops
    config = write_config(tmp_path, server, **settings)
    run = run_codejury(
        ["review", "--repo", str(repo), "--base", "main", "--config", str(config), "--format", "json"],
        cwd=tmp_path,
        env={KEY_ENV: "k"},
        timeout_s=300,
    )
    run.assert_one_line_error(3, "no reviewer succeeded", cause)
    run.assert_bounded(wall_s=90)  # start-up on a busy 2-core machine included; the provider hangs 300 s
