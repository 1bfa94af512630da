"""``codejury review --url`` sends the forge token only to the configured forge.

A URL on another host is one line naming the setting to add, exit 2, and the host it names (a
capture server on loopback recording every request) receives nothing: not the token, not a
single request. Once the setting names that host, the token goes there, and only there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.conftest import run_codejury
from tests.service.test_forge_hosts import CaptureServer

GITLAB_TOKEN = "glpat-cli-bot-0123456789"
GITHUB_TOKEN = "ghp_cli_bot_0123456789"
ENV = {"CODEJURY_GITLAB_TOKEN": GITLAB_TOKEN, "CODEJURY_GITHUB_TOKEN": GITHUB_TOKEN}


@pytest.fixture
def capture() -> Iterator[CaptureServer]:
    with CaptureServer() as server:
        yield server


@pytest.mark.parametrize(
    ("path", "setting"),
    [("/acme/widgets/-/merge_requests/7", "CODEJURY_GITLAB_URL"), ("/octo/app/pull/7", "CODEJURY_GITHUB_URL")],
)
@pytest.mark.parametrize(
    "configured",
    [{}, {"CODEJURY_GITLAB_URL": "https://gitlab.example", "CODEJURY_GITHUB_URL": "https://github.example"}],
)
@pytest.mark.parametrize("publish", [(), ("--publish",)])
def test_a_url_on_another_host_is_one_line_and_that_host_hears_nothing(
    tmp_path: Path,
    capture: CaptureServer,
    path: str,
    setting: str,
    configured: dict[str, str],
    publish: tuple[str, ...],
) -> None:
    run = run_codejury(["review", "--url", capture.origin + path, *publish], cwd=tmp_path, env={**ENV, **configured})
    run.assert_one_line_error(2, setting, capture.origin, "not the configured")
    assert GITLAB_TOKEN not in run.stderr + run.stdout and GITHUB_TOKEN not in run.stderr + run.stdout
    assert capture.requests == []


@pytest.mark.parametrize(
    "url",
    [
        "https://gitlab.com@{host}/acme/widgets/-/merge_requests/7",
        "https://github.com:443@{host}/octo/app/pull/7",
    ],
)
def test_a_url_whose_user_info_names_the_configured_host_is_refused(
    tmp_path: Path, capture: CaptureServer, url: str
) -> None:
    run = run_codejury(
        ["review", "--url", url.format(host=capture.origin.removeprefix("http://"))], cwd=tmp_path, env=ENV
    )
    run.assert_one_line_error(2, "user info")
    assert capture.requests == []


def test_the_configured_host_gets_the_token_and_no_other_header_carries_it(
    tmp_path: Path, capture: CaptureServer
) -> None:
    env = {**ENV, "CODEJURY_GITLAB_URL": capture.origin}
    run = run_codejury(["review", "--url", f"{capture.origin}/acme/widgets/-/merge_requests/7"], cwd=tmp_path, env=env)
    assert run.rc != 0  # the capture server is no GitLab: the review stops, but it was asked
    assert capture.requests and all(r[2].get("private-token") == GITLAB_TOKEN for r in capture.requests)
    assert all(path.startswith("/api/v4/") for _, path, _ in capture.requests)
    assert all(GITHUB_TOKEN not in str(headers) for _, _, headers in capture.requests)
