"""A real HTTP server on 127.0.0.1 speaking OpenAI Chat Completions and Anthropic Messages.

Tests script replies per model and drive the real SDKs (through pydantic-ai) against it:

    with FakeProviderServer() as srv:
        srv.script("gpt-5", [ToolCallReply([("read_file", {"path": "a.py"})]), TextReply("done")])
        ...  # point OpenAIChatModel at srv.openai_base_url
        assert len(srv.requests) == 2

The server runs in a daemon thread, so sync and async tests can both use it. Every request is
recorded. ``_dispatch`` picks the reply and the vendor renderers turn it into a ``Wire``
(status, headers, body chunks, and how to send them); ``_write`` sends it. New fault kinds are
a new ``Reply`` variant plus a branch in ``provider_wire._render_fault`` and, when the sending
changes, a ``Wire`` field honoured by ``_write``.

Embeddings and reranking: ``serve_embeddings(model, dimensions=, latency_s=)`` and
``serve_rerank(model, latency_s=)`` answer ``/v1/embeddings`` and ``/v1/rerank`` for those models
with deterministic vectors and scores and a fixed latency (``embeddings_wire``); they are recorded
like every request but are not model requests (no script is consumed).

Faults: ``HangReply`` (nothing before the first byte), ``SlowDripReply``, ``DropReply``
(connection closed mid-body), ``MalformedReply`` and ``ErrorReply`` (with ``retry_after`` and
``code``). Scripting: ``script(model, replies)`` in order, ``script_source(model, source)``
for a callable ``(request index for the model, model) -> Reply`` such as ``RandomFaults``, and
``script_for_request(n, reply)`` to replace the reply of the n-th request overall.

    with FakeProviderServer() as srv:
        srv.script_source("*", RandomFaults(7, {"overloaded": 0.1, "hang": 0.05}, healthy))
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal
from urllib.parse import urlsplit

from codejury.errors import TestDoubleError
from codejury_fakes.embeddings_wire import EmbeddingsModel, RerankModel, answer_embeddings, answer_rerank
from codejury_fakes.loopback import LoopbackServer, QuietHandler
from codejury_fakes.provider_wire import (
    DropReply,
    ErrorReply,
    FaultMaker,
    HangReply,
    MalformedReply,
    RandomFaults,
    Reply,
    ReplySource,
    SlowDripReply,
    TextReply,
    TokenUsage,
    ToolCallReply,
    Wire,
    default_faults,
    render_anthropic,
    render_openai,
    truncated,
)

__all__ = [
    "DropReply",
    "ErrorReply",
    "FakeProviderServer",
    "FaultMaker",
    "HangReply",
    "MalformedReply",
    "RandomFaults",
    "RecordedRequest",
    "Reply",
    "ReplySource",
    "SlowDripReply",
    "TextReply",
    "TokenUsage",
    "ToolCallReply",
    "Wire",
    "default_faults",
    "truncated",
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
    received_at: float = 0.0
    """``time.monotonic()`` when the request arrived."""


class FakeProviderServer(LoopbackServer):
    """Scripted OpenAI- and Anthropic-format model server on a free loopback port."""

    thread_name = "fake-provider"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scripts: dict[str, list[Reply] | ReplySource] = {}
        self._cursor: dict[str, int] = {}
        self._per_model: dict[str | None, int] = {}
        self._by_request: dict[int, Reply] = {}
        self._routed = 0
        self._requests: list[RecordedRequest] = []
        self._served: list[tuple[RecordedRequest, Reply | None]] = []
        self._embeddings: dict[str, EmbeddingsModel] = {}
        self._rerankers: dict[str, RerankModel] = {}
        self._walkthroughs: list[Reply] = []
        self._walkthrough_requests: list[RecordedRequest] = []
        # ``stopping`` is set by stop(): hangs and drips wait on it, so no handler outlives the server for long.
        super().__init__(_make_handler(self))

    # -- addresses -------------------------------------------------------------------------
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
    def serve_embeddings(self, model: str, *, dimensions: int = 64, latency_s: float = 0.0) -> None:
        """Answer ``/v1/embeddings`` for ``model``: deterministic unit vectors, each request after ``latency_s``."""
        with self._lock:
            self._embeddings[model] = EmbeddingsModel(dimensions, latency_s)

    def serve_rerank(self, model: str, *, latency_s: float = 0.0) -> None:
        """Answer ``/v1/rerank`` for ``model``: scores by shared words, each request after ``latency_s``."""
        with self._lock:
            self._rerankers[model] = RerankModel(latency_s)

    def script(self, model: str, replies: list[Reply]) -> None:
        """Replies for ``model`` in order (``'*'`` for any model); the last one repeats."""
        if not replies:
            raise ValueError("script needs at least one reply")
        with self._lock:
            self._scripts[model] = list(replies)
            self._cursor[model] = 0

    def script_source(self, model: str, source: ReplySource) -> None:
        """Replies for ``model`` (``'*'`` for any) from ``source(index, model)``.

        ``index`` counts the earlier requests naming that model (0-based), whichever script
        served them, so a seeded source such as ``RandomFaults`` sees each model's own order.
        """
        with self._lock:
            self._scripts[model] = source
            self._cursor[model] = 0

    def script_for_request(self, n: int, reply: Reply) -> None:
        """Serve ``reply`` to the ``n``-th model request overall (0-based), whatever its model.

        It is inserted: the scripts' own order does not advance for that request.
        """
        with self._lock:
            self._by_request[n] = reply

    def script_walkthrough(self, replies: list[Reply]) -> None:
        """Replies to a review's walkthrough requests, in order (the last repeats), whatever their model."""
        if not replies:
            raise ValueError("script_walkthrough needs at least one reply")
        with self._lock:
            self._walkthroughs = list(replies)

    @property
    def walkthrough_requests(self) -> list[RecordedRequest]:
        """The walkthrough requests received (kept apart from ``requests``), oldest first."""
        with self._lock:
            return list(self._walkthrough_requests)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far but the walkthroughs' (``walkthrough_requests``), oldest first."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, model: str) -> list[RecordedRequest]:
        """The requests that named ``model``."""
        return [r for r in self.requests if r.model == model]

    @property
    def served(self) -> list[tuple[RecordedRequest, Reply | None]]:
        """Each model request with the reply chosen for it (None: nothing scripted), oldest first."""
        with self._lock:
            return list(self._served)

    # -- the one dispatch point ------------------------------------------------------------
    def _next_reply(self, model: str | None) -> Reply | None:
        with self._lock:
            per_model = self._per_model.get(model, 0)
            self._per_model[model] = per_model + 1
            overall = self._routed
            self._routed += 1
            if overall in self._by_request:
                return self._by_request.pop(overall)
            key = model if model is not None and model in self._scripts else "*"
            replies = self._scripts.get(key)
            if replies is None:
                return None
            index = self._cursor[key]
            self._cursor[key] = index + 1
            if isinstance(replies, list):
                return replies[min(index, len(replies) - 1)]
        # A source runs outside the lock: it may look at the server.
        return replies(per_model, model)

    def _dispatch(self, request: RecordedRequest) -> Wire:
        """Record the request and decide what goes back on the wire."""
        with self._lock:
            self._requests.append(request)
        endpoint = request.path.rstrip("/")
        if request.method == "POST" and endpoint.endswith(("/v1/embeddings", "/v1/rerank")):
            with self._lock:
                embeddings, rerankers = dict(self._embeddings), dict(self._rerankers)
            if endpoint.endswith("/embeddings"):
                status, body, wait = answer_embeddings(embeddings, request.headers, request.body)
            else:
                status, body, wait = answer_rerank(rerankers, request.headers, request.body)
            return replace(Wire.json(status, body), hang_s=wait)
        if request.vendor is None:
            return Wire.json(404, {"error": {"message": f"no route for {request.path}", "type": "not_found"}})
        if (walkthrough := _walkthrough_output(request.body)) is not None:
            return self._walkthrough(request, walkthrough)
        reply = self._next_reply(request.model)
        with self._lock:
            self._served.append((request, reply))
        render = render_openai if request.vendor == "openai" else render_anthropic
        if reply is None:
            missing = ErrorReply(500, message=f"no scripted reply for model {request.model!r}")
            return render(missing, request.model or "", stream=False)
        return render(reply, request.model or "", stream=request.stream)

    def _walkthrough(self, request: RecordedRequest, as_tool: bool) -> Wire:
        """A review's walkthrough request: answered from ``script_walkthrough``, or with an empty draft, so the
        model scripts of a test serve its reviewers and coordinator alone."""
        from codejury.agents.walkthrough import OUTPUT_NAME

        with self._lock:
            self._requests.remove(request)
            self._walkthrough_requests.append(request)
            index = len(self._walkthrough_requests) - 1
            scripted = self._walkthroughs[min(index, len(self._walkthroughs) - 1)] if self._walkthroughs else None
        empty = {"summary": "", "groups": [], "diagram": ""}
        reply = scripted or (ToolCallReply([(OUTPUT_NAME, empty)]) if as_tool else TextReply(json.dumps(empty)))
        render = render_openai if request.vendor == "openai" else render_anthropic
        return render(reply, request.model or "", stream=request.stream)


def _walkthrough_output(body: Any) -> bool | None:
    """Whether a model request asks for a review's walkthrough: True as a tool call, False as JSON text (a
    schema-constrained answer), None when it is another request."""
    from codejury.agents.walkthrough import OUTPUT_NAME

    if not isinstance(body, dict):
        return None
    for tool in body.get("tools") or ():
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        if isinstance(function, dict) and function.get("name") == OUTPUT_NAME:
            return True
    schema = (
        (body.get("response_format") or {}).get("json_schema")
        if isinstance(body.get("response_format"), dict)
        else None
    )
    if isinstance(schema, dict) and schema.get("name") == OUTPUT_NAME:
        return False
    return None


def _route(method: str, path: str) -> Vendor | None:
    if method == "POST" and path.rstrip("/").endswith("/chat/completions"):
        return "openai"
    if method == "POST" and path.rstrip("/").endswith("/v1/messages"):
        return "anthropic"
    return None


def _make_handler(server: FakeProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_POST(self) -> None:
            self._handle()

        def do_GET(self) -> None:
            self._handle()

        def _handle(self) -> None:
            raw = self.read_body()
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
                received_at=time.monotonic(),
            )
            wire = server._dispatch(request)
            try:
                self._write(wire)
            except (OSError, _Stopped):
                # The client gave up (e.g. its timeout ran out during a hang), or the server stops.
                self._abort()

        def _write(self, wire: Wire) -> None:
            if wire.hang_s > 0:
                self._pause(wire.hang_s)
            if wire.silent:
                self._abort()
                return
            self.send_response(wire.status)
            for name, value in wire.headers.items():
                self.send_header(name, value)
            budget = wire.drop_after
            chunks = [c for c in wire.chunks if c]
            if wire.streamed:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in chunks:
                    if budget is not None:
                        chunk, budget = chunk[:budget], budget - len(chunk[:budget])
                    if wire.drip_s > 0:
                        self._pause(wire.drip_s)
                    if chunk:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    if budget == 0:
                        self._abort()
                        return
                if budget is not None:
                    self._abort()
                    return
                self.wfile.write(b"0\r\n\r\n")
            else:
                data = b"".join(chunks)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if budget is not None:
                    chunks = _cut(chunks, budget)
                for chunk in chunks:
                    if wire.drip_s > 0:
                        self._pause(wire.drip_s)
                    self.wfile.write(chunk)
                    self.wfile.flush()
                if budget is not None:
                    self._abort()
                    return
            self.wfile.flush()

        def _pause(self, seconds: float) -> None:
            if server.stopping.wait(seconds):
                raise _Stopped

        def _abort(self) -> None:
            """Close the connection now, whatever was (not) sent: the client sees it end early."""
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.wfile.flush()
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    return Handler


class _Stopped(TestDoubleError):
    """The server stopped while a handler was pausing."""


def _cut(chunks: list[bytes], budget: int) -> list[bytes]:
    """The first ``budget`` bytes of ``chunks``, chunk boundaries kept."""
    out = []
    for chunk in chunks:
        if budget <= 0:
            break
        out.append(chunk[:budget])
        budget -= len(out[-1])
    return out
