from __future__ import annotations

import io
import json
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from codejury.findings import Usage
from codejury.record import events as events_mod
from codejury.record.events import EventLog
from codejury.secrets import REDACTED


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_jsonl_lines_with_envelope_and_seq(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "events.jsonl"
    with EventLog(path, run_id="run1") as log:
        log.emit("plan", tier="full", reviewers=["security", "performance"])
        log.emit("review_finished", verdict="approved", findings=0)
    records = _lines(path)
    assert [r["seq"] for r in records] == [1, 2]
    assert [r["type"] for r in records] == ["plan", "review_finished"]
    assert list(records[0]) == ["ts", "run_id", "seq", "type", "tier", "reviewers"]
    assert records[0]["run_id"] == "run1"
    assert records[0]["reviewers"] == ["security", "performance"]
    ts = datetime.fromisoformat(records[0]["ts"].replace("Z", "+00:00"))
    assert ts.utcoffset() is not None and ts.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


def test_file_is_appended_not_truncated(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(path, run_id="a") as log:
        log.emit("one")
    with EventLog(path, run_id="b") as log:
        log.emit("two")
    assert [(r["run_id"], r["type"]) for r in _lines(path)] == [("a", "one"), ("b", "two")]


def test_file_created_even_without_events(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "events.jsonl"
    with EventLog(path, run_id="r"):
        pass
    assert path.exists() and path.read_text() == ""


def test_values_are_made_json_safe() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd!"

    log = EventLog(None, run_id="r")
    log.emit(
        "x",
        path=Path("/tmp/a"),
        usage=Usage(input_tokens=3),
        tags={"b", "a"},
        odd=Odd(),
        nan=float("nan"),
        nested={1: (1, 2)},
        raw=b"bytes",
    )
    (event,) = log.events
    assert event["path"] == "/tmp/a"
    assert event["usage"]["input_tokens"] == 3
    assert event["tags"] == ["a", "b"]
    assert event["odd"] == "odd!"
    assert event["nan"] == "nan"
    assert event["nested"] == {"1": [1, 2]}
    assert event["raw"] == "bytes"


def test_reserved_keys_cannot_be_overwritten() -> None:
    log = EventLog(None, run_id="r")
    log.emit("x", seq=99, ts="fake", run_id="other")
    (event,) = log.events
    assert event["seq"] == 1 and event["run_id"] == "r" and event["ts"] != "fake"
    assert event["field_seq"] == 99 and event["field_run_id"] == "other"


def test_known_secrets_redacted_anywhere(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    secret = "hunter2-very-secret"
    quoted = 'pa"ss\\word'
    with EventLog(path, run_id="r", secrets=[secret, quoted, "short", ""]) as log:
        log.emit("error", message=f"auth failed with {secret}", nested={"k": [f"x{secret}y"]}, **{secret: 1})
        log.emit("quoted", value=f"before {quoted} after", short="short stays")
    text = path.read_text(encoding="utf-8")
    assert secret not in text
    assert 'pa\\"ss' not in text
    records = _lines(path)
    assert records[0]["message"] == f"auth failed with {REDACTED}"
    assert records[0]["nested"] == {"k": [f"x{REDACTED}y"]}
    assert records[0][REDACTED] == 1
    assert records[1]["value"] == f"before {REDACTED} after"
    assert records[1]["short"] == "short stays"  # secrets under 8 characters are not scrubbed
    assert log.events == records


def test_secret_straddling_json_syntax_still_gives_valid_json() -> None:
    log = EventLog(None, run_id="r", secrets=['abcd","cdef'])
    log.emit("x", first="abcd", cdef='abcd","cdef')
    (event,) = log.events
    assert event["cdef"] == REDACTED
    assert event["first"] == "abcd"


@pytest.mark.parametrize(
    ("leak", "expected"),
    [
        ("sk-proj-AbCdEf0123456789xyzXYZ", REDACTED),
        ("sk-ant-api03-AbCdEf0123456789_xyz-XYZ", REDACTED),
        ("glpat-AbCdEf0123456789xyzX", REDACTED),
        ("ghp_" + "A1b2C3d4E5" * 4, REDACTED),
        ("gho_" + "A1b2C3d4E5" * 4, REDACTED),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", REDACTED),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", f"Authorization: Bearer {REDACTED}"),
        ("bearer abcdefghijklmnopqrstuvwxyz", f"bearer {REDACTED}"),
    ],
)
def test_key_patterns_redacted(leak: str, expected: str) -> None:
    log = EventLog(None, run_id="r")
    log.emit("x", message=f"got {leak} back")
    assert log.events[0]["message"] == f"got {expected} back"


@pytest.mark.parametrize(
    "text",
    ["risk-assessment-of-the-whole-module", "task-12345678901234567890", "bearer authentication", "sk-short"],
)
def test_ordinary_text_not_redacted(text: str) -> None:
    log = EventLog(None, run_id="r")
    log.emit("x", message=text)
    assert log.events[0]["message"] == text


def test_memory_sink_keeps_events_and_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events_mod, "MEMORY_LIMIT", 5)
    log = EventLog(None, run_id="r")
    for i in range(8):
        log.emit("tick", i=i)
    log.close()
    assert [e["i"] for e in log.events] == [3, 4, 5, 6, 7]
    assert [e["seq"] for e in log.events] == [4, 5, 6, 7, 8]


def test_file_sink_also_keeps_memory_copy(tmp_path: Path) -> None:
    with EventLog(tmp_path / "e.jsonl", run_id="r") as log:
        log.emit("a")
    assert [e["type"] for e in log.events] == ["a"]


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_batching_by_lines_time_and_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(time, "monotonic", clock)
    stream = io.StringIO()
    with EventLog(stream, run_id="r") as log:
        for i in range(99):
            log.emit("e", i=i)
        assert stream.getvalue() == ""  # buffered: fewer than 100 lines, no time passed
        log.emit("e", i=99)
        assert len(stream.getvalue().splitlines()) == 100  # the 100th line flushes the batch
        log.emit("e", i=100)
        assert len(stream.getvalue().splitlines()) == 100
        clock.now += 0.049
        log.emit("e", i=101)
        assert len(stream.getvalue().splitlines()) == 100
        clock.now += 0.002  # 51 ms since the last write
        log.emit("e", i=102)
        assert len(stream.getvalue().splitlines()) == 103
        log.emit("e", i=103)
        assert len(stream.getvalue().splitlines()) == 103
    lines = stream.getvalue().splitlines()
    assert len(lines) == 104  # the rest flushed on exit
    assert [json.loads(line)["i"] for line in lines] == list(range(104))
    assert not stream.closed  # a stream we did not open stays open


def test_file_batch_flushed_on_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "monotonic", _Clock())
    path = tmp_path / "e.jsonl"
    with EventLog(path, run_id="r") as log:
        log.emit("a")
        log.emit("b")
        assert path.read_text() == ""
    assert [r["type"] for r in _lines(path)] == ["a", "b"]


def test_emit_after_close_is_written_at_once(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = EventLog(path, run_id="r")
    log.close()
    log.emit("late")
    assert [r["type"] for r in _lines(path)] == ["late"]


def test_threads_get_unique_seq_and_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with EventLog(path, run_id="r") as log:

        def work(n: int) -> None:
            for i in range(200):
                log.emit("t", worker=n, i=i, pad="x" * 50)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    records = _lines(path)
    assert len(records) == 1600
    assert sorted(r["seq"] for r in records) == list(range(1, 1601))
    assert [r["seq"] for r in records] == sorted(r["seq"] for r in records)
