"""The JSONL event stream: one self-contained, secret-free JSON object per line, written in batches.

``EventLog(path_or_stream_or_None, run_id=..., secrets=..., redactor=...)`` is a thread-safe context manager.
Each ``emit(type, **fields)`` becomes ``{"ts", "run_id", "seq", "type", **fields}``; values that JSON
cannot hold are converted (pydantic models dumped, paths and the rest ``str()``-ed). Redaction works
on the serialised line, so a secret is caught wherever it hides (a nested value, an error message):
every known secret (the run's ``codejury.secrets.Redactor``, shared with every other output, so a
provider key the pipeline learns later is scrubbed here too), and anything shaped like a common
API key or a bearer token, becomes ``[REDACTED]``. Lines are buffered and written when 100 have
gathered, when 50 ms have passed since the last write (checked at each emit), and on
``flush()``/``close()``. The last ``MEMORY_LIMIT`` events are always kept in memory (``events``)
for tests and the pipeline.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from pathlib import Path, PurePath
from types import TracebackType
from typing import IO, Any

from pydantic import BaseModel

from codejury.secrets import REDACTED, Redactor

BATCH_LINES = 100
BATCH_SECONDS = 0.05
MEMORY_LIMIT = 10_000
_MAX_DEPTH = 20

_KEY_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![A-Za-z0-9_-])sk-(?:ant-)?[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{20,}"), REDACTED),
)
_BEARER = re.compile(r"(?i)\b(bearer)(\s+|%20)([A-Za-z0-9._~+/=-]{8,})")


def _redact_bearer(match: re.Match[str]) -> str:
    token = match.group(3)
    # Prose ("bearer authentication") stays; token-shaped words (a digit, or long) go.
    if any(c.isdigit() for c in token) or len(token) >= 24:
        return match.group(1) + match.group(2) + REDACTED
    return match.group(0)


def _jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data: containers walked, models dumped, anything else ``str()``-ed."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth >= _MAX_DEPTH:
        return str(value)
    if isinstance(value, BaseModel):
        return _jsonable(value.model_dump(mode="json"), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value), depth + 1)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | deque):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        items = [_jsonable(v, depth + 1) for v in value]
        return sorted(items, key=repr)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return _jsonable(value.value, depth + 1)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class EventLog:
    """A JSONL event sink (a path, an open text stream, or ``None`` for memory only)."""

    def __init__(
        self,
        sink: Path | IO[str] | None,
        *,
        run_id: str,
        secrets: Iterable[str] = (),
        redactor: Redactor | None = None,
    ) -> None:
        self.run_id = run_id
        self._path: Path | None = None
        self._stream: IO[str] | None = None
        if isinstance(sink, str | PurePath):
            self._path = Path(sink)
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._path.touch()
        elif sink is not None:
            self._stream = sink
        self.redactor = redactor if redactor is not None else Redactor()
        """The run's redactor: what it knows (now or later) is scrubbed from every event."""
        self.redactor.add(secrets)
        self._lock = threading.Lock()
        self._seq = 0
        self._buffer: list[str] = []
        self._last_flush = time.monotonic()
        self._memory: deque[dict[str, Any]] = deque(maxlen=MEMORY_LIMIT)
        self._closed = False
        self.write_error: str | None = None
        """Why the log file stopped being written (a full disk): recording never fails a review."""

    def __enter__(self) -> EventLog:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def events(self) -> list[dict[str, Any]]:
        """The last ``MEMORY_LIMIT`` events, redacted, oldest first."""
        with self._lock:
            return list(self._memory)

    def redact(self, text: str) -> str:
        """``text`` with every known secret and key-shaped string replaced by ``[REDACTED]``."""
        text = self.redactor.redact(text)
        for pattern, replacement in _KEY_PATTERNS:
            text = pattern.sub(replacement, text)
        return _BEARER.sub(_redact_bearer, text)

    def _redact_values(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact(k): self._redact_values(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._redact_values(v) for v in value]
        return value

    def _serialise(self, record: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The redacted line and its parsed form (per value when a secret straddled JSON syntax)."""
        line = self.redact(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        try:
            return line, json.loads(line)
        except ValueError:
            data = self._redact_values(record)
            return json.dumps(data, ensure_ascii=False, separators=(",", ":")), data

    def emit(self, type: str, /, **fields: Any) -> None:
        """Record one event; reserved keys (ts, run_id, seq, type) in ``fields`` get a ``field_`` prefix."""
        with self._lock:
            self._seq += 1
            record: dict[str, Any] = {"ts": _utc_now(), "run_id": self.run_id, "seq": self._seq, "type": type}
            for key, value in fields.items():
                record[f"field_{key}" if key in record else key] = _jsonable(value)
            line, data = self._serialise(record)
            self._memory.append(data)
            if self._path is None and self._stream is None:
                return
            self._buffer.append(line)
            if self._closed or len(self._buffer) >= BATCH_LINES or time.monotonic() - self._last_flush >= BATCH_SECONDS:
                self._write_out()

    def flush(self) -> None:
        """Write every buffered line now."""
        with self._lock:
            self._write_out()

    def close(self) -> None:
        """Flush; later events are still recorded, each written at once. A passed-in stream stays open."""
        with self._lock:
            self._write_out()
            self._closed = True

    def _write_out(self) -> None:
        self._last_flush = time.monotonic()
        if not self._buffer:
            return
        text = "".join(line + "\n" for line in self._buffer)
        self._buffer.clear()
        if self._path is not None:
            # Opened per batch: no handle outlives a write, so nothing leaks if close() is never called.
            try:
                with self._path.open("a", encoding="utf-8") as fh:
                    fh.write(text)
            except OSError as exc:  # the review goes on; the caller reports ``write_error`` at the end
                self.write_error, self._path = exc.strerror or str(exc), None
        elif self._stream is not None:
            self._stream.write(text)
            self._stream.flush()
