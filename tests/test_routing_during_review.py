"""Routing that acts while a review runs: the routing document is re-read before each model request (a
real routing server on loopback whose document changes mid-review), and the models are a fake provider
on loopback driven through the real SDKs by ``codejury review``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from codejury_fakes.gitlab import FakeGitLab
from codejury_fakes.provider_server import FakeProviderServer, HangReply, Reply, ToolCallReply
from codejury_fakes.routing_server import RoutingServer

from codejury import remote_config
from codejury.cli import cli
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, unified_diff
from tests.forges.test_gitlab_bot import NEW, OLD, B
from tests.forges.test_gitlab_bot import gl as gl  # noqa: F401  (the fixture)
from tests.timing import limit

PATH = "app/auth/users.py"
ANSWER_S = 0.3
"""How long the slow provider takes to answer each request."""
CHANGE_AT = 4
"""The routing document changes while the slow provider serves its 4th request (so every later request of
the reviewer starts after the change): counted, not timed, so that a busy machine changes nothing."""


@pytest.fixture
def routing() -> Iterator[RoutingServer]:
    with RoutingServer() as srv:
        yield srv


def slow_reviewer(
    provider: FakeProviderServer, routing: RoutingServer, document: dict[str, Any]
) -> list[tuple[float, float]]:
    """The security reviewer (on ``slowgw:sec``) reads files for ever, one slow answer at a time; the
    routing document becomes ``document`` while it serves its ``CHANGE_AT``-th request. Returns
    [(when it changed: monotonic, wall clock)]."""
    changed_at: list[tuple[float, float]] = []
    served: list[int] = []

    def source(index: int, _model: str | None) -> Reply:
        served.append(index)
        if not changed_at and len(served) >= CHANGE_AT:
            routing.body = json.dumps(document).encode()
            changed_at.append((time.monotonic(), time.time()))
        return HangReply(ANSWER_S, ToolCallReply([("read_file", {"path": PATH})]))

    provider.script_source("sec", source)
    provider.script("sec-old", [ToolCallReply([("final_result", {"findings": []})])])
    provider.script("*", [ToolCallReply([("final_result", {"findings": []})])])
    provider.script("big", [ToolCallReply([("final_result", {"decisions": []})])])
    return changed_at


def review(
    tmp_path: Path, provider: FakeProviderServer, routing: RoutingServer, extra: str = ""
) -> tuple[int, dict[str, Any], str]:
    repo = tmp_path / "repo"
    (repo / "app/auth").mkdir(parents=True)
    (repo / PATH).write_text(AUTH_NEW)
    gateway = f'base_url = "{provider.openai_base_url}"\napi_key_env = "GW_KEY"\n'
    config = tmp_path / "codejury.toml"
    config.write_text(
        f'analyzers = false\nremote_config = "{routing.url}"\n'
        f"[providers.slowgw]\n{gateway}[providers.teamgw]\n{gateway}"
        '[models]\ntop = "teamgw:big"\nstandard = "teamgw:mid"\nlight = "teamgw:small"\n'
        '[reviewers.security]\nmodel = "slowgw:sec"\n' + extra
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


@pytest.mark.waits
def test_a_provider_disabled_during_the_review_gets_no_further_request(
    tmp_path: Path, provider: FakeProviderServer, routing: RoutingServer
) -> None:
    changed_at = slow_reviewer(provider, routing, {"disabled_providers": ["slowgw"]})

    code, result, err = review(tmp_path, provider, routing)

    [(changed, _)] = changed_at
    times = [r.received_at - changed for r in provider.requests_for("sec")]
    before = [t for t in times if t < 0]
    after = [t for t in times if t >= 0]
    served = len(provider.requests)
    print(
        f"\nslowgw disabled at its request {CHANGE_AT}: {len(before)} requests to it before the "
        f"change, {len(after)} after; {routing.hits} document reads for {served} model requests, "
        f"{routing.not_modified} answered 304"
    )
    assert len(before) >= 3  # the reviewer was busy on that provider when it was disabled
    assert after == []  # from the change on, the provider got no request
    assert routing.hits >= len(before)  # each request read the document first: most of them a 304
    refreshes = events(tmp_path, "routing_refresh")
    assert [e["outcome"] for e in refreshes if e["outcome"] in ("read", "changed")] == ["read", "changed"]
    security = next(r for r in result["reviewers"] if r["name"] == "security")
    assert security["status"] == "failed" and "provider disabled by the routing document" in security["error"]
    assert code == 0, err  # the rest of the panel answered: the review stands, the failure is listed


@pytest.mark.waits
def test_a_model_disabled_during_the_review_is_skipped_along_its_failback_chain(
    tmp_path: Path, provider: FakeProviderServer, routing: RoutingServer
) -> None:
    changed_at = slow_reviewer(provider, routing, {"disabled_models": ["SlowGW:sec"]})

    code, result, err = review(tmp_path, provider, routing, '[failback]\n"slowgw:sec" = "slowgw:sec-old"\n')

    [(changed, _)] = changed_at
    assert [r for r in provider.requests_for("sec") if r.received_at >= changed] == []
    assert len(provider.requests_for("sec-old")) == 1  # the same provider's older model took over
    security = next(r for r in result["reviewers"] if r["name"] == "security")
    assert security["status"] == "ok", security
    [failback] = [e for e in events(tmp_path, "model_failback") if e["from_model"] == "slowgw:sec"]
    assert failback["to_model"] == "slowgw:sec-old" and failback["reason"] == "model disabled by the routing document"
    assert code == 0, err


@pytest.mark.waits
def test_the_kill_switch_turned_on_during_the_review_stops_it_as_partial(
    tmp_path: Path, provider: FakeProviderServer, routing: RoutingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_config, "REFRESH_INTERVAL_S", 0.25)
    changed_at = slow_reviewer(provider, routing, {"kill_switch": True, "reason": "provider incident"})

    _, result, err = review(tmp_path, provider, routing)

    [(changed, _)] = changed_at
    late = [r.received_at - changed for r in provider.requests if r.received_at >= changed]
    assert routing.not_modified >= 1  # re-reading an unchanged document cost a 304
    assert late == []  # no model of any provider is called once the switch is on
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


async def test_concurrent_requests_share_one_re_read_that_started_after_them(routing: RoutingServer) -> None:
    routing.body = json.dumps({"disabled_providers": ["openai"]}).encode()
    changes: list[remote_config.Routing] = []
    watch = remote_config.RoutingWatch(routing.url, warn=lambda _: None, on_event=lambda *_a, **_k: None)
    watch.on_change = changes.append
    try:
        await watch.sync()
        hits = routing.hits
        waits = []
        for _ in range(30):  # one request at a time, the document unchanged: one 304 each
            began = time.perf_counter()
            await watch.sync()
            waits.append(time.perf_counter() - began)
        assert routing.hits == hits + 30 and routing.not_modified == 30
        print(f"\nwaiting for an unchanged routing document: median {statistics.median(waits) * 1000:.2f} ms")

        hits = routing.hits
        await asyncio.gather(*(watch.sync() for _ in range(20)))  # twenty requests at once share one re-read
        assert routing.hits == hits + 1

        routing.body = json.dumps({"disabled_models": ["openai:gpt-5"]}).encode()
        await watch.sync()  # the next request sees the change before it goes out
        assert [c.disabled_models for c in changes] == [frozenset(), frozenset({"openai:gpt-5"})]
        assert watch.routing is not None and watch.routing.disabled_models == {"openai:gpt-5"}
    finally:
        await watch.aclose()


async def test_a_document_server_that_stops_answering_costs_a_request_nothing_after_one_timeout(
    routing: RoutingServer,
) -> None:
    warnings: list[str] = []
    watch = remote_config.RoutingWatch(
        routing.url, warn=warnings.append, on_event=lambda *_a, **_k: None, timeout_s=0.3
    )
    try:
        await watch.sync()
        routing.hang_s = 30.0  # silent until it stops, 30 s at most
        began = time.perf_counter()
        await watch.sync()  # waits up to the fetch timeout once
        first = time.perf_counter() - began
        hits = routing.hits
        for _ in range(10):
            await watch.sync()  # then the last good document stands until the interval re-reads it
        asked = routing.hits - hits
    finally:
        routing.hang_s = 0.0
        await watch.aclose()
    assert 0.25 <= first < limit(0.3, hung_s=30)  # the fetch timeout, not the 30 s silence
    assert asked == 0  # the ten requests after it waited on no fetch (counted, not timed)
    assert warnings == ["remote config refresh failed (no answer within 0.3s); keeping the last document read"]
    assert watch.note() == (
        "the routing document could not be re-read during the review (no answer within 0.3s; once): "
        "the last document read was used"
    )


def test_a_re_read_that_fails_during_the_review_is_one_warning_and_one_note(
    tmp_path: Path, provider: FakeProviderServer, routing: RoutingServer
) -> None:
    routing.body = json.dumps({"disabled_providers": ["nobody"]}).encode()

    def source(index: int, _model: str | None) -> Reply:
        if index == 1:
            routing.status = 503  # from the second request on, the document server fails
        if index < 4:
            return ToolCallReply([("read_file", {"path": PATH})])
        return ToolCallReply([("final_result", {"findings": []})])

    provider.script_source("sec", source)
    provider.script("*", [ToolCallReply([("final_result", {"findings": []})])])
    provider.script("big", [ToolCallReply([("final_result", {"decisions": []})])])

    code, result, err = review(tmp_path, provider, routing)

    assert code == 0, err
    assert len(provider.requests_for("sec")) == 5  # the review went on with the last good document
    assert err.count("remote config refresh failed (HTTP 503); keeping the last document read") == 1
    notes = [n for n in result["notes"] if "routing document" in n]
    assert len(notes) == 1 and notes[0].startswith(
        "the routing document could not be re-read during the review (HTTP 503;"
    )


async def test_the_service_reads_the_document_again_for_each_job(gl: FakeGitLab, routing: RoutingServer) -> None:  # noqa: F811
    from codejury.service.jobs import JobRunner, ReviewSetup
    from codejury.service.webhooks import ReviewRequest
    from codejury.testing.scripted import Final, Raw, ScriptedResolver

    env = {"CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN, "CODEJURY_GITLAB_URL": gl.url, "CODEJURY_RECORD_URL": ""}
    setup = ReviewSetup(
        model="scripted:reviewer", model_for=("coordinator=scripted:coordinator",),
        plugins=("codejury.testing.scripted",), remote_config=routing.url,
    )  # fmt: skip
    resolver = ScriptedResolver({"reviewer": [Final([B])], "coordinator": [Raw({"decisions": []})]})
    request = ReviewRequest("gitlab", f"{gl.url}/acme/widgets/-/merge_requests/7", "gitlab:acme/widgets!7")
    runner = JobRunner(setup, env)
    outcomes = []
    try:
        with resolver.active():
            for n, document in enumerate(({}, {"kill_switch": ["acme/widgets"], "reason": "paused"}, {})):
                if n:  # a new push each time: a head already reviewed is not reviewed again
                    gl.push(1, 7, files={"app.py": (OLD, NEW + f"# push {n}\n")})
                routing.body = json.dumps(document).encode()
                outcomes.append(await runner.run(request))
    finally:
        await runner.close()
    assert outcomes[0].startswith("reviewed and published")
    assert outcomes[1] == "not reviewed, published as such: the kill switch is on (paused)"
    assert outcomes[2].startswith("reviewed and published")  # switched off again: the next job reads that too
