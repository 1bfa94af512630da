"""Whole reviews through the real OpenAI and Anthropic SDKs against the fault-injection server.

Every reviewer has a failback chain of two models of one provider (``NAME-a`` → ``NAME-b``).
The server misbehaves per model name; the tests assert what a user of the review relies on:
which reviewers failed back or failed, that healthy reviewers' findings are all there, the
breaker's life (open → one probe after the cooldown → closed) with an injected clock, and
that wall time stays inside the configured bounds.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from codejury_fakes.panel_replies import PATH, REVIEWERS, healthy
from codejury_fakes.provider_server import (
    DropReply,
    ErrorReply,
    FakeProviderServer,
    HangReply,
    MalformedReply,
    Reply,
    SlowDripReply,
    ToolCallReply,
)
from pydantic_ai import models

from codejury.config import Settings, merge_file_table
from codejury.errors import ReviewFailed
from codejury.findings import Review
from codejury.models import registry
from codejury.pipeline import ReviewOptions, review
from codejury.plugins import Plugins, make_plugin_manager
from codejury.record.events import EventLog
from codejury.resilience import BreakerBoard
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change
from tests.timing import limit

KEY = "fault-key-1234"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True, scope="module")
def _provider_sdks_imported() -> None:
    """Both SDKs' model layers are imported before any review is timed: the first import after a fresh install
    compiles them (the anthropic SDK's 3,349 modules: about 4 s of CPU, up to 24 s of wall beside the embedded model in
    make test), which is no part of the failback whose time these tests bound."""
    for module in ("pydantic_ai.models.openai", "pydantic_ai.models.anthropic"):
        importlib.import_module(module)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProviderServer]:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)
    registry.clear_model_cache()
    with FakeProviderServer() as srv:
        srv.script_source("*", healthy)
        yield srv
    registry.clear_model_cache()


def settings(server: FakeProviderServer, vendor: str = "openai", **overrides: Any) -> Settings:
    names = (*REVIEWERS, "coordinator")
    if vendor == "openai":
        provider = {"base_url": server.openai_base_url, "api_key_env": "FAULT_KEY"}
    else:
        provider = {"kind": "anthropic", "base_url": server.anthropic_base_url, "api_key_env": "FAULT_KEY"}
    table: dict[str, Any] = {
        "providers": {"gw": provider},
        "models": {"top": "gw:coordinator-a", "standard": "gw:code_quality-a", "light": "gw:documentation-a"},
        "reviewers": {n: {"model": f"gw:{n}-a"} for n in names},
        "failback": {f"gw:{n}-a": f"gw:{n}-b" for n in names},
        "stall_timeout_s": 1,
        "heartbeat_s": 600,
        "min_retry_window_s": 0,
        "reviewer_timeout_s": 20,
        "overall_timeout_s": 60,
        "analyzers": False,  # resilience of the panel's requests, not the analyzers' confirmation requests
        **overrides,
    }
    return merge_file_table(Settings(), table, "test")


async def run(
    tmp_path: Path, cfg: Settings, *, board: BreakerBoard | None = None, warnings: list[str] | None = None
) -> tuple[Review, EventLog, float]:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    sink = [] if warnings is None else warnings
    with EventLog(None, run_id="faults") as events:
        opts = ReviewOptions(
            settings=cfg,
            env={"FAULT_KEY": KEY},
            events=events,
            warn=sink.append,
            plugins=Plugins(make_plugin_manager()),
            board=board or BreakerBoard(failure_threshold=3, cooldown_s=120),
        )
        started = time.monotonic()
        try:
            result = await review(change, opts)
        finally:
            took = time.monotonic() - started
            await registry.close_cached_models()
    assert isinstance(result, Review)
    return result, events, took


def reviewer(review: Review, name: str) -> Any:
    return next(r for r in review.reviewers if r.name == name)


def found_by(review: Review) -> set[str]:
    return {f.reviewer for f in review.findings}


# Not marked ``waits``: 13 of its 14 cases compute for half a second, and beside the embedded model (where the
# mark starts a test) a worker gets a third of a CPU, so a first-time compile inside the SDK could hold the event
# loop past the 1 s stall timeout and fail back reviewers that were healthy (seen in make test).
STALL_S = 5.0


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
@pytest.mark.parametrize(
    "fault",
    [
        ErrorReply(503),
        ErrorReply(529),
        ErrorReply(500),
        HangReply(30.0),
        DropReply(10, None),
        MalformedReply(),
        ErrorReply(404),
    ],
    ids=["503", "529-overloaded", "500", "hang", "dropped", "malformed-json", "404-retired-model"],
)
async def test_a_retryable_fault_fails_back_to_the_previous_generation(
    tmp_path: Path, server: FakeProviderServer, vendor: str, fault: Reply
) -> None:
    server.script("security-a", [fault])
    # A 5 s stall timeout: in a fresh clone's make test, security-a's request once never reached the server
    # within a 1 s stall timeout (0 requests seen, yet a failback), so the fault under test was not the cause.
    result, events, took = await run(tmp_path, settings(server, vendor, stall_timeout_s=STALL_S))
    sec = reviewer(result, "security")
    assert (sec.status, sec.model) == ("ok", "gw:security-b")
    assert found_by(result) == set(REVIEWERS), "every reviewer's finding is in the review"
    assert len(server.requests_for("security-a")) == 1 and len(server.requests_for("security-b")) == 1
    failback = [e for e in events.events if e["type"] == "model_failback"]
    assert [(e["from_model"], e["to_model"]) for e in failback] == [("gw:security-a", "gw:security-b")]
    # The failback itself, timed by the server between the two requests (not the whole review, which a busy
    # machine stretches: its first in a process imports and compiles): each fault costs one stall at most,
    # where waiting out the reviewer's 20 s timeout would fail the reviewer.
    [first], [second] = server.requests_for("security-a"), server.requests_for("security-b")
    assert result.judged and second.received_at - first.received_at < limit(STALL_S, hung_s=20)


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (ErrorReply(401), "401"),
        (ErrorReply(429, code="insufficient_quota"), "quota"),
        (ErrorReply(400, message="prompt is too long: maximum context length exceeded"), "context"),
    ],
    ids=["auth", "quota", "context-length"],
)
async def test_an_error_another_model_cannot_fix_fails_the_reviewer_without_failback(
    tmp_path: Path, server: FakeProviderServer, fault: Reply, expected: str
) -> None:
    server.script("performance-a", [fault])
    result, _, _ = await run(tmp_path, settings(server))
    perf = reviewer(result, "performance")
    assert perf.status == "failed" and expected in perf.error.lower()
    assert KEY not in perf.error
    assert len(server.requests_for("performance-a")) == 1 and server.requests_for("performance-b") == []
    assert found_by(result) == set(REVIEWERS) - {"performance"}
    assert "performance" in result.summary


@pytest.mark.waits
async def test_retry_after_is_honoured_on_the_same_model(tmp_path: Path, server: FakeProviderServer) -> None:
    server.script_source("security-a", lambda i, m: ErrorReply(429, retry_after="1") if i == 0 else healthy(i, m))
    result, _, took = await run(tmp_path, settings(server))
    sec = reviewer(result, "security")
    assert (sec.status, sec.model) == ("ok", "gw:security-a")
    first, second = server.requests_for("security-a")
    assert second.received_at - first.received_at >= 0.9
    assert server.requests_for("security-b") == []
    assert took >= 1.0


async def test_truncated_output_is_retried_once_with_a_larger_budget(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    cut = ToolCallReply([("final_result", '{"findings": [{"category": "secu')], finish="length")
    server.script_source("security-a", lambda i, m: cut if i == 0 else healthy(i, m))
    result, events, _ = await run(tmp_path, settings(server))
    assert reviewer(result, "security").status == "ok" and "security" in found_by(result)
    first, second = server.requests_for("security-a")
    budget = [r.body.get("max_completion_tokens") or r.body.get("max_tokens") for r in (first, second)]
    assert budget[1] > budget[0]
    assert [e["model"] for e in events.events if e["type"] == "model_truncated"] == ["gw:security-a"]


@pytest.mark.waits
async def test_a_silent_model_is_killed_after_the_stall_timeout_and_heartbeats_go_to_stderr(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    # A stream event every 0.2 s keeps a model alive under a 1 s stall timeout (some events carry
    # nothing the client reports, so the gap between reported events is a few drips); heartbeats
    # every 0.25 s.
    server.script_source("security-a", lambda i, m: SlowDripReply(healthy(i, m), 0.2))
    server.script("security-b", [HangReply(30.0)])
    server.script("performance-a", [HangReply(30.0)])
    server.script("performance-b", [HangReply(30.0)])
    warnings: list[str] = []
    result, _, took = await run(tmp_path, settings(server, heartbeat_s=0.25), warnings=warnings)
    assert reviewer(result, "security").status == "ok" and reviewer(result, "security").model == "gw:security-a"
    perf = reviewer(result, "performance")
    assert perf.status == "failed" and "stalled" in perf.error
    assert took < limit(3.0, hung_s=30), "two 1 s stalls and a slow drip, not the 30 s hang"
    beats = [w for w in warnings if "model is thinking…" in w]
    assert any(w.startswith("performance: gw:performance-a: model is thinking… (") for w in beats), warnings


@pytest.mark.waits
async def test_the_reviewer_timeout_bounds_a_hung_reviewer(tmp_path: Path, server: FakeProviderServer) -> None:
    # 6 s: every reviewer runs under this timeout, and a healthy one on a busy machine must still finish in it
    server.script("documentation-a", [HangReply(60.0)])
    cfg = settings(server, stall_timeout_s=60, reviewer_timeout_s=6)
    result, _, took = await run(tmp_path, cfg)
    doc = reviewer(result, "documentation")
    assert doc.status == "failed" and doc.error == "timed out after 6s"
    assert found_by(result) == set(REVIEWERS) - {"documentation"}
    assert took < limit(6, hung_s=60)  # the timeout, not the 60 s hang


async def test_no_failback_starts_inside_the_minimum_retry_window(tmp_path: Path, server: FakeProviderServer) -> None:
    server.script("security-a", [ErrorReply(503)])
    result, _, _ = await run(tmp_path, settings(server, reviewer_timeout_s=60, min_retry_window_s=120))
    sec = reviewer(result, "security")
    assert sec.status == "failed" and "retry window" in sec.error
    assert server.requests_for("security-b") == []


async def test_the_breaker_opens_probes_once_after_the_cooldown_and_closes(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    clock = Clock()
    board = BreakerBoard(failure_threshold=3, cooldown_s=120, clock=clock)
    server.script("security-a", [ErrorReply(503)])
    cfg = settings(server)
    transitions: list[tuple[str, str, str]] = []
    for _ in range(3):
        result, events, _ = await run(tmp_path, cfg, board=board)
        assert reviewer(result, "security").model == "gw:security-b"
        transitions += [(e["model"], e["from_state"], e["to_state"]) for e in events.events if e["type"] == "breaker"]
    assert transitions == [("gw:security-a", "closed", "open")]
    assert len(server.requests_for("security-a")) == 3

    # Open: the next review goes straight to the previous generation, no request to the broken model.
    clock.now += 60
    result, _, _ = await run(tmp_path, cfg, board=board)
    assert reviewer(result, "security").model == "gw:security-b"
    assert len(server.requests_for("security-a")) == 3

    # After the cooldown exactly one probe; it succeeds and the breaker closes.
    clock.now += 61
    server.script_source("security-a", healthy)
    result, events, _ = await run(tmp_path, cfg, board=board)
    assert reviewer(result, "security").model == "gw:security-a"
    assert len(server.requests_for("security-a")) == 4
    moved = [(e["from_state"], e["to_state"]) for e in events.events if e["type"] == "breaker"]
    assert moved == [("open", "half_open"), ("half_open", "closed")]
    assert board.states()["gw:security-a"] == "closed"


async def test_a_failed_probe_opens_the_breaker_again(tmp_path: Path, server: FakeProviderServer) -> None:
    clock = Clock()
    board = BreakerBoard(failure_threshold=1, cooldown_s=120, clock=clock)
    server.script("security-a", [ErrorReply(503)])
    await run(tmp_path, settings(server), board=board)
    clock.now += 121
    result, events, _ = await run(tmp_path, settings(server), board=board)
    moved = [(e["from_state"], e["to_state"]) for e in events.events if e["type"] == "breaker"]
    assert moved == [("open", "half_open"), ("half_open", "open")]
    assert len(server.requests_for("security-a")) == 2
    assert reviewer(result, "security").model == "gw:security-b"


async def test_the_coordinator_fails_back_and_still_judges(tmp_path: Path, server: FakeProviderServer) -> None:
    server.script("coordinator-a", [ErrorReply(529)])
    result, _, _ = await run(tmp_path, settings(server))
    assert result.judged and result.coordinator is not None
    assert (result.coordinator.status, result.coordinator.model) == ("ok", "gw:coordinator-b")
    assert found_by(result) == set(REVIEWERS)


async def test_an_exhausted_coordinator_chain_publishes_unjudged_findings_without_approval(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    server.script("coordinator-a", [ErrorReply(503)])
    server.script("coordinator-b", [ErrorReply(503)])
    result, _, _ = await run(tmp_path, settings(server))
    assert not result.judged
    assert result.verdict not in ("approved", "approved_with_comments")
    assert found_by(result) == set(REVIEWERS), "the reviewers' findings are all published, marked unjudged"


async def test_when_every_reviewer_fails_the_review_fails(tmp_path: Path, server: FakeProviderServer) -> None:
    for name in REVIEWERS:
        server.script(f"{name}-a", [ErrorReply(503)])
        server.script(f"{name}-b", [ErrorReply(503)])
    with pytest.raises(ReviewFailed, match="no reviewer succeeded"):
        await run(tmp_path, settings(server))
