"""Every model call is traced under an agent named after its job (``invoke_agent <name>``), never
the anonymous ``invoke_agent agent``: the reviewers, the coordinator, the verifier's check, the naive
baseline, the eval's judge and ``/codejury ask``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic_ai import models
from pydantic_ai.models.function import FunctionModel

from codejury.eval.dataset import ExpectedComment
from codejury.eval.judge import judge_pairs
from codejury.eval.results import FoundFinding
from codejury.findings import Review
from codejury.models.pricing import PriceTable
from codejury.models.profiles import CapabilityProfile, ResolvedModel
from codejury.pipeline import ReviewOptions, review
from codejury.plugins import Plugins
from codejury.record.events import EventLog
from codejury.service.ask import answer_question
from codejury.service.requests import ChatCommand
from codejury.session import Session
from codejury.telemetry.tracing import start_tracing
from codejury.testing.scripted import Final, Raw, ScriptedModel, ScriptedResolver, finding
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, scripted_settings
from tests.telemetry.fakes import FakeCollector
from tests.telemetry.test_tracing import traced_review

PATH = "app/auth/users.py"


async def agent_names(collector: FakeCollector, work: Callable[[], Awaitable[Any]]) -> set[str]:
    """The ``invoke_agent`` span names of what ``work`` runs while tracing exports to ``collector``."""
    handle = start_tracing({"OTEL_EXPORTER_OTLP_ENDPOINT": collector.origin})
    assert handle is not None
    try:
        await work()
    finally:
        handle.close(lambda line: None)
    return {s.name for s in collector.spans if s.name.startswith("invoke_agent")}


async def test_the_reviewers_coordinator_and_verifier_are_named(tmp_path: Path) -> None:
    with FakeCollector() as collector:
        _, spans, _ = await traced_review(tmp_path, collector, scripted_settings(verify="all"))
    names = {s.name for s in spans if s.name.startswith("invoke_agent")}
    assert {"invoke_agent security", "invoke_agent coordinator", "invoke_agent verifier-check"} <= names
    assert "invoke_agent agent" not in names


async def test_the_naive_baseline_is_named(tmp_path: Path) -> None:
    resolver = ScriptedResolver({"code_quality": [Final([finding(PATH, 10, "SQL injection")])]})

    async def naive() -> None:
        with EventLog(None, run_id="naive") as events:
            opts = ReviewOptions(
                settings=scripted_settings(),
                env={},
                events=events,
                warn=lambda _m: None,
                plugins=Plugins(resolver.plugin_manager()),
                baseline="naive",
            )
            assert isinstance(await review(make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)}), opts), Review)

    with FakeCollector() as collector:
        assert await agent_names(collector, naive) == {"invoke_agent naive"}


async def test_the_eval_judge_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)
    script = ScriptedModel([Raw({"reason": "same", "same_problem": True})])
    judge = ResolvedModel(spec="scripted:judge", model=FunctionModel(script), profile=CapabilityProfile())
    found = [FoundFinding(path=PATH, start_line=10, end_line=10, title="SQL injection")]
    expected = [ExpectedComment(path=PATH, start_line=10, end_line=10, note="Use parameters.")]

    async def judged() -> None:
        accepted, _, _ = await judge_pairs(found, expected, judge, PriceTable({}))
        assert accepted == {(0, 0)}

    with FakeCollector() as collector:
        assert await agent_names(collector, judged) == {"invoke_agent eval-judge"}


async def test_ask_is_named(tmp_path: Path) -> None:
    resolver = ScriptedResolver({"ask": [Raw({"answer": "It adds a user lookup.", "lighthearted": False})]})
    setup = SimpleNamespace(model="scripted:ask", model_for=(), config_file=None, remote_config=None)
    command = ChatCommand(name="ask", text="what does this change do?", author="alice", comment_id=7)

    async def asked() -> None:
        async def no_file(path: str) -> str | None:
            return None

        answer = await answer_question(
            make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)}),
            command,
            already_lighthearted=False,
            read_head=no_file,
            env={"CODEJURY_RECORD_URL": "none"},
            setup=setup,
            session=Session(Plugins(resolver.plugin_manager())),
            metrics=None,
            say=lambda _m: None,
        )
        assert answer.answered, answer.reply

    with FakeCollector() as collector:
        assert await agent_names(collector, asked) == {"invoke_agent ask"}
