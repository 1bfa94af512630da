"""A real HTTP server on 127.0.0.1 speaking OpenAI Chat Completions and Anthropic Messages.

Tests script replies per model and drive the real SDKs (through pydantic-ai) against it:

    with FakeProviderServer() as srv:
        srv.script("gpt-5", [ToolCallReply([("read_file", {"path": "a.py"})]), TextReply("done")])
        ...  # point OpenAIChatModel at srv.openai_base_url
        assert len(srv.requests) == 2

The server runs in a daemon thread, so sync and async tests can both use it. Every request is
recorded. ``_dispatch`` picks the reply and the vendor renderers turn it into a ``Wire``
(status, headers, body chunks); ``_write`` sends it. New fault kinds (hang before the first
byte, slow drip, dropped connection, malformed JSON) are a new ``Reply`` variant plus a branch
in ``_render`` or ``_write``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

from tests.fakes.provider_wire import (
    ErrorReply,
    Reply,
    TextReply,
    TokenUsage,
    ToolCallReply,
    Wire,
    render_anthropic,
    render_openai,
)

__all__ = [
    "ErrorReply",
    "FakeProviderServer",
    "RecordedRequest",
    "Reply",
    "TextReply",
    "TokenUsage",
    "ToolCallReply",
    "Wire",
]

Vendor = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request the server received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    vendor: Vendor | None
    model: str | None
    stream: bool


class FakeProviderServer:
    """Scripted OpenAI- and Anthropic-format model server on a free loopback port."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scripts: dict[str, list[Reply]] = {}
        self._cursor: dict[str, int] = {}
        self._requests: list[RecordedRequest] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeProviderServer:
        """Serve in a daemon thread."""
        # A short poll interval: shutdown() waits up to one interval, once per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name="fake-provider", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port (safe when never started, and when called twice)."""
        # shutdown() waits for serve_forever() to notice: called without a running loop it blocks forever.
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- addresses -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def openai_base_url(self) -> str:
        """Base URL for the OpenAI SDK (includes ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for the Anthropic SDK (it appends ``/v1/messages`` itself)."""
        return f"http://127.0.0.1:{self.port}"

    base_url = openai_base_url

    # -- scripting and inspection ----------------------------------------------------------
    def script(self, model: str, replies: list[Reply]) -> None:
        """Replies for ``model`` in order (``'*'`` for any model); the last one repeats."""
        if not replies:
            raise ValueError("script needs at least one reply")
        with self._lock:
            self._scripts[model] = list(replies)
            self._cursor[model] = 0

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, model: str) -> list[RecordedRequest]:
        """The requests that named ``model``."""
        return [r for r in self.requests if r.model == model]

    # -- the one dispatch point ------------------------------------------------------------
    def _next_reply(self, model: str | None) -> Reply | None:
        with self._lock:
            key = model if model in self._scripts else "*"
            replies = self._scripts.get(key)
            if replies is None:
                return None
            index = self._cursor[key]
            self._cursor[key] = index + 1
            return replies[min(index, len(replies) - 1)]

    def _dispatch(self, request: RecordedRequest) -> Wire:
        """Record the request and decide what goes back on the wire."""
        with self._lock:
            self._requests.append(request)
        if request.vendor is None:
            return Wire.json(404, {"error": {"message": f"no route for {request.path}", "type": "not_found"}})
        reply = self._next_reply(request.model)
        render = render_openai if request.vendor == "openai" else render_anthropic
        if reply is None:
            missing = ErrorReply(500, message=f"no scripted reply for model {request.model!r}")
            return render(missing, request.model or "", stream=False)
        return render(reply, request.model or "", stream=request.stream)


def _route(method: str, path: str) -> Vendor | None:
    if method == "POST" and path.rstrip("/").endswith("/chat/completions"):
        return "openai"
    if method == "POST" and path.rstrip("/").endswith("/v1/messages"):
        return "anthropic"
    return None


def _make_handler(server: FakeProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self._handle()

        def do_GET(self) -> None:
            self._handle()

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output quiet."""

        def _handle(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            parts = urlsplit(self.path)
            payload = body if isinstance(body, dict) else {}
            model = payload.get("model")
            request = RecordedRequest(
                method=self.command,
                path=parts.path,
                query=parts.query,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                vendor=_route(self.command, parts.path),
                model=model if isinstance(model, str) else None,
                stream=bool(payload.get("stream")),
            )
            self._write(server._dispatch(request))

        def _write(self, wire: Wire) -> None:
            self.send_response(wire.status)
            for name, value in wire.headers.items():
                self.send_header(name, value)
            if wire.streamed:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in _iter_nonempty(wire.chunks):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            else:
                data = b"".join(wire.chunks)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            self.wfile.flush()

    return Handler


def _iter_nonempty(chunks: list[bytes]) -> Iterator[bytes]:
    return (c for c in chunks if c)
