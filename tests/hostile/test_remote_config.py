"""Class 5: a remote routing document that fails in any way is one warning; the review goes on.

codejury runs as a user runs it (``--remote-config URL``, ``--dry-run`` so no model is needed)
against a loopback server that misbehaves: each case must exit 0 with its plan on stdout, one
``remote config`` warning line on stderr, no traceback, under 500 MB and within its bound.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from codejury_fakes.routing_server import RoutingServer

from tests.hostile.conftest import Run, run_codejury

DIFF = b"--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
WALL_S = 40.0


@pytest.fixture
def server() -> Iterator[RoutingServer]:
    with RoutingServer() as srv:
        yield srv


def plan(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> Run:
    diff = tmp_path / "change.diff"
    diff.write_bytes(DIFF)
    return run_codejury(["review", "--diff", str(diff), "--dry-run", "--format", "json", *extra], cwd=tmp_path, env=env)


def assert_one_warning_and_a_plan(run: Run, *needles: str) -> None:
    assert run.rc == 0, run.stderr
    assert "Traceback" not in run.stderr
    warnings = [line for line in run.stderr.splitlines() if "remote config" in line]
    assert len(warnings) == 1, run.stderr
    assert warnings[0].endswith("continuing with local config")
    for needle in needles:
        assert needle in warnings[0], warnings
    assert json.loads(run.stdout)["reviewers"], run.stdout


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        ("/endless", "larger than the 256 KB limit"),
        ("/deep", "nested too deeply"),
        ("/loop", "more than 5 redirects"),
        ("/big-length", "over the 256 KB limit"),
    ],
)
def test_a_misbehaving_routing_server(tmp_path: Path, server: RoutingServer, path: str, needle: str) -> None:
    run = plan(tmp_path, "--remote-config", server.origin + path)
    assert_one_warning_and_a_plan(run, needle)
    run.assert_bounded(WALL_S)


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [(b"<html>maintenance</html>", 200, "not JSON"), (b"[]", 200, "JSON object"), (b"{}", 500, "HTTP 500")],
)
def test_a_body_that_is_not_a_routing_document(
    tmp_path: Path, server: RoutingServer, body: bytes, status: int, needle: str
) -> None:
    server.body, server.status = body, status
    run = plan(tmp_path, "--remote-config", server.url)
    assert_one_warning_and_a_plan(run, needle)
    run.assert_bounded(WALL_S)


@pytest.mark.waits
def test_a_server_slower_than_the_timeout(tmp_path: Path, server: RoutingServer) -> None:
    server.hang_s = 30.0
    run = plan(tmp_path, "--remote-config", server.url)
    assert_one_warning_and_a_plan(run, "no answer within 5s")
    run.assert_bounded(WALL_S)


@pytest.mark.waits
def test_a_server_that_drips_forever(tmp_path: Path, server: RoutingServer) -> None:
    run = plan(tmp_path, env={"CODEJURY_REMOTE_CONFIG": server.origin + "/drip"})
    assert_one_warning_and_a_plan(run, "no answer within 5s")
    run.assert_bounded(WALL_S)


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999/r.json", "ftp://127.0.0.1/r.json"])
def test_an_unusable_url(tmp_path: Path, url: str) -> None:
    run = plan(tmp_path, "--remote-config", url)
    assert_one_warning_and_a_plan(run)
    run.assert_bounded(WALL_S)


def test_remote_config_5_in_a_config_file(tmp_path: Path) -> None:
    """A number where a URL belongs: never a crashed plugin.

    The review goes on with one warning; should config validation refuse the value itself first,
    that is one error line naming the key (exit 2), also acceptable here.
    """
    config = tmp_path / "codejury.toml"
    config.write_text("remote_config = 5\n")
    run = plan(tmp_path, "--config", str(config))
    if run.rc == 2:
        run.assert_one_line_error(2, "remote_config")
    else:
        assert_one_warning_and_a_plan(run, "must be an http(s) URL")
    run.assert_bounded(WALL_S)
