"""The store recorder: on by default, every finished review written to the store or a review service.

``store_recorder(settings, env)`` builds it from ``record.url`` / ``CODEJURY_RECORD_URL`` (None
when that says ``none``). Recording never blocks a review for long: records go through one
worker thread with at most ``MAX_PENDING`` records waiting (the seed's tracker: 50); ``record``
waits at most ``WAIT_S`` for its own record, and otherwise leaves the reason in ``write_error``,
which the record stage reports as "not recorded". A record still waiting when ``WAIT_S`` runs out
stays queued and is written if the store answers later; a record that finds the queue full is
dropped. ``close()`` lets the worker finish what is queued, then releases the store; once a record
went unanswered the store is taken as down and ``close()`` returns at once. The worker is a daemon
thread: a process that exits never waits on a dead store.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from codejury.findings import Review
from codejury.record.model import ReviewRecord, record_from_review
from codejury.record.target import RecordTarget, parse_record_url

MAX_PENDING = 50
WAIT_S = 1.8
"""Below the record stage's 2 s bound, so this recorder says why rather than being timed out."""


class RecordSink(Protocol):
    """Where records go: ``Store`` or ``IngestClient``."""

    @property
    def shown(self) -> str: ...

    def write(self, record: ReviewRecord) -> bool: ...

    def close(self) -> None: ...


@dataclass
class _Job:
    record: ReviewRecord
    done: threading.Event = field(default_factory=threading.Event)
    error: str | None = None


class StoreRecorder:
    """A ``Recorder`` writing each review to one sink through a bounded queue and one worker thread."""

    def __init__(self, sink: RecordSink, *, max_pending: int = MAX_PENDING, wait_s: float = WAIT_S) -> None:
        self.sink = sink
        self.max_pending = max_pending
        self.wait_s = wait_s
        self.write_error: str | None = None
        self.last_record: ReviewRecord | None = None
        self._queue: queue.Queue[_Job | None] = queue.Queue(maxsize=max_pending)
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        self._unanswered: _Job | None = None
        """The last record the store did not answer within ``wait_s`` (None: every one was answered)."""

    def record(self, review: BaseModel, events: Sequence[Mapping[str, Any]]) -> None:
        self.write_error = None
        if not isinstance(review, Review):
            return
        job = _Job(record_from_review(review, events))
        self.last_record = job.record
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            self.write_error = (
                f"{self.max_pending} records are already waiting for {self.sink.shown}; this one was dropped"
            )
            return
        self._start()
        if not job.done.wait(self.wait_s):
            self._unanswered = job
            self.write_error = f"{self.sink.shown} did not answer within {self.wait_s:g} s"
        elif job.error is not None:
            self.write_error = job.error

    def _start(self) -> None:
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="codejury-store-recorder", daemon=True)
                self._worker.start()

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                self.sink.write(job.record)
            except Exception as exc:  # a sink's failure is reported, never raised into the review
                job.error = str(exc) or type(exc).__name__
            finally:
                job.done.set()

    @property
    def pending(self) -> int:
        """Records waiting for the store."""
        return self._queue.qsize()

    @property
    def store_down(self) -> bool:
        """True while a record the store did not answer in time is still unwritten."""
        job = self._unanswered
        return job is not None and not job.done.is_set()

    def close(self, timeout_s: float | None = None) -> None:
        """Let the worker write what is queued, waiting at most ``timeout_s`` in all, then release the sink.

        By default that is ``wait_s``, or nothing at all while the store is down (``store_down``): the
        review already said it was not recorded, and exiting must not wait on the store twice."""
        if timeout_s is None:
            timeout_s = 0.0 if self.store_down else self.wait_s
        worker = self._worker
        if worker is not None and worker.is_alive():
            deadline = time.monotonic() + timeout_s
            try:
                self._queue.put(None, timeout=timeout_s)
            except queue.Full:
                return
            worker.join(max(0.0, deadline - time.monotonic()))
            if worker.is_alive():
                return  # still stuck on the store: the daemon thread dies with the process
        self.sink.close()


def open_sink(target: RecordTarget, env: Mapping[str, str]) -> RecordSink:
    """The sink for a target that records (not ``none``)."""
    if target.kind == "service":
        from codejury.record.ingest import IngestClient

        return IngestClient(target, env)
    from codejury.record.store import Store

    return Store(target)


def store_recorder(url: str | None, env: Mapping[str, str]) -> StoreRecorder | None:
    """The recorder for ``record.url`` (already validated by the config schema); None for ``none``."""
    target = parse_record_url(url)
    if target.kind == "none":
        return None
    return StoreRecorder(open_sink(target, env))
