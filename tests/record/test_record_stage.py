"""The record stage: recorders get the finished review and its events, and never block or fail it."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from codejury.findings import Review
from codejury.plugins import Plugins
from codejury.record.events import EventLog
from codejury.record.recorders import JsonlRecorder
from codejury.runstate import ReviewOptions
from codejury.stages.record import RECORD_TIMEOUT_S
from codejury.testing.scripted import Final, Raw, ScriptedResolver, finding
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, scripted_settings
from tests.timing import bounded

PATH = "app/auth/users.py"


class Broken:
    def record(self, review: BaseModel, events: Sequence[Mapping[str, Any]]) -> None:
        raise ConnectionError("store unreachable")

    def close(self) -> None: ...


class Hanging:
    """A recorder that hangs for 30 s, or until released."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def record(self, review: BaseModel, events: Sequence[Mapping[str, Any]]) -> None:
        self.release.wait(30)

    def close(self) -> None: ...


async def reviewed(tmp_path: Path, recorders: list[Any], warnings: list[str]) -> Review:
    from codejury.pipeline import review

    resolver = ScriptedResolver(
        {"security": [Final([finding(PATH, 10, "SQL injection")])], "coordinator": [Raw({"decisions": []})]}
    )
    with EventLog(None, run_id="rec") as events:
        opts = ReviewOptions(
            settings=scripted_settings(),
            env={},
            events=events,
            warn=warnings.append,
            plugins=Plugins(resolver.plugin_manager()),
            recorders=recorders,
        )
        result = await review(make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)}), opts)
    assert isinstance(result, Review)
    return result


async def test_the_jsonl_recorder_appends_the_events_and_the_review(tmp_path: Path) -> None:
    path = tmp_path / "reviews.jsonl"
    result = await reviewed(tmp_path, [JsonlRecorder(path)], [])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[-1]["type"] == "review" and lines[-1]["review"]["verdict"] == result.verdict
    assert {"plan", "review_finished"} <= {line["type"] for line in lines[:-1]}


@pytest.mark.waits
async def test_a_broken_or_hanging_recorder_costs_at_most_two_seconds_and_one_warning(tmp_path: Path) -> None:
    warnings: list[str] = []
    path = tmp_path / "after.jsonl"
    hanging = Hanging()
    try:
        # the review itself is quick; the hanging recorder is cut at 2 s, where it would hang for 30
        with bounded(RECORD_TIMEOUT_S, hung_s=30, what="the review"):
            result = await reviewed(tmp_path, [Broken(), hanging, JsonlRecorder(path)], warnings)
    finally:
        hanging.release.set()  # its thread ends with the test
    assert result.findings  # the review is whole
    assert [w for w in warnings if "recorder" in w] == [
        "recorder Broken failed, the review was not recorded there: store unreachable",
        "recorder Hanging failed, the review was not recorded there: no answer within 2 s",
    ]
    assert path.exists()  # the recorders after them still ran


def test_a_plugins_table_turns_a_registered_recorder_on_from_the_command_line(tmp_path: Path, monkeypatch: Any) -> None:
    from click.testing import CliRunner

    from codejury.cli import cli
    from tests.engine_helpers import unified_diff

    resolver = ScriptedResolver(
        {"reviewer": [Final([finding(PATH, 10, "SQL injection")])], "coordinator": [Raw({"decisions": []})]}
    )
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff(PATH, AUTH_OLD, AUTH_NEW))
    store = tmp_path / "store" / "reviews.jsonl"
    config = tmp_path / "codejury.toml"
    config.write_text(f'analyzers = false\n[plugins.jsonl]\npath = "{store}"\n')
    args = ["review", "--diff", str(diff), "--config", str(config), "--model", "scripted:reviewer", "--format", "json"]
    args += ["--model-for", "coordinator=scripted:coordinator", "--plugin", "codejury.testing.scripted"]
    with resolver.active():
        result = CliRunner().invoke(cli, [*args, "--fail-on", "never"])
    assert result.exit_code == 0, result.stderr
    recorded = [json.loads(line) for line in store.read_text().splitlines()]
    printed = json.loads(result.stdout)
    assert recorded[-1]["review"]["verdict"] == printed["verdict"] == "approved_with_comments"
    assert recorded[-1]["review"]["findings"][0]["title"] == "SQL injection"
