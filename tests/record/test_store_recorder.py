"""The store recorder: on by default, every review recorded, never more than 2 s against a dead store."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from codejury.record import schema
from codejury.record.model import ReviewRecord
from codejury.record.store import Store
from codejury.record.store_recorder import StoreRecorder, store_recorder
from codejury.record.target import DEFAULT_FILE, parse_record_url
from codejury.stages import record as stage
from codejury.stages.record import RECORD_TIMEOUT_S
from codejury.testing import review_seed as seed
from tests.record.test_record_stage import PATH, reviewed
from tests.timing import FOREVER, bounded, limit

TOKEN = "ingest-token-0123456789"


def test_recording_is_on_by_default_into_the_users_data_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = store_recorder(None, {})
    assert recorder is not None
    target = recorder.sink.shown
    assert target.endswith(f"/codejury/{DEFAULT_FILE}")
    import os

    assert target.removeprefix("sqlite:///").startswith(os.environ["XDG_DATA_HOME"])  # the suite's, not the user's
    assert store_recorder("none", {}) is None


async def test_a_review_through_the_pipeline_is_recorded_with_its_change(
    tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What is recorded, not how fast: a healthy store on a busy machine gets all the time it needs (the 2 s
    # bounds are the dead-store tests').
    monkeypatch.setattr(stage, "RECORD_TIMEOUT_S", 60.0)
    recorder = store_recorder(store_url, {})
    assert recorder is not None
    recorder.wait_s = 60.0
    warnings: list[str] = []
    result = await reviewed(tmp_path, [recorder], warnings)
    recorder.close()
    assert warnings == []
    store = Store(parse_record_url(store_url))
    try:
        with store.connect() as conn:
            row = conn.execute(select(schema.reviews)).one()
            found = conn.execute(select(schema.findings)).one()
            names = set(conn.execute(select(schema.reviewer_runs.c.name)).scalars())
    finally:
        store.close()
    assert (row.verdict, row.tier) == (result.verdict, result.tier)
    assert (found.path, found.title, found.reviewer) == (PATH, "SQL injection", "security")
    assert {"security", "coordinator"} <= names


def test_the_command_line_records_a_git_review_with_repository_branch_and_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codejury.testing.scripted import Final, Raw, ScriptedResolver, finding
    from tests.engine_helpers import AUTH_NEW, AUTH_OLD
    from tests.test_cli import git, invoke

    root = tmp_path / "repo"
    (root / "app/auth").mkdir(parents=True)
    (root / "app/auth/users.py").write_text(AUTH_OLD)
    (root / ".codejury.toml").write_text("analyzers = false\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Initial")
    git(root, "checkout", "-q", "-b", "feature")
    (root / "app/auth/users.py").write_text(AUTH_NEW)
    git(root, "commit", "-q", "-am", "Add user lookup")
    resolver = ScriptedResolver(
        {
            "reviewer": [Final([finding("app/auth/users.py", 3, "SQL injection")])],
            "coordinator": [Raw({"decisions": []})],
        }
    )
    url = f"sqlite:///{tmp_path}/store.sqlite3"
    monkeypatch.setenv("CODEJURY_RECORD_URL", url)
    with resolver.active():  # the scripted models, registered by --plugin codejury.testing.scripted
        code, _, err = invoke(
            "review", "--plugin", "codejury.testing.scripted", "--model", "scripted:reviewer",
            "--model-for", "coordinator=scripted:coordinator", "--fail-on", "never", "--format", "json", cwd=root,
        )  # fmt: skip
    assert code == 0, err
    store = Store(parse_record_url(url))
    try:
        with store.connect() as conn:
            row = conn.execute(select(schema.reviews)).one()
    finally:
        store.close()
    import subprocess

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    assert (row.repository, row.change_id, row.head_sha) == ("repo", "feature", head)  # no origin: the directory


class Blocking:
    """A sink that never answers until released (a store that accepted the connection and hangs)."""

    shown = "sqlite:///hanging"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.written: list[ReviewRecord] = []

    def write(self, record: ReviewRecord) -> bool:
        self.release.wait(30)
        self.written.append(record)
        return True

    def close(self) -> None: ...


def test_closing_writes_what_is_queued_but_never_waits_again_on_a_store_that_did_not_answer() -> None:
    answering = Blocking()
    answering.release.set()
    recorder = StoreRecorder(answering)
    recorder.record(seed.review(), seed.events())
    recorder.close()
    assert len(answering.written) == 1 and recorder.write_error is None
    hung = Blocking()
    recorder = StoreRecorder(hung, wait_s=0.3)
    recorder.record(seed.review(), seed.events())
    assert recorder.store_down
    recorder.wait_s = 30.0  # a close that waited on the store again would wait this long (the sink's whole hang)
    with bounded(0, hung_s=30, what="closing"):
        recorder.close()  # the review already said it was not recorded: exiting costs nothing more
    hung.release.set()


@pytest.mark.waits
def test_a_hanging_store_costs_at_most_two_seconds_and_pending_records_are_capped_at_50() -> None:
    sink = Blocking()
    recorder = StoreRecorder(sink, wait_s=0.05)
    review, events = seed.review(), seed.events()
    # each record waits its 0.05 s at most; one that waited for the store would wait out Blocking's 30 s
    with bounded(51 * recorder.wait_s, hung_s=30, what="51 records to a hanging store"):
        recorder.record(review, events)
        assert recorder.write_error == "sqlite:///hanging did not answer within 0.05 s"
        for _ in range(49):  # the first is being written; 49 more wait, the 50th waiting fills the queue
            recorder.record(review, events)
        recorder.record(review, events)
        assert recorder.pending == 50
        recorder.record(review, events)
        assert recorder.write_error == "50 records are already waiting for sqlite:///hanging; this one was dropped"
    sink.release.set()
    recorder.close(timeout_s=10)
    assert len(sink.written) == 51  # everything that was queued is written once the store answers


@pytest.mark.waits
@pytest.mark.parametrize("scheme", ["postgresql", "http"])
async def test_a_review_against_a_dead_store_takes_at_most_two_seconds_more_and_says_it_was_not_recorded(
    tmp_path: Path, silent_server: int, scheme: str
) -> None:
    url = f"{scheme}://127.0.0.1:{silent_server}/reviews"
    recorder = store_recorder(url, {"CODEJURY_INGEST_TOKEN": TOKEN})
    assert recorder is not None
    warnings: list[str] = []
    started = time.monotonic()
    await reviewed(tmp_path, [], [])
    plain = time.monotonic() - started
    started = time.monotonic()
    await reviewed(tmp_path, [recorder], warnings)
    assert time.monotonic() - started - plain < limit(RECORD_TIMEOUT_S, hung_s=FOREVER)  # the server never answers
    assert len(warnings) == 1 and "the review was not recorded there" in warnings[0]
    assert "did not answer within" in warnings[0] or "no answer within" in warnings[0]
    assert TOKEN not in warnings[0]


class Ingest(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/svc/api/ingest":
            self.send_response(404)
        elif self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self.send_response(401)
        elif self.headers.get("Content-Type") != "application/json":
            self.send_response(415)
        else:
            Ingest.received.append(json.loads(body))
            self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def ingest_server() -> Iterator[str]:
    Ingest.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Ingest)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/svc/"
    server.shutdown()
    server.server_close()


def record_once(url: str, env: Mapping[str, str], events: Sequence[Mapping[str, Any]]) -> StoreRecorder:
    recorder = store_recorder(url, env)
    assert recorder is not None
    recorder.record(seed.review(findings=[seed.finding()]), events)
    recorder.close()
    return recorder


def test_a_review_service_receives_the_record_as_json_with_the_token(ingest_server: str) -> None:
    recorder = record_once(ingest_server, {"CODEJURY_INGEST_TOKEN": TOKEN}, seed.events(change_id="#12"))
    assert recorder.write_error is None
    (payload,) = Ingest.received
    record = ReviewRecord.model_validate(payload)  # the payload is the record the store writes
    assert record == recorder.last_record
    assert (record.change_id, record.findings[0].fingerprint) == ("#12", recorder.last_record.findings[0].fingerprint)


@pytest.mark.parametrize(
    ("env", "error"),
    [
        ({"CODEJURY_INGEST_TOKEN": "wrong-token-999"}, "refused the token in CODEJURY_INGEST_TOKEN (HTTP 401)"),
        ({}, "CODEJURY_INGEST_TOKEN is not set"),
    ],
)
def test_a_refused_or_missing_token_is_reported_without_the_token(
    ingest_server: str, env: dict[str, str], error: str
) -> None:
    recorder = record_once(ingest_server, env, seed.events())
    assert recorder.write_error is not None and error in recorder.write_error
    assert "wrong-token-999" not in recorder.write_error
    assert Ingest.received == []
