"""What the cloud fakes (Bedrock, Vertex AI) share: the raw request in, the scripted reply out.

A ``CloudServer`` is a ``FakeProviderServer`` (same ``script`` / ``script_source`` / ``requests`` / faults) whose
handler hands the undecoded request to ``answer``: a cloud checks what its real service checks (a signature over
the exact bytes, a bearer token, the project in the path) before it reads the body. What it refuses is kept in
``refusals`` and never consumes a script; what it accepts goes through ``scripted``, which records the request and
picks its reply (a review's walkthrough request gets an empty draft, as ``FakeProviderServer`` answers it).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from codejury_fakes.provider_server import FakeProviderServer, RecordedRequest, _make_handler, _Stopped
from codejury_fakes.provider_wire import ErrorReply, Reply, TextReply, ToolCallReply, Wire


@dataclass(frozen=True)
class Refusal:
    """A request the fake refused before any model saw it: the status and the cloud's error code."""

    path: str
    status: int
    code: str


@dataclass(frozen=True)
class RawRequest:
    """One HTTP request as it came: method, path (still percent-encoded), query, lowercased headers, body bytes."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


class CloudServer(FakeProviderServer):
    """A fake cloud model service: ``answer`` turns each raw request into what goes back."""

    thread_name = "fake-cloud"

    def __init__(self) -> None:
        super().__init__()
        self._refusals: list[Refusal] = []
        self._refusal_lock = threading.Lock()
        self._httpd.RequestHandlerClass = _raw_handler(self)

    @property
    def refusals(self) -> list[Refusal]:
        """Every refused request, oldest first."""
        with self._refusal_lock:
            return list(self._refusals)

    def refuse(self, path: str, status: int, code: str, wire: Wire) -> Wire:
        """Keep the refusal and send ``wire``."""
        with self._refusal_lock:
            self._refusals.append(Refusal(path, status, code))
        return wire

    def answer(self, request: RawRequest) -> Wire:
        """What goes back for ``request`` (each cloud says)."""
        raise NotImplementedError

    def scripted(self, request: RecordedRequest, tools: list[str]) -> Reply:
        """Record an accepted model request and pick its reply; ``tools``: the names of the tools it offers."""
        from codejury.agents.walkthrough import OUTPUT_NAME

        if OUTPUT_NAME in tools:
            with self._lock:
                self._walkthrough_requests.append(request)
                index = len(self._walkthrough_requests) - 1
                walkthroughs = list(self._walkthroughs)
            if walkthroughs:
                return walkthroughs[min(index, len(walkthroughs) - 1)]
            return ToolCallReply([(OUTPUT_NAME, {"summary": "", "groups": [], "diagram": ""})])
        with self._lock:
            self._requests.append(request)
        reply = self._next_reply(request.model)
        with self._lock:
            self._served.append((request, reply))
        return reply or ErrorReply(500, message=f"no scripted reply for model {request.model!r}")


def recorded(raw: RawRequest, body: Any, model: str, *, stream: bool) -> RecordedRequest:
    """The ``RecordedRequest`` of an accepted cloud request (no vendor: the cloud's own wire format)."""
    return RecordedRequest(
        method=raw.method,
        path=raw.path,
        query=raw.query,
        headers=raw.headers,
        body=body,
        vendor=None,
        model=model,
        stream=stream,
        received_at=time.monotonic(),
    )


def content(reply: Reply) -> TextReply | ToolCallReply | ErrorReply:
    """A content or error reply; the cloud fakes send no fault replies."""
    if not isinstance(reply, TextReply | ToolCallReply | ErrorReply):
        return ErrorReply(500, message=f"{type(reply).__name__} is not sent by the cloud fakes")
    return reply


def _raw_handler(server: CloudServer) -> type:
    base: Any = _make_handler(server)

    class Handler(base):  # type: ignore[misc]  # a class made at run time
        def _handle(self) -> None:
            raw = self.read_body()
            parts = urlsplit(self.path)
            headers = {k.lower(): v for k, v in self.headers.items()}
            wire = server.answer(RawRequest(self.command, parts.path, parts.query, headers, raw))
            try:
                self._write(wire)
            except (OSError, _Stopped):
                self._abort()

    return Handler
