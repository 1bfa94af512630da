"""Loopback fakes of what telemetry talks to: a Prometheus Pushgateway and an OTLP/HTTP trace collector.

Both refuse what the real servers refuse. The Pushgateway accepts ``PUT``/``POST``/``DELETE`` on
``/metrics/job/<job>{/<label>/<value>}`` only (a ``@base64`` label suffix decodes a URL-safe base64
value), wants the text exposition format (``text/plain; version=0.0.4``) and answers 400 to a body
that does not parse; ``PUT`` replaces a group, ``POST`` replaces the pushed metric families in it.
The collector takes ``POST /v1/traces`` with ``Content-Type: application/x-protobuf`` only and
decodes each ``ExportTraceServiceRequest``.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus

from codejury_fakes.loopback import LoopbackServer, QuietHandler
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families


@dataclass
class Push:
    method: str
    path: str
    content_type: str
    grouping: dict[str, str]
    families: dict[str, Metric]


class FakePushgateway(LoopbackServer):
    thread_name = "fake-pushgateway"

    def __init__(self, *, hang: bool = False) -> None:
        self.pushes: list[Push] = []
        self.groups: dict[tuple[tuple[str, str], ...], dict[str, Metric]] = {}
        self.refused: list[tuple[int, str]] = []
        self.hang = hang
        gateway = self

        class Handler(QuietHandler):
            def do_PUT(self) -> None:
                gateway.handle(self, "PUT")

            def do_POST(self) -> None:
                gateway.handle(self, "POST")

            def do_DELETE(self) -> None:
                gateway.handle(self, "DELETE")

            def do_GET(self) -> None:
                self.send_error(405)

        super().__init__(Handler)

    def handle(self, h: QuietHandler, method: str) -> None:
        body = h.read_body()
        if self.hang:
            self.stopping.wait(60)
            return
        grouping = _grouping(h.path)
        if grouping is None:
            return self._refuse(h, 404, f"bad path {h.path}")
        content_type = h.headers.get("Content-Type", "")
        key = tuple(sorted(grouping.items()))
        if method == "DELETE":
            self.groups.pop(key, None)
            return self._ok(h)
        if not is_text_format(content_type):
            return self._refuse(h, 400, f"unsupported content type {content_type!r}")
        try:
            families = {m.name: m for m in text_string_to_metric_families(body.decode("utf-8"))}
        except Exception as exc:
            return self._refuse(h, 400, f"text format parsing error: {exc}")
        self.pushes.append(Push(method, h.path, content_type, grouping, families))
        if method == "PUT":
            self.groups[key] = families
        else:
            self.groups.setdefault(key, {}).update(families)
        self._ok(h)

    def _ok(self, h: QuietHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "0")
        h.end_headers()

    def _refuse(self, h: QuietHandler, status: int, why: str) -> None:
        self.refused.append((status, why))
        h.send_body(status, "text/plain", why.encode())


def is_text_format(content_type: str) -> bool:
    """``text/plain; version=0.0.4``, parameters in any order (``charset=utf-8`` allowed), as the real one reads it."""
    media, *params = [p.strip() for p in content_type.split(";")]
    values = dict(p.split("=", 1) for p in params if "=" in p)
    return (
        media.lower() == "text/plain"
        and values.get("version") == "0.0.4"
        and values.get("charset", "utf-8").lower() == "utf-8"
    )


def _grouping(path: str) -> dict[str, str] | None:
    """``/metrics/job/<job>/<label>/<value>…`` → {'job': …, label: value}; None for any other path."""
    parts = path.split("?")[0].split("/")
    if len(parts) < 4 or parts[:3] != ["", "metrics", "job"] or len(parts) % 2 != 0:
        return None
    grouping: dict[str, str] = {}
    pairs = parts[2:]
    for i in range(0, len(pairs), 2):
        name, value = pairs[i], pairs[i + 1]
        if name.endswith("@base64"):
            name = name.removesuffix("@base64")
            value = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode("utf-8")
        else:
            value = unquote_plus(value)
        if not name or (name == "job" and not value):
            return None
        grouping[name] = value
    return grouping


@dataclass
class SpanRecord:
    """One exported span, flattened: ids as hex, attributes as plain Python values."""

    name: str
    span_id: str
    parent_id: str
    trace_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status_message: str = ""
    scope: str = ""


class FakeCollector(LoopbackServer):
    thread_name = "fake-otlp-collector"

    def __init__(self, *, status: int = 200) -> None:
        self.spans: list[SpanRecord] = []
        self.requests: list[tuple[str, str, str]] = []
        self.status = status
        self.lock = threading.Lock()
        collector = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                collector.handle(self)

        super().__init__(Handler)

    @property
    def endpoint(self) -> str:
        return f"{self.origin}/v1/traces"

    def handle(self, h: QuietHandler) -> None:
        body = h.read_body()
        content_type = h.headers.get("Content-Type", "")
        with self.lock:
            self.requests.append((h.command, h.path, content_type))
        if h.path != "/v1/traces":
            return self._reply(h, 404, b"")
        if content_type != "application/x-protobuf":
            return self._reply(h, 415, b"")
        if self.status != 200:
            return self._reply(h, self.status, b"")
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            self.spans.extend(_flatten(request))
        self._reply(h, 200, ExportTraceServiceResponse().SerializeToString())

    def _reply(self, h: QuietHandler, status: int, data: bytes) -> None:
        h.send_body(status, "application/x-protobuf", data)


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


def _flatten(request: ExportTraceServiceRequest) -> Iterator[SpanRecord]:
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for s in scope_spans.spans:
                yield SpanRecord(
                    name=s.name,
                    span_id=s.span_id.hex(),
                    parent_id=s.parent_span_id.hex(),
                    trace_id=s.trace_id.hex(),
                    attributes={kv.key: _value(kv.value) for kv in s.attributes},
                    events=[(e.name, {kv.key: _value(kv.value) for kv in e.attributes}) for e in s.events],
                    status_message=s.status.message,
                    scope=scope_spans.scope.name,
                )
