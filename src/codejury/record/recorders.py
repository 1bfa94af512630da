"""Recorders: sinks for a finished review and its events (SQLite, a service's ingest endpoint …).

A recorder is registered through the ``codejury_register_recorders`` hook as
``name -> factory(settings) -> Recorder``, where ``settings`` is the recorder's own table
(``[plugins.NAME]``). The built-in ``jsonl`` recorder appends the run's events, then one
``review`` line, to a JSON Lines file. Recording never fails a review: a recorder that cannot
write keeps the reason in ``write_error`` for the caller to report. Whoever builds recorders closes
them when its reviews are done (``close_recorders``), so what a recorder still holds is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from codejury.errors import ConfigError


class Recorder(Protocol):
    """Receives one finished review with its events (already redacted ``EventLog.events``)."""

    def record(self, review: BaseModel, events: Sequence[Mapping[str, Any]]) -> None: ...

    def close(self) -> None: ...


class JsonlRecorder:
    """Appends the events, then ``{"type": "review", "review": …}``, as JSON lines to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.write_error: str | None = None

    def record(self, review: BaseModel, events: Sequence[Mapping[str, Any]]) -> None:
        lines = [json.dumps(dict(e), ensure_ascii=False, separators=(",", ":")) for e in events]
        lines.append(json.dumps({"type": "review", "review": review.model_dump(mode="json")}, ensure_ascii=False))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write("".join(line + "\n" for line in lines))
        except OSError as exc:
            self.write_error = exc.strerror or str(exc)

    def close(self) -> None:
        """Nothing is held open between records."""


def jsonl_recorder(settings: Mapping[str, Any]) -> JsonlRecorder:
    """The ``jsonl`` recorder's factory: ``settings["path"]`` is the file to append to."""
    path = settings.get("path")
    if not isinstance(path, str) or not path.strip():
        raise ConfigError("recorder jsonl: 'path' must name the file to append the review to")
    return JsonlRecorder(Path(path))


def close_recorders(recorders: Iterable[Recorder], warn: Callable[[str], None]) -> None:
    """Close each of ``recorders`` in turn (each flushes what it holds, within its own bound); one that
    raises is one warning line and the others are still closed."""
    for recorder in recorders:
        try:
            recorder.close()
        except Exception as exc:  # closing a sink must never fail the review it recorded
            warn(f"recorder {type(recorder).__name__} could not be closed: {exc}")
