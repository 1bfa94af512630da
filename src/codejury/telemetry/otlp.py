"""The SDK side of tracing (imported only when tracing is on): OTLP/HTTP export, scrubbed, bounded.

Spans are batched and exported from the SDK's background thread, so a slow collector never holds
up a stage. ``Tracing.close`` flushes what is left within ``FLUSH_TIMEOUT_S`` and reports a failed
export in one warning line; the SDK's own export errors are kept off stderr meanwhile.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Status, Tracer
from opentelemetry.util.re import parse_env_headers
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings

from codejury import __version__

if TYPE_CHECKING:
    from opentelemetry.util.types import Attributes, AttributeValue

FLUSH_TIMEOUT_S = 2.0
InstallTracer = Callable[[Tracer | None], None]
"""Sets the tracer the pipeline's stages use (``telemetry.tracing.set_tracer``)."""
_EXPORT_LOGGERS = ("opentelemetry.exporter", "opentelemetry.sdk.trace.export", "opentelemetry.sdk._shared_internal")


class _ExportProblems(logging.Handler):
    """Keeps the SDK's export errors off stderr; the last one is reported by ``Tracing.close``."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.last = message.splitlines()[0][:300] if message else record.levelname


class RedactingSpanExporter(SpanExporter):
    """Hands ``inner`` copies of the spans with ``redact`` applied to every string they carry."""

    def __init__(self, inner: SpanExporter, redact: Callable[[str], str]) -> None:
        self.inner = inner
        self.redact = redact
        self.problems = _ExportProblems()
        self.problem: str | None = None
        """Why the last failed export failed (None: every export so far went through)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.problems.last = None
        try:
            result = self.inner.export([self._scrubbed(s) for s in spans])
        except Exception as exc:  # an exporter must never take the review down
            self.problem = f"{type(exc).__name__}: {exc}"
            return SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self.problem = self.problems.last or "the collector refused the spans"
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def _scrubbed(self, s: ReadableSpan) -> ReadableSpan:
        status = s.status
        if status.description:
            status = Status(status.status_code, self.redact(status.description))
        return ReadableSpan(
            name=self.redact(s.name),
            context=s.context,
            parent=s.parent,
            resource=s.resource,
            attributes=self._attributes(s.attributes),
            events=[Event(self.redact(e.name), self._attributes(e.attributes), e.timestamp) for e in s.events],
            links=s.links,
            kind=s.kind,
            status=status,
            start_time=s.start_time,
            end_time=s.end_time,
            instrumentation_scope=s.instrumentation_scope,
        )

    def _attributes(self, attributes: Attributes) -> dict[str, AttributeValue]:
        out: dict[str, AttributeValue] = {}
        for key, value in (attributes or {}).items():
            if isinstance(value, str):
                out[key] = self.redact(value)
            elif isinstance(value, tuple | list) and any(isinstance(v, str) for v in value):
                out[key] = [self.redact(str(v)) for v in value]
            else:
                out[key] = value
        return out


class Tracing:
    """Tracing while it is on: the SDK provider, its exporter, and how to flush and turn it off."""

    def __init__(
        self, provider: TracerProvider, exporter: RedactingSpanExporter, endpoint: str, install: InstallTracer
    ) -> None:
        self.provider = provider
        self.install = install
        self.exporter = exporter
        self.endpoint = endpoint
        self._previous = Agent._instrument_default

    def close(self, warn: Callable[[str], None] = lambda line: None) -> None:
        """Flush the spans (at most ``FLUSH_TIMEOUT_S``), turn tracing off, and warn once if an export failed."""
        self.install(None)
        Agent.instrument_all(self._previous)
        worker = threading.Thread(target=self.provider.shutdown, daemon=True, name="codejury-trace-flush")
        worker.start()
        worker.join(FLUSH_TIMEOUT_S)
        _route_export_logs(self.exporter.problems, on=False)
        problem = f"no answer within {FLUSH_TIMEOUT_S:g} s" if worker.is_alive() else self.exporter.problem
        if problem is not None:
            warn(f"traces: could not export to {shown_endpoint(self.endpoint)}: {problem} (the review is not affected)")


def open_tracing(
    env: Mapping[str, str],
    endpoint: str,
    *,
    include_content: bool,
    redact: Callable[[str], str],
    install: InstallTracer,
) -> Tracing:
    """Export spans to ``endpoint``; stages (through ``install``, which sets the stages' tracer) and every
    pydantic-ai agent trace through one provider."""
    headers = env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    inner = OTLPSpanExporter(endpoint=endpoint, headers=parse_env_headers(headers, liberal=True), timeout=_timeout(env))
    exporter = RedactingSpanExporter(inner, redact)
    service = env.get("OTEL_SERVICE_NAME", "").strip() or "codejury"
    provider = TracerProvider(resource=Resource.create({"service.name": service, "service.version": __version__}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    _route_export_logs(exporter.problems, on=True)
    tracing = Tracing(provider, exporter, endpoint, install)
    Agent.instrument_all(
        InstrumentationSettings(
            tracer_provider=provider,
            include_content=include_content,
            include_binary_content=False,
            include_model_request_parameters=False,  # tool schemas: large, and gen_ai.tool.definitions has them
        )
    )
    install(provider.get_tracer("codejury", __version__))
    return tracing


def shown_endpoint(url: str) -> str:
    """The endpoint as a warning shows it: scheme, host, port and path (no credentials, no query)."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "(an invalid URL)"
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


def _timeout(env: Mapping[str, str]) -> float:
    """The exporter's per-request timeout: the user's (seconds), capped so that a flush ends on time."""
    for name in ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"):
        try:
            value = float(env.get(name, ""))
        except ValueError:
            continue
        if value > 0:
            return min(value, FLUSH_TIMEOUT_S)
    return FLUSH_TIMEOUT_S


def _route_export_logs(handler: logging.Handler, *, on: bool) -> None:
    for name in _EXPORT_LOGGERS:
        logger = logging.getLogger(name)
        if on:
            logger.addHandler(handler)
            logger.propagate = False
        else:
            logger.removeHandler(handler)
            logger.propagate = True
