"""Who may open the service's dashboard (it shows code, findings and costs), and the headers it is served with."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import Connection

from codejury.errors import ConfigError
from codejury.record.model import ReviewRecord
from codejury.service.app import ServiceState
from codejury.service.commands import ServiceOptions, build_service
from tests.service.test_app import client, state
from tests.service.test_local_reviews import serving

__all__ = ["client", "state"]  # the fixtures of the service's route tests
TOKEN = "dashboard-token-0123456789"
RECORD = ReviewRecord(tier="lite", verdict="requested_changes", repository="acme/widgets", change_id="!7")
PAGES = ("/dashboard", f"/dashboard/reviews/{RECORD.uid}")


@pytest.fixture
def reads(state: ServiceState, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A review in the service's store, and every read of the store from then on."""
    store = state.store
    assert store is not None
    store.write(RECORD)
    seen: list[str] = []
    real = store.connect

    def connect() -> AbstractContextManager[Connection]:
        seen.append("connect")
        return real()

    monkeypatch.setattr(store, "connect", connect)
    yield seen


def basic(password: str, user: str = "reviewer") -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": f"Token {TOKEN}"},
        basic("wrong-token"),
        {"X-Auth-Request-User": "mallory"},  # no proxy is configured: the header means nothing
    ],
    ids=["nothing", "wrong bearer", "other scheme", "wrong basic", "unconfigured proxy header"],
)
async def test_without_credentials_the_dashboard_is_401_and_the_store_is_not_read(
    client: httpx2.AsyncClient, state: ServiceState, reads: list[str], headers: dict[str, str]
) -> None:
    state.dashboard_token = TOKEN
    for path in PAGES:
        answer = await client.get(path, headers=headers)
        assert answer.status_code == 401, path
        assert answer.headers["WWW-Authenticate"].startswith("Basic realm=")  # a browser asks for the token
        assert "acme/widgets" not in answer.text and TOKEN not in answer.text
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert reads == []


async def test_with_no_access_setting_the_dashboard_is_closed_to_everyone(
    client: httpx2.AsyncClient, state: ServiceState, reads: list[str]
) -> None:
    note = state.dashboard_note()
    assert note is not None and "CODEJURY_DASHBOARD_TOKEN" in note and "CODEJURY_DASHBOARD_PUBLIC" in note
    for path in PAGES:
        for headers in ({}, {"Authorization": "Bearer "}, basic(""), {"X-Forwarded-User": "alice"}):
            assert (await client.get(path, headers=headers)).status_code == 401
    assert reads == []


@pytest.mark.parametrize("credentials", [{"Authorization": f"Bearer {TOKEN}"}, basic(TOKEN)], ids=["bearer", "basic"])
async def test_with_the_token_the_dashboard_is_served_with_its_security_headers(
    client: httpx2.AsyncClient, state: ServiceState, reads: list[str], credentials: dict[str, str]
) -> None:
    state.dashboard_token = TOKEN
    assert state.dashboard_note() is None
    for path in PAGES:
        answer = await client.get(path, headers=credentials)
        assert answer.status_code == 200 and "acme/widgets" in answer.text, path
        [meta] = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', answer.text)
        assert answer.headers["Content-Security-Policy"] == f"{meta}; frame-ancestors 'none'"
        assert "default-src 'none'" in meta and "script-src" not in meta
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["Referrer-Policy"] == "no-referrer"
        assert answer.headers["Cache-Control"] == "no-store"
    assert reads


async def test_behind_an_authentication_proxy_its_header_opens_the_dashboard(
    client: httpx2.AsyncClient, state: ServiceState, reads: list[str]
) -> None:
    state.dashboard_user_header = "X-Auth-Request-User"
    for path in PAGES:
        assert (await client.get(path)).status_code == 401
        assert (await client.get(path, headers={"X-Auth-Request-User": "  "})).status_code == 401
    assert reads == []
    for path in PAGES:
        answer = await client.get(path, headers={"x-auth-request-user": "alice@example.org"})
        assert answer.status_code == 200 and "acme/widgets" in answer.text
        assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]


async def test_the_public_setting_opens_the_dashboard_to_anyone(
    client: httpx2.AsyncClient, state: ServiceState, reads: list[str]
) -> None:
    state.dashboard_public = True
    for path in PAGES:
        answer = await client.get(path)
        assert answer.status_code == 200 and "acme/widgets" in answer.text
        assert answer.headers["Referrer-Policy"] == "no-referrer"
    assert (await client.get("/dashboard/reviews/no-such-uid")).status_code == 404


def opts(tmp_path: Path, *, env: dict[str, str] | None = None, **settings: Any) -> ServiceOptions:
    store = {"CODEJURY_RECORD_URL": f"sqlite:///{tmp_path / 'reviews.sqlite3'}"}
    return ServiceOptions(env=store | (env or {}), **settings)


async def test_codejury_serve_takes_the_dashboard_settings(tmp_path: Path) -> None:
    said: list[str] = []
    async with serving(build_service(opts(tmp_path), say=said.append)) as base, httpx2.AsyncClient(base_url=base) as c:
        assert (await c.get("/dashboard")).status_code == 401
    assert any("/dashboard answers 401" in line for line in said)

    said.clear()
    settings = opts(tmp_path, env={"CODEJURY_DASHBOARD_TOKEN": TOKEN}, dashboard_user_header="X-Forwarded-User")
    async with serving(build_service(settings, say=said.append)) as base, httpx2.AsyncClient(base_url=base) as c:
        assert (await c.get("/dashboard")).status_code == 401
        assert (await c.get("/dashboard", headers={"Authorization": f"Bearer {TOKEN}"})).status_code == 200
        assert (await c.get("/dashboard", headers={"X-Forwarded-User": "alice"})).status_code == 200
    assert not any("/dashboard" in line for line in said)
    assert all(TOKEN not in line for line in said)

    public = opts(tmp_path, dashboard_public=True)
    async with serving(build_service(public, say=said.append)) as base, httpx2.AsyncClient(base_url=base) as c:
        assert (await c.get("/dashboard")).status_code == 200


@pytest.mark.parametrize("header", ["Authorization", "Cookie", "User-Agent", "X Forwarded User", "X-User:"])
def test_a_proxy_header_that_browsers_send_themselves_is_refused_at_start_up(tmp_path: Path, header: str) -> None:
    with pytest.raises(ConfigError, match="--dashboard-user-header"):
        build_service(opts(tmp_path, dashboard_user_header=header))
