"""``remote_config`` and ``instructions_url``: https (http to loopback only), same-host redirects, no token.

A redirect to another host is refused with one warning and that host (a capture server on
loopback, recording every request) receives nothing; a redirect on the same host is followed;
neither request carries a forge token or a provider key, whatever the environment holds.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from codejury_fakes.loopback import LoopbackServer, QuietHandler

from codejury import remote_config
from codejury.reviewers.instructions import fetch_template
from tests.service.test_forge_hosts import CaptureServer

ROUTING = b'{"disabled_providers": ["openai"]}'
TEMPLATE = b"Check every migration for a rollback.\n"
SECRETS = {
    "CODEJURY_GITLAB_TOKEN": "glpat-doc-0123456789",
    "CODEJURY_GITHUB_TOKEN": "ghp_doc_0123456789",
    "GITHUB_TOKEN": "ghs_doc_0123456789",
    "OPENAI_API_KEY": "sk-doc-0123456789",
}


class DocumentServer(LoopbackServer):
    """Serves ``/doc`` (``body`` as ``content_type``) and redirects each path of ``redirects`` (302)."""

    thread_name = "document-server"

    def __init__(self, body: bytes, content_type: str) -> None:
        self.redirects: dict[str, str] = {}
        self.hits: list[str] = []
        outer = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                outer.hits.append(self.path)
                target = outer.redirects.get(self.path)
                if target is None:
                    self.send_body(200, content_type, body)
                    return
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()

        super().__init__(Handler)


@pytest.fixture
def capture(monkeypatch: pytest.MonkeyPatch) -> Iterator[CaptureServer]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    with CaptureServer() as server:
        yield server


async def test_a_routing_document_redirected_to_another_host_is_refused(capture: CaptureServer) -> None:
    with DocumentServer(ROUTING, "application/json") as docs:
        docs.redirects["/routing.json"] = capture.origin + "/routing.json"
        warnings: list[str] = []
        assert await remote_config.fetch_routing(docs.origin + "/routing.json", warn=warnings.append) is None
    assert len(warnings) == 1 and "redirected to another host" in warnings[0], warnings
    assert capture.origin not in warnings[0]
    assert capture.requests == []


async def test_an_instructions_template_redirected_to_another_host_is_refused(capture: CaptureServer) -> None:
    with DocumentServer(TEMPLATE, "text/markdown") as docs:
        docs.redirects["/t.md"] = capture.origin + "/t.md"
        warnings: list[str] = []
        assert await fetch_template(docs.origin + "/t.md", warn=warnings.append) is None
    assert len(warnings) == 1 and "redirected to another host" in warnings[0], warnings
    assert capture.requests == []


async def test_a_redirect_on_the_same_host_is_followed_and_no_request_carries_a_secret(
    capture: CaptureServer,
) -> None:
    with DocumentServer(ROUTING, "application/json") as docs:
        docs.redirects["/moved"] = "/doc"
        routing = await remote_config.fetch_routing(docs.origin + "/moved", warn=pytest.fail)
        assert docs.hits == ["/moved", "/doc"]
    assert routing is not None and routing.disabled_providers == frozenset({"openai"})
    assert await fetch_template(capture.origin + "/t.md", warn=pytest.fail) == "{}"
    assert await remote_config.fetch_routing(capture.origin + "/r.json", warn=pytest.fail) is not None
    [(_, _, template_headers), (_, _, routing_headers)] = capture.requests
    for headers in (template_headers, routing_headers):
        assert "authorization" not in headers and "private-token" not in headers
        assert not any(secret in str(headers) for secret in SECRETS.values())


@pytest.mark.parametrize("url", ["http://routing.example.test/r.json", "http://10.0.0.8/r.json"])
async def test_plain_http_to_another_machine_is_refused_before_any_request(url: str) -> None:
    warnings: list[str] = []
    assert await remote_config.fetch_routing(url, warn=warnings.append) is None
    assert await fetch_template(url, warn=warnings.append) is None
    assert len(warnings) == 2 and all("use https" in w for w in warnings), warnings
    assert all(url not in w for w in warnings)
