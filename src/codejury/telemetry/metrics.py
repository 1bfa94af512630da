"""Prometheus metrics of finished reviews: counted per run, pushed, written or served.

``ReviewMetrics`` owns its metric families in its own ``CollectorRegistry``, never the process's
default one, so a review's numbers never mix with another run's or another library's: the CLI
makes one per review (``--metrics-push`` to a Pushgateway, ``--metrics-textfile`` for
node-exporter's textfile collector), a long-running review service keeps one per process and
serves it with ``render_metrics`` on ``/metrics``.

``MetricsRecorder`` is a recorder (``codejury.record.recorders.Recorder``): the record stage hands
it each finished review with its events; it counts them and, when targets are set, exports. An
export never fails or holds up a review: each target gets at most ``EXPORT_TIMEOUT_S`` (within
the record stage's 2 s bound), and a failure is one warning line.

Metrics (counters carry Prometheus's ``_total`` suffix in the exposition):

- ``codejury_reviews_total{tier, verdict}``, ``codejury_break_glass_total``;
- ``codejury_review_duration_seconds{tier}`` and ``codejury_review_cost_usd{tier}`` (histograms);
- ``codejury_tokens_total{model, kind}``: kind is input (cache reads included, as providers count
  them), output, cache_read or cache_write;
- ``codejury_findings_total{reviewer, severity}`` (published findings) and
  ``codejury_findings_dropped_total{reason}``;
- ``codejury_agent_runs_total{agent, status}`` (reviewers, the coordinator, verification runs);
- ``codejury_failbacks_total{from_model, to_model}``;
- ``codejury_breaker_state{model, codejury_breaker_state}``: 1 for the model's current circuit
  breaker state (closed, half_open, open), as last seen by a review;
- ``codejury_context_warnings_total{agent}``: prompts past half the model's context window.
"""

from __future__ import annotations

import threading
import time
import urllib.error
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from prometheus_client import CollectorRegistry, Counter, Enum, Histogram
from prometheus_client.exposition import basic_auth_handler, choose_encoder, push_to_gateway, write_to_textfile
from pydantic import BaseModel

from codejury.findings import Review

EXPORT_TIMEOUT_S = 1.8
"""Each export target's bound: inside the record stage's 2 s per recorder."""
PUSH_JOB = "codejury"
TOKEN_KINDS = ("input", "output", "cache_read", "cache_write")
BREAKER_STATES = ["closed", "half_open", "open"]
DURATION_BUCKETS = (5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0)
COST_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


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
                self.dropped.labels(reason).inc(count)
        states: dict[str, str] = {}
        for event in events:
            what = event.get("type")
            if what == "model_failback":
                self.failbacks.labels(str(event.get("from_model")), str(event.get("to_model"))).inc()
            elif what == "breaker" and event.get("to_state") in BREAKER_STATES:
                states[str(event.get("model"))] = str(event["to_state"])
            elif what == "context_warning":
                self.context_warnings.labels(str(event.get("agent"))).inc()
        for model in answered - states.keys():  # it answered and its breaker did not move: closed
            states[model] = "closed"
        for model, state in states.items():
            self.breaker.labels(model).state(state)


def render_metrics(registry: CollectorRegistry, accept: str = "") -> tuple[bytes, str]:
    """The registry in the exposition format the ``Accept`` header asks for: (body, content type)."""
    encode, content_type = choose_encoder(accept)
    return encode(registry), content_type


def shown_url(url: str) -> str:
    """``url`` as a warning may show it: no credentials, no query."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            netloc += f":{parts.port}"
    except ValueError:
        return "(an invalid URL)"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def push_metrics(
    registry: CollectorRegistry, url: str, *, repository: str = "", timeout_s: float = EXPORT_TIMEOUT_S
) -> None:
    """PUT the registry to the Pushgateway at ``url`` as job ``codejury``, grouped by repository.

    Credentials in the URL (``https://user:pass@host``) are sent as HTTP basic auth, not in the path.
    """
    parts = urlsplit(url)
    handler: Callable[..., Callable[[], None]] | None = None
    if parts.username is not None:
        handler = partial(basic_auth_handler, username=parts.username, password=parts.password or "")
        url = urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query, ""))
    grouping = {"repository": repository} if repository else None
    kwargs: dict[str, Any] = {"handler": handler} if handler is not None else {}
    push_to_gateway(url, job=PUSH_JOB, registry=registry, grouping_key=grouping, timeout=timeout_s, **kwargs)


def write_metrics_textfile(registry: CollectorRegistry, path: Path) -> None:
    """Write the registry for node-exporter's textfile collector, atomically (a temporary file, then rename)."""
    write_to_textfile(str(path), registry)


class MetricsRecorder:
    """Counts each recorded review into ``metrics``; then pushes and writes it where asked."""

    def __init__(
        self,
        metrics: ReviewMetrics | None = None,
        *,
        push_url: str | None = None,
        textfile: Path | None = None,
        warn: Callable[[str], None] = lambda line: None,
        timeout_s: float = EXPORT_TIMEOUT_S,
    ) -> None:
        self.metrics = metrics if metrics is not None else ReviewMetrics()
        self.push_url = push_url
        self.textfile = textfile
        self.warn = warn
        self.timeout_s = timeout_s

    def record(self, review: BaseModel, events: Sequence[Mapping[str, Any]]) -> None:
        if not isinstance(review, Review):
            return
        try:
            self.metrics.observe(review, events)
        except Exception as exc:  # a metric must never fail the review it counts
            self.warn(f"metrics: could not count the review: {type(exc).__name__}: {exc}")
            return
        self.export(_repository(events))

    def export(self, repository: str = "") -> None:
        """Write and push to the targets concurrently, each bounded; one warning line per failed target."""
        registry = self.metrics.registry
        jobs: list[tuple[str, Callable[[], None]]] = []
        if self.textfile is not None:
            jobs.append(
                (
                    f"could not write the metrics textfile {self.textfile}",
                    partial(write_metrics_textfile, registry, self.textfile),
                )
            )
        if self.push_url is not None:
            push = partial(push_metrics, registry, self.push_url, repository=repository, timeout_s=self.timeout_s)
            jobs.append((f"could not push to the Pushgateway at {shown_url(self.push_url)}", push))
        for what, problem in zip((w for w, _ in jobs), _bounded([job for _, job in jobs], self.timeout_s), strict=True):
            if problem is not None:
                self.warn(f"metrics: {what}: {problem} (the review is not affected)")

    def close(self) -> None:
        """Nothing is held open between records."""


def _repository(events: Sequence[Mapping[str, Any]]) -> str:
    """The repository the run's ``change`` event names, else ''."""
    for event in events:
        if event.get("type") == "change" and isinstance(event.get("repository"), str) and event["repository"]:
            return str(event["repository"])
    return ""


def _bounded(jobs: Sequence[Callable[[], None]], timeout_s: float) -> list[str | None]:
    """Run each job in a daemon thread; its problem (one line), 'no answer …' past ``timeout_s``, or None."""
    results: list[str | None] = [None] * len(jobs)
    done = [False] * len(jobs)

    def run(i: int) -> None:
        try:
            jobs[i]()
        except Exception as exc:
            results[i] = _describe(exc)
        done[i] = True

    threads = [threading.Thread(target=run, args=(i,), daemon=True, name="codejury-metrics") for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout_s  # the jobs run side by side: one shared bound
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [results[i] if done[i] else f"no answer within {timeout_s:g} s" for i in range(len(jobs))]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        reason = exc.reason
        return reason.strerror or str(reason) if isinstance(reason, OSError) else str(reason)
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return f"{type(exc).__name__}: {exc}"
