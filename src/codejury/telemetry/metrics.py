"""Prometheus counters of finished reviews, for the processes that live across reviews.

``ReviewMetrics`` owns its metric families in its own ``CollectorRegistry``, never the process's
default one, so its numbers never mix with another library's. A long-running process keeps one:
``codejury serve`` serves it with ``render_metrics`` on ``/metrics``, ``codejury worker`` on its
``--metrics-port``; counted across every review the process runs, ``rate()`` and ``increase()``
over them mean what they say. A one-shot ``codejury review`` exports the last run's gauges
instead (``codejury.telemetry.last_run``).

``MetricsRecorder`` is a recorder (``codejury.record.recorders.Recorder``): the record stage hands
it each finished review with its events, and it counts them; a review it cannot count is one
warning line, never a failed review.

Metrics (counters carry Prometheus's ``_total`` suffix in the exposition):

- ``codejury_reviews_total{tier, verdict}``, ``codejury_break_glass_total``;
- ``codejury_review_duration_seconds{tier}`` and ``codejury_review_cost_usd{tier}`` (histograms);
- ``codejury_tokens_total{model, kind}``: kind is input (cache reads included, as providers count
  them), output, cache_read or cache_write;
- ``codejury_findings_total{reviewer, severity}`` (published findings) and
  ``codejury_findings_dropped_total{reason}``: the reason in snake_case (``failed_verification``,
  ``dropped_by_judge``; the events, the JSON and the review keep its words, ``failed verification``);
- ``codejury_agent_runs_total{agent, status}`` (reviewers, the coordinator, verification runs);
- ``codejury_failbacks_total{from_model, to_model}``;
- ``codejury_breaker_state{model, codejury_breaker_state}``: 1 for the model's current circuit
  breaker state (closed, half_open, open), as last seen by a review;
- ``codejury_context_warnings_total{agent}``: prompts past half the model's context window;
- ``codejury_injection_suspected_total{source, rule}``: passages of untrusted text that look like
  instructions to the reviewer (``codejury.guardrails``).

No ``_created`` series: counters and histograms export their value alone (``disable_created_metrics``, for
every registry of the process, as soon as a codejury metrics module is imported), not one timestamp series
more per label set.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Enum, Histogram, disable_created_metrics
from prometheus_client.exposition import choose_encoder
from pydantic import BaseModel

from codejury.findings import Review

disable_created_metrics()  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated

TOKEN_KINDS = ("input", "output", "cache_read", "cache_write")
BREAKER_STATES = ["closed", "half_open", "open"]
DURATION_BUCKETS = (5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0)
COST_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_NOT_WORD = re.compile(r"[^a-z0-9]+")


def label_value(text: str) -> str:
    """``text`` as a snake_case label value: ``analyzer hit rejected`` → ``analyzer_hit_rejected``."""
    return _NOT_WORD.sub("_", text.lower()).strip("_") or "unknown"


class ReviewMetrics:
    """The codejury metric families in a registry of their own (``registry``)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.reviews = Counter(
            "codejury_reviews", "Finished reviews by risk tier and verdict.", ["tier", "verdict"], registry=r
        )
        self.break_glass = Counter(
            "codejury_break_glass", "Reviews whose approval was forced (break glass).", registry=r
        )
        self.duration = Histogram(
            "codejury_review_duration_seconds", "Wall time of a review.", ["tier"], buckets=DURATION_BUCKETS, registry=r
        )
        self.cost = Histogram(
            "codejury_review_cost_usd", "Model cost of a review in USD.", ["tier"], buckets=COST_BUCKETS, registry=r
        )
        self.tokens = Counter(
            "codejury_tokens",
            "Model tokens by model and kind (input includes cache reads; cache_read, cache_write).",
            ["model", "kind"],
            registry=r,
        )
        self.findings = Counter(
            "codejury_findings", "Published findings by reviewer and severity.", ["reviewer", "severity"], registry=r
        )
        self.dropped = Counter(
            "codejury_findings_dropped", "Findings dropped before publishing, by reason.", ["reason"], registry=r
        )
        self.agent_runs = Counter(
            "codejury_agent_runs",
            "Agent runs (reviewers, coordinator, checks) by status.",
            ["agent", "status"],
            registry=r,
        )
        self.failbacks = Counter(
            "codejury_failbacks",
            "Requests moved to the next model of a failback chain.",
            ["from_model", "to_model"],
            registry=r,
        )
        self.breaker = Enum(
            "codejury_breaker_state", "Circuit breaker state of a model.", ["model"], states=BREAKER_STATES, registry=r
        )
        self.context_warnings = Counter(
            "codejury_context_warnings",
            "Prompts past half the model's context window, by agent.",
            ["agent"],
            registry=r,
        )
        self.injections = Counter(
            "codejury_injection_suspected",
            "Passages of untrusted text that look like instructions to the reviewer, by source and rule.",
            ["source", "rule"],
            registry=r,
        )

    def observe(self, review: Review, events: Sequence[Mapping[str, Any]] = ()) -> None:
        """Count one finished review and the events of its run."""
        tier = review.tier
        self.reviews.labels(tier, review.verdict).inc()
        if review.break_glass:
            self.break_glass.inc()
        self.duration.labels(tier).observe(max(0.0, review.usage.duration_s))
        self.cost.labels(tier).observe(max(0.0, review.usage.cost_usd))
        reports = [*review.reviewers, *([review.coordinator] if review.coordinator is not None else [])]
        answered: set[str] = set()
        for report in reports:
            self.agent_runs.labels(report.name, report.status).inc()
            if report.model in ("", "-"):
                continue
            if report.status == "ok":
                answered.add(report.model)
            for kind in TOKEN_KINDS:
                tokens = getattr(report, f"{kind}_tokens")
                if tokens > 0:
                    self.tokens.labels(report.model, kind).inc(tokens)
        for finding in review.findings:
            self.findings.labels(finding.reviewer, finding.severity).inc()
        for reason, count in review.dropped_findings.items():
            if count > 0:
                self.dropped.labels(label_value(reason)).inc(count)
        states: dict[str, str] = {}
        for event in events:
            what = event.get("type")
            if what == "model_failback":
                self.failbacks.labels(str(event.get("from_model")), str(event.get("to_model"))).inc()
            elif what == "breaker" and event.get("to_state") in BREAKER_STATES:
                states[str(event.get("model"))] = str(event["to_state"])
            elif what == "context_warning":
                self.context_warnings.labels(str(event.get("agent"))).inc()
            elif what == "injection_suspected":
                self.injections.labels(str(event.get("source")), str(event.get("rule"))).inc()
        for model in answered - states.keys():  # it answered and its breaker did not move: closed
            states[model] = "closed"
        for model, state in states.items():
            self.breaker.labels(model).state(state)


def render_metrics(registry: CollectorRegistry, accept: str = "") -> tuple[bytes, str]:
    """The registry in the exposition format the ``Accept`` header asks for: (body, content type)."""
    encode, content_type = choose_encoder(accept)
    return encode(registry), content_type


class MetricsRecorder:
    """Counts each recorded review into ``metrics`` (a long-running process's, served on its ``/metrics``)."""

    def __init__(self, metrics: ReviewMetrics, *, warn: Callable[[str], None] = lambda line: None) -> None:
        self.metrics = metrics
        self.warn = warn

    def record(self, review: BaseModel, events: Sequence[Mapping[str, Any]]) -> None:
        if not isinstance(review, Review):
            return
        try:
            self.metrics.observe(review, events)
        except Exception as exc:  # a metric must never fail the review it counts
            self.warn(f"metrics: could not count the review: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """Nothing is held open between records."""
