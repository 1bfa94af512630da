"""Remote routing config: fetched from a real HTTP server on loopback during post_configure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from codejury_fakes.routing_server import RoutingServer

from codejury import remote_config
from codejury.config import ProviderSettings
from codejury.findings import Plan, Review
from codejury.testing.scripted import Final, Raw
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings
from tests.timing import FOREVER, bounded

PATH = "app/auth/users.py"


@pytest.fixture
def server() -> Iterator[RoutingServer]:
    with RoutingServer() as srv:
        yield srv


async def plan_with(tmp_path: Path, url: str, **settings: object) -> tuple[Plan, list[str]]:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    warnings: list[str] = []
    given = scripted_settings(**settings).model_copy(update={"remote_config": url})  # unvalidated: a hostile value too
    result, _, _ = await run_review(change, {}, dry_run=True, settings=given, warnings=warnings)
    assert isinstance(result, Plan)
    return result, warnings


async def test_remote_document_overrides_a_reviewer_model(tmp_path: Path, server: RoutingServer) -> None:
    server.body = json.dumps({"reviewers": {"security": "scripted:remote-security"}}).encode()
    plan, warnings = await plan_with(tmp_path, server.url)
    models = {r.name: r.model for r in plan.reviewers}
    assert models["security"] == "scripted:remote-security"
    assert models["performance"] == "scripted:performance"
    assert warnings == [] and server.hits == 1


async def test_a_disabled_provider_is_routed_around_along_the_failback_chain(
    tmp_path: Path, server: RoutingServer
) -> None:
    server.body = json.dumps(
        {
            "reviewers": {"security": "acme:big", "coordinator": "acme:big"},
            "disabled_providers": ["acme"],
            "failback": {"acme:big": None},
        }
    ).encode()
    acme = {"acme": ProviderSettings(base_url="http://127.0.0.1:1/v1", api_key_env="ACME_KEY")}
    plan, _ = await plan_with(tmp_path, server.url, providers=acme)
    assert {r.name: r.model for r in plan.reviewers}["security"] == "(no enabled model)"
    assert plan.coordinator_model == "(no enabled model)"


async def test_a_review_runs_on_the_remotely_chosen_model(tmp_path: Path, server: RoutingServer) -> None:
    server.body = json.dumps({"reviewers": {"security": "scripted:remote-security"}}).encode()
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    result, resolver, _ = await run_review(
        change,
        {"remote-security": [Final([])], "coordinator": [Raw({"decisions": []})]},
        settings=scripted_settings(remote_config=server.url),
    )
    assert isinstance(result, Review)
    assert next(r for r in result.reviewers if r.name == "security").model == "scripted:remote-security"
    assert resolver.models["remote-security"].calls == 1


@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        (b"{not json", 200, "remote config ignored"),
        (b'{"reviewers": {"security": 42}}', 200, "remote config ignored"),
        (b'{"surprise": true}', 200, "unknown key"),
        (b"{}", 503, "HTTP 503"),
    ],
)
async def test_a_bad_document_is_reported_once_and_local_config_wins(
    tmp_path: Path, server: RoutingServer, body: bytes, status: int, expected: str
) -> None:
    server.body, server.status = body, status
    plan, warnings = await plan_with(tmp_path, server.url)
    assert len(warnings) == 1 and expected in warnings[0] and "continuing with local config" in warnings[0]
    assert {r.name: r.model for r in plan.reviewers}["security"] == "scripted:security"


async def test_an_unreachable_or_slow_server_does_not_hold_the_review(
    tmp_path: Path, server: RoutingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_config, "FETCH_TIMEOUT_S", 0.2)
    server.hang_s = 30.0  # silent until it stops, 30 s at most
    with bounded(0.2, hung_s=30, what="planning"):
        _, warnings = await plan_with(tmp_path / "slow", server.url)
    assert len(warnings) == 1 and "no answer within 0.2s" in warnings[0]
    _, warnings = await plan_with(tmp_path / "closed", "http://127.0.0.1:9/routing.json")
    assert len(warnings) == 1 and "unavailable" in warnings[0]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/endless", "the document is larger than the 256 KB limit"),
        ("/big-length", "the document is 1,073,741,824 bytes, over the 256 KB limit"),
        ("/deep", "nested too deeply"),
        ("/loop", "more than 5 redirects"),
    ],
)
async def test_a_hostile_server_costs_one_warning_and_the_review_goes_on(
    server: RoutingServer, path: str, expected: str
) -> None:
    warnings: list[str] = []
    # each is refused on sight: without its check, the fetch would run to its 60 s deadline (or the server's end)
    with bounded(0, hung_s=60, what="the fetch"):
        routing = await remote_config.fetch_routing(server.origin + path, warn=warnings.append, timeout_s=60)
    assert routing is None
    assert len(warnings) == 1 and expected in warnings[0], warnings
    assert warnings[0].endswith("continuing with local config")


async def test_a_dripping_server_is_cut_off_by_the_whole_fetch_deadline(server: RoutingServer) -> None:
    warnings: list[str] = []
    with bounded(0.5, hung_s=FOREVER, what="the fetch"):  # each byte is quick; the whole never ends
        routing = await remote_config.fetch_routing(server.origin + "/drip", warn=warnings.append, timeout_s=0.5)
    assert routing is None
    assert warnings == ["remote config unavailable (no answer within 0.5s); continuing with local config"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"[1, 2]", "the document must be a JSON object"),
        (b'"reviewers"', "the document must be a JSON object"),
        (b"\xff\xfe{}", "not JSON"),
        (b"", "not JSON"),
    ],
)
async def test_a_body_that_is_not_a_routing_object_is_one_warning(
    server: RoutingServer, body: bytes, expected: str
) -> None:
    server.body = body
    warnings: list[str] = []
    assert await remote_config.fetch_routing(server.url, warn=warnings.append) is None
    assert len(warnings) == 1 and expected in warnings[0], warnings


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        (5, "remote_config must be an http(s) URL, got a int"),
        (["http://x"], "got a list"),
        ("ftp://example.invalid/r.json", "got a 'ftp' URL"),
        ("routing.json", "got a string that is not a URL"),
        ("http://[::1", "invalid URL"),
        ("http://127.0.0.1:99999/r.json", "invalid URL"),
        ("http:///r.json", "invalid URL"),
    ],
)
async def test_a_setting_that_is_not_a_usable_url_is_one_warning_without_a_request(
    setting: object, expected: str
) -> None:
    warnings: list[str] = []
    assert await remote_config.fetch_routing(setting, warn=warnings.append) is None
    assert len(warnings) == 1 and expected in warnings[0], warnings
    assert "example.invalid" not in warnings[0]  # a URL may carry a token: it is not echoed


async def test_remote_config_5_in_a_config_file_warns_and_plans(tmp_path: Path) -> None:
    plan, warnings = await plan_with(tmp_path, 5)  # type: ignore[arg-type]
    assert len(warnings) == 1 and "remote config ignored" in warnings[0]
    assert {r.name: r.model for r in plan.reviewers}["security"] == "scripted:security"
