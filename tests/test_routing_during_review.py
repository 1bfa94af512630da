"""Routing that acts while a review runs: the routing document is re-read during the review (a real
routing server on loopback whose document changes mid-review), and the models are a fake provider
on loopback driven through the real SDKs by ``codejury review``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from codejury import remote_config
from codejury.cli import cli
from codejury.testing.provider_server import FakeProviderServer, HangReply, Reply, ToolCallReply
from codejury.testing.routing_server import RoutingServer
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, unified_diff

PATH = "app/auth/users.py"
ANSWER_S = 0.3
"""How long the slow provider takes to answer each request."""
CHANGE_AFTER_S = 2.0
"""When the routing document changes, counted from the slow provider's first request."""


@pytest.fixture
def routing() -> Iterator[RoutingServer]:
    with RoutingServer() as srv:
        yield srv


def slow_reviewer(
    provider: FakeProviderServer, routing: RoutingServer, document: dict[str, Any]
) -> list[tuple[float, float]]:
    """The security reviewer (on provider ``slowgw``) reads files for ever, one slow answer at a time; the
    routing document becomes ``document`` ``CHANGE_AFTER_S`` after its first request. Returns
    [(when it changed: monotonic, wall clock)]."""
    changed_at: list[tuple[float, float]] = []

    def change() -> None:
        routing.body = json.dumps(document).encode()
        changed_at.append((time.monotonic(), time.time()))

    def source(index: int, _model: str | None) -> Reply:
        if index == 0:
            threading.Timer(CHANGE_AFTER_S, change).start()
        return HangReply(ANSWER_S, ToolCallReply([("read_file", {"path": PATH})]))

    provider.script_source("sec", source)
    provider.script("*", [ToolCallReply([("final_result", {"findings": []})])])
    provider.script("big", [ToolCallReply([("final_result", {"decisions": []})])])
    return changed_at


def review(tmp_path: Path, provider: FakeProviderServer, routing: RoutingServer) -> tuple[int, dict[str, Any], str]:
    repo = tmp_path / "repo"
    (repo / "app/auth").mkdir(parents=True)
    (repo / PATH).write_text(AUTH_NEW)
    gateway = f'base_url = "{provider.openai_base_url}"\napi_key_env = "GW_KEY"\n'
    config = tmp_path / "codejury.toml"
    config.write_text(
        f'analyzers = false\nremote_config = "{routing.url}"\n'
        f"[providers.slowgw]\n{gateway}[providers.teamgw]\n{gateway}"
        '[models]\ntop = "teamgw:big"\nstandard = "teamgw:mid"\nlight = "teamgw:small"\n'
        '[reviewers.security]\nmodel = "slowgw:sec"\n'
    )
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff(PATH, AUTH_OLD, AUTH_NEW))
    result = CliRunner(env={"GW_KEY": "gw-key-0000"}).invoke(
        cli,
        ["review", "--diff", str(diff), "--repo", str(repo), "--config", str(config), "--format", "json",
         "--events", str(tmp_path / "events.jsonl")],
        catch_exceptions=False,
    )  # fmt: skip
    return result.exit_code, json.loads(result.stdout), result.stderr


def events(tmp_path: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in map(json.loads, (tmp_path / "events.jsonl").read_text().splitlines()) if e["type"] == kind]


def test_a_provider_disabled_during_the_review_gets_no_further_request(
    tmp_path: Path, provider: FakeProviderServer, routing: RoutingServer
) -> None:
    changed_at = slow_reviewer(provider, routing, {"disabled_providers": ["slowgw"]})

    code, result, err = review(tmp_path, provider, routing)

    [(changed, changed_wall)] = changed_at
    [seen] = [e for e in events(tmp_path, "routing_refresh") if e["outcome"] == "changed"]
    seen_after = datetime.fromisoformat(seen["ts"].replace("Z", "+00:00")).timestamp() - changed_wall
    times = [r.received_at - changed for r in provider.requests_for("sec")]
    before = [t for t in times if t < 0]
    after_seen = [t for t in times if t > seen_after + 0.05]
    print(
        f"\nslowgw disabled {CHANGE_AFTER_S:g} s into the review "
        f"(re-read every {remote_config.REFRESH_INTERVAL_S:g} s): "
        f"seen after {seen_after:.2f} s; {len(before)} requests to it before the change, "
        f"{len(times) - len(before)} between the change and the re-read that saw it, {len(after_seen)} after; "
        f"{routing.hits} document reads, {routing.not_modified} answered 304"
    )
    assert len(before) >= 3  # the reviewer was busy on that provider when it was disabled
    assert 0 <= seen_after <= remote_config.REFRESH_INTERVAL_S + 1.0  # the next re-read saw it
    assert after_seen == []  # and from then on the provider got no request
    refreshes = events(tmp_path, "routing_refresh")
    assert [e["outcome"] for e in refreshes if e["outcome"] in ("read", "changed")] == ["read", "changed"]
    security = next(r for r in result["reviewers"] if r["name"] == "security")
    assert security["status"] == "failed" and "disabled by the routing document" in security["error"]
    assert code == 0, err  # the rest of the panel answered: the review stands, the failure is listed


def test_the_kill_switch_turned_on_during_the_review_stops_it_as_partial(
    tmp_path: Path, provider: FakeProviderServer, routing: RoutingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_config, "REFRESH_INTERVAL_S", 0.25)
    changed_at = slow_reviewer(provider, routing, {"kill_switch": True, "reason": "provider incident"})

    _, result, err = review(tmp_path, provider, routing)

    [(changed, _)] = changed_at
    late = [r.received_at - changed for r in provider.requests if r.received_at - changed >= 0.25 + 0.5]
    assert routing.not_modified >= 1  # re-reading an unchanged document cost a 304
    assert late == []  # no model of any provider is called once the review saw the switch
    assert result["verdict"] in ("significant_concerns", "requested_changes")  # partial: never an approval
    assert "the kill switch is on (provider incident)" in result["notes"][0]
    assert "stopping the review: the kill switch is on (provider incident)" in err
    [stopped] = events(tmp_path, "kill_switch")
    assert stopped["during_review"] is True


async def test_a_failed_re_read_keeps_the_last_document_and_warns_once(routing: RoutingServer) -> None:
    routing.body = json.dumps({"disabled_providers": ["openai"]}).encode()
    warnings: list[str] = []
    seen: list[dict[str, Any]] = []
    watch = remote_config.RoutingWatch(
        routing.url, warn=warnings.append, on_event=lambda kind, **fields: seen.append({"type": kind, **fields})
    )

    first = await watch.refresh()
    assert first is not None and first.disabled_providers == {"openai"}
    assert await watch.refresh() is None and routing.not_modified == 1  # unchanged: a 304, nothing re-parsed
    routing.status = 503
    for _ in range(3):
        assert await watch.refresh() is None
    routing.status = 200
    assert await watch.refresh() is None  # the same document again

    assert [e["outcome"] for e in seen] == ["read", "unchanged", "failed", "failed", "failed", "unchanged"]
    assert warnings == ["remote config refresh failed (HTTP 503); keeping the last document read"]
    assert watch.routing is not None and watch.routing.disabled_providers == {"openai"}
