"""The one-shot export of ``codejury review``: the last run's gauges, pushed or written.

A CI job is a batch job: it lives for one review, so a counter it exports starts at zero every
run and ``rate()`` / ``increase()`` over it mean nothing (the Pushgateway is "not an aggregator or
distributed counter but rather a metrics cache", in its README's words). ``--metrics-push`` and
``--metrics-textfile`` therefore export what the last review of a repository was, as gauges, the
way Prometheus' instrumentation guide asks of batch jobs (the key metric is the last time it ran):

- ``codejury_last_review_timestamp_seconds``: when it finished (Unix time);
- ``codejury_last_review_duration_seconds``, ``codejury_last_review_cost_usd``;
- ``codejury_last_review_findings{severity}``: published findings, every severity (0 included);
- ``codejury_last_review_verdict{verdict}`` and ``codejury_last_review_tier{tier}``: 1 for the
  run's, 0 for the others, so a query selects on the value (``== 1``);
- ``codejury_last_review_tokens{kind}``: input (cache reads included), output, cache_read, cache_write;
- ``codejury_last_review_failed_agents``: reviewer and coordinator runs that failed;
- ``codejury_last_review_break_glass``: 1 when its approval was forced.

Each push ``PUT``s the group of its repository (``job="codejury"``, ``repository``), replacing that
repository's previous run and no other; the textfile holds the same gauges with a ``repository``
label (node-exporter adds no grouping of its own), written atomically. Counters that add up across
reviews are the long-running processes' (``codejury serve``, ``codejury worker``), scraped on their
``/metrics``.
"""

from __future__ import annotations

import threading
import time
import urllib.error
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, get_args
from urllib.parse import urlsplit, urlunsplit

from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.exposition import basic_auth_handler, push_to_gateway, write_to_textfile
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from pydantic import BaseModel

from codejury.findings import Review, Severity, Tier, Verdict
from codejury.telemetry.metrics import TOKEN_KINDS

EXPORT_TIMEOUT_S = 1.8
"""Each export target's bound: inside the record stage's 2 s per recorder."""
PUSH_JOB = "codejury"

SEVERITIES: tuple[str, ...] = get_args(Severity)
VERDICTS: tuple[str, ...] = get_args(Verdict)
TIERS: tuple[str, ...] = get_args(Tier)


class LastRunMetrics:
    """The last review's gauges in a registry of their own (``registry``)."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.timestamp = Gauge(
            "codejury_last_review_timestamp_seconds", "When the last review finished (Unix time).", registry=r
        )
        self.duration = Gauge("codejury_last_review_duration_seconds", "Wall time of the last review.", registry=r)
        self.cost = Gauge("codejury_last_review_cost_usd", "Model cost of the last review in USD.", registry=r)
        self.findings = Gauge(
            "codejury_last_review_findings",
            "Findings the last review published, by severity.",
            ["severity"],
            registry=r,
        )
        self.verdict = Gauge(
            "codejury_last_review_verdict",
            "1 for the last review's verdict, 0 for the others.",
            ["verdict"],
            registry=r,
        )
        self.tier = Gauge(
            "codejury_last_review_tier", "1 for the last review's risk tier, 0 for the others.", ["tier"], registry=r
        )
        self.tokens = Gauge(
            "codejury_last_review_tokens",
            "Model tokens of the last review by kind (input includes cache reads; cache_read, cache_write).",
            ["kind"],
            registry=r,
        )
        self.failed_agents = Gauge(
            "codejury_last_review_failed_agents",
            "Reviewer and coordinator runs of the last review that failed.",
            registry=r,
        )
        self.break_glass = Gauge(
            "codejury_last_review_break_glass",
            "1 when the last review's approval was forced (break glass).",
            registry=r,
        )

    def set(self, review: Review, finished_at: float) -> None:
        """Every gauge from ``review``, finished at ``finished_at`` (Unix time)."""
        self.timestamp.set(finished_at)
        self.duration.set(max(0.0, review.usage.duration_s))
        self.cost.set(max(0.0, review.usage.cost_usd))
        for severity in SEVERITIES:
            self.findings.labels(severity).set(sum(1 for f in review.findings if f.severity == severity))
        for verdict in VERDICTS:
            self.verdict.labels(verdict).set(1 if verdict == review.verdict else 0)
        for tier in TIERS:
            self.tier.labels(tier).set(1 if tier == review.tier else 0)
        reports = [*review.reviewers, *([review.coordinator] if review.coordinator is not None else [])]
        for kind in TOKEN_KINDS:
            self.tokens.labels(kind).set(max(0, getattr(review.usage, f"{kind}_tokens")))  # the walkthrough's too
        self.failed_agents.set(sum(1 for report in reports if report.status == "failed"))
        self.break_glass.set(1 if review.break_glass else 0)


class _WithLabels(Collector):
    """``registry``'s samples with ``labels`` added to each (the textfile's stand-in for a grouping key)."""

    def __init__(self, registry: CollectorRegistry, labels: Mapping[str, str]) -> None:
        self.registry = registry
        self.labels = dict(labels)

    def collect(self) -> Iterable[Metric]:
        for family in self.registry.collect():
            labelled = Metric(family.name, family.documentation, family.type, family.unit)
            labelled.samples = [
                Sample(s.name, {**self.labels, **s.labels}, s.value, s.timestamp, s.exemplar) for s in family.samples
            ]
            yield labelled


class LastRunRecorder:
    """A recorder for one ``codejury review``: sets the last-run gauges, then pushes and writes them."""

    def __init__(
        self,
        *,
        push_url: str | None = None,
        textfile: Path | None = None,
        warn: Callable[[str], None] = lambda line: None,
        timeout_s: float = EXPORT_TIMEOUT_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.metrics = LastRunMetrics()
        self.push_url = push_url
        self.textfile = textfile
        self.warn = warn
        self.timeout_s = timeout_s
        self.clock = clock

    def record(self, review: BaseModel, events: Sequence[Mapping[str, Any]]) -> None:
        if not isinstance(review, Review):
            return
        try:
            self.metrics.set(review, self.clock())
        except Exception as exc:  # a metric must never fail the review it describes
            self.warn(f"metrics: could not read the review: {type(exc).__name__}: {exc}")
            return
        self.export(repository_of(events))

    def export(self, repository: str = "") -> None:
        """Write and push concurrently, each bounded; one warning line per failed target."""
        registry = self.metrics.registry
        jobs: list[tuple[str, Callable[[], None]]] = []
        if self.textfile is not None:
            labelled = CollectorRegistry()
            labelled.register(_WithLabels(registry, {"repository": repository} if repository else {}))
            write = partial(write_metrics_textfile, labelled, self.textfile)
            jobs.append((f"could not write the metrics textfile {self.textfile}", write))
        if self.push_url is not None:
            push = partial(push_metrics, registry, self.push_url, repository=repository, timeout_s=self.timeout_s)
            jobs.append((f"could not push to the Pushgateway at {shown_url(self.push_url)}", push))
        for (what, _), problem in zip(jobs, bounded([job for _, job in jobs], self.timeout_s), strict=True):
            if problem is not None:
                self.warn(f"metrics: {what}: {problem} (the review is not affected)")

    def close(self) -> None:
        """Nothing is held open between records."""


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
    """PUT the registry to the Pushgateway at ``url`` as job ``codejury``, grouped by repository: the group's
    previous push is replaced, other repositories' groups are left alone.

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


def repository_of(events: Sequence[Mapping[str, Any]]) -> str:
    """The repository the run's ``change`` event names, else ''."""
    for event in events:
        if event.get("type") == "change" and isinstance(event.get("repository"), str) and event["repository"]:
            return str(event["repository"])
    return ""


def bounded(jobs: Sequence[Callable[[], None]], timeout_s: float) -> list[str | None]:
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
