"""The log lines of ``codejury serve`` and ``codejury worker``: text, or JSON lines (``--log-format json``).

Text, the default, is what a person reads: ``codejury: LINE`` on stderr. JSON is what a log
pipeline reads: one object per line on stderr (wrapped here),

    {"time": "2026-05-01T12:00:00.123Z", "level": "info", "message": "gitlab:a/w!7: reviewed and published",
     "job": "gitlab:a/w!7"}

with ``job`` (the merge request's key) on the lines written while a job runs, and ``logger`` on the
lines of the libraries underneath (uvicorn, Procrastinate), which go through the same handler once
``install`` has run. codejury's own lines are at level ``info`` (what went wrong with a job is in
its message, and counted in ``/metrics``); the libraries' keep theirs. Either way every line is
scrubbed of the process's known secrets first (a forge token, a webhook secret, any variable named
``*_TOKEN``, ``*_KEY``, ``*_SECRET``…), as ``codejury.secrets.redact_env`` does.

The job key is a context variable (``job_context``): set by the queue around each job and by the
job runner on the review loop, so a line knows its job without every caller passing it.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, TextIO

if TYPE_CHECKING:
    from codejury.secrets import Redactor

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")
LOG_FORMAT_ENV = "CODEJURY_LOG_FORMAT"
JOB_KEY: ContextVar[str | None] = ContextVar("codejury_job_key", default=None)


@contextmanager
def job_context(key: str) -> Iterator[None]:
    """Lines written inside carry ``key`` as their job."""
    token = JOB_KEY.set(key)
    try:
        yield
    finally:
        JOB_KEY.reset(token)


class ServiceLog:
    """A ``say`` for the service and its workers: ``log(line)`` writes one scrubbed line, text or JSON."""

    def __init__(
        self,
        fmt: LogFormat = "text",
        *,
        stream: TextIO | None = None,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        from codejury.secrets import Redactor  # not at import: `codejury --help` stays light

        self.fmt = fmt
        self.stream = stream
        self.redactor: Redactor = Redactor.from_env(env)
        self.clock = clock
        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        self.emit("info", line)

    def emit(self, level: str, message: str, *, logger: str | None = None) -> None:
        message = self.redactor.redact(message)
        if self.fmt == "json":
            entry: dict[str, str] = {"time": _iso(self.clock()), "level": level, "message": message}
            key = JOB_KEY.get()
            if key is not None:
                entry["job"] = self.redactor.redact(key)
            if logger is not None:
                entry["logger"] = logger
            text = json.dumps(entry, ensure_ascii=False)
        else:
            text = f"codejury: {message}" if logger is None else f"{logger}: {level.upper()}: {message}"
        stream = self.stream if self.stream is not None else sys.stderr
        with self._lock:  # one line at a time from the serving loop, the review loop and library threads
            stream.write(text + "\n")
            stream.flush()

    def install(self) -> None:
        """Send the libraries' log records (warnings and up; uvicorn's own at its level) through this log."""
        root = logging.getLogger()
        for handler in list(root.handlers):
            root.removeHandler(handler)
        root.addHandler(_Handler(self))
        root.setLevel(logging.WARNING)


class _Handler(logging.Handler):
    def __init__(self, log: ServiceLog) -> None:
        super().__init__()
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + logging.Formatter().formatException(record.exc_info)
            self.log.emit(record.levelname.lower(), message, logger=record.name)
        except Exception:
            self.handleError(record)


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
