"""Prometheus metrics of the review service and its workers, beside the review counters of ``metrics``.

- ``codejury_build_info{version, python}``: always 1; which codejury each process runs;
- ``codejury_review_job_failures_total{reason}``: review jobs that did not end in a published
  review, counted by the process that ran them (``codejury serve`` without ``--database``, each
  ``codejury worker``), by reason class: ``forge_unavailable`` (the forge did not answer; the queue
  tries again later), ``review_failed`` (no reviewer succeeded: the failure note was posted),
  ``not_reviewed`` (refused: a bad token, a merge request with no change, a chat command not
  carried out), ``refused`` (the job's merge request is on no configured forge) and ``error``
  (anything else: a bug). Every reason is exported from the start, at 0;
- ``codejury_review_jobs{state}``: jobs ``waiting`` (queued, not started) and ``running``;
  ``codejury_review_oldest_waiting_job_age_seconds``: how long the oldest job that is due has
  waited (0 when none); ``codejury_review_queue_up``: 1 when this scrape read the queue, else 0
  (and the two above are then left out). Served by ``codejury serve``, which owns the queue.

The queue is read when ``/metrics`` is requested (``QueueMetrics.refresh``, awaited by the route
off the collector, bounded by ``QUEUE_READ_TIMEOUT_S``): the scrape never blocks the event loop,
and a queue that does not answer costs at most that bound and reads as ``codejury_review_queue_up 0``.

A worker serves its registry with ``MetricsServer`` (prometheus_client's own HTTP server) on
``--metrics-port``: one registry and one port per worker process, each a scrape target of its own.
Prometheus' multiprocess mode is for processes forked behind one port (a pre-fork web server);
workers are independent processes, often on several machines, that share nothing but the database.
"""

from __future__ import annotations

import asyncio
import platform
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Literal
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Info, disable_created_metrics, start_http_server
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from codejury import __version__
from codejury.errors import ConfigError

disable_created_metrics()  # type: ignore[no-untyped-call]  # as codejury.telemetry.metrics: no _created series

FailureReason = Literal["forge_unavailable", "review_failed", "not_reviewed", "refused", "error"]
FAILURE_REASONS: tuple[FailureReason, ...] = ("forge_unavailable", "review_failed", "not_reviewed", "refused", "error")
QUEUE_READ_TIMEOUT_S = 2.0
"""How long a scrape waits for the queue's numbers (well inside Prometheus' default 10 s scrape timeout)."""


def add_build_info(registry: CollectorRegistry) -> None:
    """``codejury_build_info{version, python} 1`` in ``registry``."""
    Info("codejury_build", "The codejury this process runs.", registry=registry).info(
        {"version": __version__, "python": platform.python_version()}
    )


class JobMetrics:
    """Review jobs that did not end in a published review, by reason class."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.failures = Counter(
            "codejury_review_job_failures",
            "Review jobs that did not end in a published review, by reason class.",
            ["reason"],
            registry=registry,
        )
        for reason in FAILURE_REASONS:  # exported at 0 from the start: rate() sees the first failure
            self.failures.labels(reason)

    def failed(self, reason: FailureReason) -> None:
        self.failures.labels(reason).inc()


@dataclass(frozen=True)
class QueueDepth:
    """What a job queue holds now."""

    waiting: int
    running: int
    oldest_waiting_s: float
    """Age of the oldest waiting job that is due (not held back by a retry's backoff); 0 when none."""


class QueueMetrics(Collector):
    """The queue's gauges, read by ``refresh`` (awaited before each scrape) and exported by ``collect``."""

    def __init__(self, read: Callable[[], Awaitable[QueueDepth]], timeout_s: float = QUEUE_READ_TIMEOUT_S) -> None:
        self.read = read
        self.timeout_s = timeout_s
        self.depth: QueueDepth | None = None

    async def refresh(self) -> None:
        """Read the queue, at most ``timeout_s``; a queue that fails or does not answer leaves no numbers."""
        try:
            self.depth = await asyncio.wait_for(self.read(), self.timeout_s)
        except Exception:  # the scrape goes on: codejury_review_queue_up says the numbers are missing
            self.depth = None

    def collect(self) -> Iterable[Metric]:
        depth = self.depth
        yield GaugeMetricFamily(
            "codejury_review_queue_up",
            "1 when this scrape read the job queue, else 0.",
            value=0 if depth is None else 1,
        )
        if depth is None:
            return
        jobs = GaugeMetricFamily("codejury_review_jobs", "Review jobs in the queue by state.", labels=["state"])
        jobs.add_metric(["waiting"], depth.waiting)
        jobs.add_metric(["running"], depth.running)
        yield jobs
        yield GaugeMetricFamily(
            "codejury_review_oldest_waiting_job_age_seconds",
            "How long the oldest due waiting review job has waited (0 when none).",
            value=depth.oldest_waiting_s,
        )


class MetricsServer:
    """A registry served on ``http://HOST:PORT/metrics`` by prometheus_client's own HTTP server, in a daemon
    thread (a worker's: its event loop runs reviews, the scrape never waits on it)."""

    def __init__(self, httpd: WSGIServer, thread: threading.Thread, host: str) -> None:
        self.httpd = httpd
        self.thread = thread
        self.host = host

    @classmethod
    def start(cls, registry: CollectorRegistry, host: str, port: int) -> MetricsServer:
        """Listen on ``host:port`` (port 0: a free one); ``ConfigError`` when it cannot."""
        try:
            httpd, thread = start_http_server(port, addr=host, registry=registry)
        except OSError as exc:
            raise ConfigError(f"--metrics-port {port}: cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
        return cls(httpd, thread, host)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
