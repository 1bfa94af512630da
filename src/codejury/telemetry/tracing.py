"""OpenTelemetry traces of a review: a span per review and per stage, the model calls as GenAI spans.

Off unless the standard variables name a collector: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (the
full URL) or ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base URL; ``/v1/traces`` is appended), exported as
OTLP over HTTP/protobuf. ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` keep it off.
While it is off, ``span()`` hands out one shared no-op context: the SDK is not even imported.

When on (``start_tracing``, whose SDK side lives in ``telemetry.otlp``), the pipeline's stages
open ``codejury.<stage>`` spans under one ``codejury.review`` span, and every pydantic-ai agent
is instrumented: ``invoke_agent <reviewer>`` spans with ``chat <model>`` children (``gen_ai.*``
attributes: provider, model, token usage) and ``execute_tool <tool>`` children. Prompts,
responses and tool arguments are left out (pydantic-ai's ``include_content=False``) unless
``record.prompts = true``; either way every attribute, event and status passes the run's
redactor before it leaves, so a known secret never reaches the collector.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from opentelemetry import trace

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

    from codejury.telemetry.otlp import Tracing

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
BASE_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
_TRUE = ("1", "true", "yes", "on")

_NO_SPAN: AbstractContextManager[trace.Span] = nullcontext(trace.INVALID_SPAN)
_tracer: trace.Tracer | None = None
"""The active tracer while tracing is on; None: every span is the shared no-op."""


def span(name: str, attributes: Mapping[str, AttributeValue] | None = None) -> AbstractContextManager[trace.Span]:
    """A ``codejury.<name>`` span (a child of the current one), or the shared no-op while tracing is off."""
    tracer = _tracer
    if tracer is None:
        return _NO_SPAN
    return tracer.start_as_current_span(f"codejury.{name}", attributes=attributes)


def set_tracer(tracer: trace.Tracer | None) -> None:
    """Make ``tracer`` the one stages open their spans with (None: tracing off)."""
    global _tracer
    _tracer = tracer


def traces_endpoint(env: Mapping[str, str]) -> str | None:
    """Where spans go by the standard variables, or None when tracing stays off."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() in _TRUE:
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    endpoint = env.get(TRACES_ENDPOINT, "").strip()
    if endpoint:
        return endpoint
    base = env.get(BASE_ENDPOINT, "").strip()
    return f"{base.rstrip('/')}/v1/traces" if base else None


def start_tracing(
    env: Mapping[str, str], *, include_content: bool = False, redact: Callable[[str], str] = lambda text: text
) -> Tracing | None:
    """Turn tracing on when ``env`` names an OTLP endpoint and return its handle; None (nothing imported) otherwise.

    ``include_content``: spans carry prompts and responses (``record.prompts``). ``redact`` scrubs
    every string a span carries before export. Call ``Tracing.close`` when the review is done.
    """
    endpoint = traces_endpoint(env)
    if endpoint is None:
        return None
    from codejury.telemetry.otlp import open_tracing

    return open_tracing(env, endpoint, include_content=include_content, redact=redact, install=set_tracer)


async def traced(name: str, stage: Awaitable[T]) -> T:
    """Await ``stage`` inside a ``codejury.<name>`` span (just await it while tracing is off)."""
    if _tracer is None:
        return await stage
    with span(name):
        return await stage


def traced_review(review: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Run ``review`` inside the root ``codejury.review`` span, which carries the outcome's tier and verdict."""

    @functools.wraps(review)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if _tracer is None:
            return await review(*args, **kwargs)
        with span("review") as root:
            result = await review(*args, **kwargs)
            root.set_attributes(_outcome(result))
            return result

    return run


def _outcome(result: object) -> dict[str, AttributeValue]:
    """What the root span says about a finished review or a plan (no text the change supplied)."""
    from codejury.findings import Plan, Review

    if isinstance(result, Review):
        return {
            "codejury.tier": result.tier,
            "codejury.verdict": result.verdict,
            "codejury.findings": len(result.findings),
            "codejury.break_glass": result.break_glass,
            "codejury.cost_usd": result.usage.cost_usd,
            "codejury.input_tokens": result.usage.input_tokens,
            "codejury.output_tokens": result.usage.output_tokens,
            "codejury.failed_reviewers": sum(1 for r in result.reviewers if r.status == "failed"),
        }
    if isinstance(result, Plan):
        return {"codejury.tier": result.tier, "codejury.dry_run": True}
    return {}
