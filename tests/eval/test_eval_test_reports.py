"""A case's ``tests`` (JUnit reports) reach its review as ``--tests``: the failing test backs the finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codejury import session
from codejury.eval.dataset import load_cases
from codejury.eval.runner import EvalSettings, review_case
from codejury.testing.scripted import Final, Raw, ScriptedResolver
from codejury.testing.scripted import finding as model_finding
from tests.analyzers.test_junit import REPORT, TEST_ID, diff_file


async def test_a_case_with_a_test_report_is_reviewed_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    diff_file(tmp_path)
    (tmp_path / "junit.xml").write_text(REPORT, encoding="utf-8")
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text(json.dumps({"id": "cart", "diff": "change.diff", "tests": ["junit.xml"]}) + "\n")
    [case] = load_cases(dataset)
    settings = EvalSettings(
        model="scripted:reviewer",
        model_for=("coordinator=scripted:coordinator",),
        plugins=("codejury.testing.scripted",),
        env={},
    )
    found = model_finding("cart.py", 6, "Total applies a discount nobody asked for", severity="warning")
    resolver = ScriptedResolver({"reviewer": [Final([found])], "coordinator": [Raw({"decisions": []})]})
    with resolver.active():
        async with session.Session(
            session.load_plugins(settings.plugins), warn=lambda _line: None, progress=None
        ) as reviews:
            run = await review_case(case, settings, "review", reviews)
    assert run.error is None
    [finding] = run.findings
    assert finding.evidence == [f"junit:{TEST_ID}"]
