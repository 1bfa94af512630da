"""A weak model reviews a lite or full change in one generalist call unless weak_panel = "panel"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings

from codejury.findings import Plan, Review
from codejury.reviewers.roster import BUILTIN_REVIEWERS
from codejury.testing.scripted import Final, Raw, finding

PATH = "app/auth/users.py"  # a security-sensitive path: the full tier (four specialists)
ONE_MODEL = {n: "scripted:one" for n in [*BUILTIN_REVIEWERS, "coordinator"]}
WEAK = ("scripted:one",)


def cfg(models: dict[str, str], **changes: Any) -> Any:
    return scripted_settings(**changes).model_copy(update={"reviewer_models": models})


def panel_names(result: Review | Plan) -> list[str]:
    assert isinstance(result, Review)
    return [r.name for r in result.reviewers if not r.name.endswith(":check")]


async def test_the_specialists_of_a_weak_model_fold_into_one_generalist_call(tmp_path: Path) -> None:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    real = finding(PATH, 10, "SQL injection in find_user", severity="warning")
    scripts = {"one": [Final([real]), Raw({"quote": "query", "holds": True, "line": 10})]}
    result, resolver, events = await run_review(change, scripts, settings=cfg(ONE_MODEL, weak_models=WEAK))
    assert panel_names(result) == ["generalist"]
    assert isinstance(result, Review) and [(f.start_line, f.reviewer) for f in result.findings] == [(10, "generalist")]
    assert resolver.models["one"].calls == 2  # type: ignore[attr-defined]  # one review call, one check
    folded = [e for e in events.events if e["type"] == "panel_folded"]
    assert folded[0]["reviewers"] == ["security", "performance", "code_quality", "documentation"]


async def test_the_dry_run_plan_shows_the_folded_panel(tmp_path: Path) -> None:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    plan, _, _ = await run_review(change, {}, settings=cfg(ONE_MODEL, weak_models=WEAK), dry_run=True)
    assert isinstance(plan, Plan) and [r.name for r in plan.reviewers] == ["generalist"]


async def test_weak_panel_panel_keeps_one_call_per_reviewer(tmp_path: Path) -> None:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    panel = cfg(ONE_MODEL, weak_models=WEAK, weak_panel="panel")
    result, _, _ = await run_review(change, {"one": [Final([])] * 4}, settings=panel)
    assert panel_names(result) == ["security", "performance", "code_quality", "documentation"]


async def test_a_strong_model_or_specialists_on_different_models_are_not_folded(tmp_path: Path) -> None:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    strong, _, _ = await run_review(change, {"one": [Final([])] * 4}, settings=cfg(ONE_MODEL))
    assert panel_names(strong) == ["security", "performance", "code_quality", "documentation"]
    mixed = {**ONE_MODEL, "security": "scripted:security"}
    result, _, _ = await run_review(change, {"one": [Final([])] * 3}, settings=cfg(mixed, weak_models=WEAK))
    assert panel_names(result) == ["generalist", "security"]  # security keeps its own model; the rest fold


async def test_the_one_reviewer_of_a_model_reads_its_focus_before_the_change(tmp_path: Path) -> None:
    # The embedded model caches prompt prefixes: the focus of a reviewer that is alone on its model goes
    # with the shared rules (reused by the next review); several reviewers share the change instead.
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    weak = cfg(ONE_MODEL, weak_models=WEAK)
    _, resolver, _ = await run_review(change, {"one": [Final([])]}, settings=weak, tools=False)
    [alone] = [p for p in resolver.models["one"].prompts if "Numbered patches" in p]
    assert alone.index("# Your task") < alone.index("You are the only reviewer") < alone.index("Numbered patches")
    assert alone.rstrip().endswith('{"notes": "...", "findings": [...]}.')  # the answer format still comes last
    panel = cfg(ONE_MODEL, weak_models=WEAK, weak_panel="panel")
    _, resolver, _ = await run_review(change, {"one": [Final([])] * 4}, settings=panel, tools=False)
    shared = [p for p in resolver.models["one"].prompts if "Numbered patches" in p]
    assert len(shared) == 4 and all(p.index("Numbered patches") < p.index("# Your task") for p in shared)
    assert len({p.split("# Your task")[0] for p in shared}) == 1  # one prefix for the four reviewers
