"""collect_evidence: all analyzers at once, within a budget; a missing or broken one never sinks the review."""

from __future__ import annotations

import asyncio
from pathlib import Path

from codejury.analyzers import Analyzer, AnalyzerSkipped, collect_evidence, domain_for
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence
from tests.analyzers.helpers import make_change
from tests.timing import bounded, limit


def ev(analyzer: str, rule: str, line: int = 1) -> Evidence:
    return Evidence(
        analyzer=analyzer, rule=rule, path="a.py", start_line=line, end_line=line, severity="warning", message="m"
    )


class Returns:
    def __init__(self, *items: object, delay: float = 0.0) -> None:
        self.items = list(items)
        self.delay = delay

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        await asyncio.sleep(self.delay)
        return self.items  # type: ignore[return-value]


class Raises:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        raise self.exc


async def test_a_skipped_a_crashed_and_a_slow_analyzer_leave_the_others_evidence(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"a.py": ("", "x = 1\n")})
    lines: list[str] = []
    analyzers: dict[str, Analyzer] = {
        "good": Returns(ev("good", "S608"), ev("good", "B006", 2)),
        "absent": Raises(AnalyzerSkipped("absent skipped: not installed (pip install absent)")),
        "broken": Raises(RuntimeError("segfault in the parser\nwith a second line")),
        "slow": Returns(ev("slow", "X"), delay=30),
        "liar": Returns("not evidence"),
    }
    with bounded(0.5, hung_s=30, what="collecting"):  # the slow one answers after 30 s
        report = await collect_evidence(change, analyzers, warn=lines.append, budget_s=0.5)
    assert [(e.analyzer, e.rule) for e in report.evidence] == [("good", "S608"), ("good", "B006")]
    assert report.skipped == ["absent skipped: not installed (pip install absent)"]
    assert report.failed == [
        "analyzer broken failed, its evidence is left out: segfault in the parser",
        "analyzer slow ran past the 0.5 s evidence budget and was stopped",
        "analyzer liar failed, its evidence is left out: it returned str, not Evidence",
    ]
    assert lines == [*report.skipped, *report.failed], "each line is also shown as it happens"
    assert set(report.seconds) == set(analyzers) and report.seconds["slow"] < limit(0.5, hung_s=30)


async def test_analyzers_run_concurrently(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"a.py": ("", "x = 1\n")})
    running, most = 0, 0

    class Counted(Returns):
        async def analyze(self, change: ChangeSet) -> list[Evidence]:
            nonlocal running, most
            running += 1
            most = max(most, running)
            try:
                return await super().analyze(change)
            finally:
                running -= 1

    analyzers = {f"a{n}": Counted(ev(f"a{n}", "R"), delay=0.3) for n in range(5)}
    report = await collect_evidence(change, analyzers, warn=lambda _: None)
    assert most == 5  # all five at once, not one after another (counted: a busy machine cannot change it)
    assert len(report.evidence) == 5 and not report.failed


def test_each_hit_has_an_owning_reviewer() -> None:
    assert domain_for(ev("ruff", "S608")) == "security"
    assert domain_for(ev("ruff", "B006")) == "code_quality"
    assert domain_for(ev("ruff", "ASYNC210")) == "performance"
    assert domain_for(ev("secrets", "stripe-access-key")) == "security"
    assert domain_for(ev("rules", "perf-java-pattern-compile-in-loop")) == "performance"
    assert domain_for(ev("rules", "quality-go-ignored-decode-error")) == "code_quality"
    assert domain_for(ev("rules", "js-html-from-input")) == "security"
    assert domain_for(ev("eslint", "no-unused-vars")) == "code_quality"
    assert domain_for(ev("codeql", "py/sql-injection")) == "security"
