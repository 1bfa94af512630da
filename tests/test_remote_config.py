"""Remote routing config: fetched from a real HTTP server on loopback during post_configure."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from codejury import remote_config
from codejury.config import ProviderSettings
from codejury.findings import Plan, Review
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings
from tests.fakes.scripted import Final, Raw

PATH = "app/auth/users.py"


class RoutingServer:
    """Serves one body at /routing.json (or hangs, or answers an error status)."""

    def __init__(self) -> None:
        self.body = b"{}"
        self.status = 200
        self.hang_s = 0.0
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.hits += 1
                if outer.hang_s:
                    time.sleep(outer.hang_s)
                self.send_response(outer.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/routing.json"

    def __enter__(self) -> RoutingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[RoutingServer]:
    with RoutingServer() as srv:
        yield srv


async def plan_with(tmp_path: Path, url: str, **settings: object) -> tuple[Plan, list[str]]:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    warnings: list[str] = []
    result, _, _ = await run_review(
        change, {}, dry_run=True, settings=scripted_settings(remote_config=url, **settings), warnings=warnings
    )
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
    server.hang_s = 1.0
    started = time.monotonic()
    _, warnings = await plan_with(tmp_path / "slow", server.url)
    assert time.monotonic() - started < 1.0
    assert len(warnings) == 1 and "no answer within 0.2s" in warnings[0]
    _, warnings = await plan_with(tmp_path / "closed", "http://127.0.0.1:9/routing.json")
    assert len(warnings) == 1 and "unavailable" in warnings[0]
