"""Run every analyzer on a change at once, within one time budget, and never fail the review.

``collect_evidence`` returns an ``EvidenceReport``: the evidence (each item with the reviewer
that owns it, ``domains.domain_for``), one line per analyzer that was skipped (not installed,
nothing it can read) and one per analyzer that crashed or ran past the budget, and how long each
took. ``warn`` receives each of those lines as it happens, so a CI log shows them at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from codejury.analyzers.base import Analyzer, AnalyzerSkipped
from codejury.analyzers.domains import Domain, domain_for
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence

DEFAULT_BUDGET_S = 120.0
"""Wall-clock budget for all analyzers together; whoever is still running then is stopped."""


@dataclass
class EvidenceReport:
    """What the analyzers established about a change, and which of them could not say."""

    evidence: list[Evidence] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """One line per analyzer that did not run (not installed, nothing to read): shown in the review."""
    failed: list[str] = field(default_factory=list)
    """One line per analyzer that crashed or ran past the budget: shown in the review."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time per analyzer."""

    def by_domain(self) -> dict[Domain, list[Evidence]]:
        """The evidence grouped by the reviewer that owns it (security, performance, code_quality)."""
        grouped: dict[Domain, list[Evidence]] = {}
        for item in self.evidence:
            grouped.setdefault(domain_for(item), []).append(item)
        return grouped


async def collect_evidence(
    change: ChangeSet,
    analyzers: Mapping[str, Analyzer],
    *,
    warn: Callable[[str], None],
    budget_s: float = DEFAULT_BUDGET_S,
) -> EvidenceReport:
    """Run ``analyzers`` (by registered name) concurrently on ``change``; see the module docstring."""
    report = EvidenceReport()
    names = list(analyzers)
    started = time.monotonic()

    async def one(name: str) -> list[Evidence]:
        try:
            return await analyzers[name].analyze(change)
        finally:
            report.seconds[name] = round(time.monotonic() - started, 3)

    tasks = {name: asyncio.create_task(one(name), name=f"analyzer:{name}") for name in names}
    if tasks:
        _done, pending = await asyncio.wait(tasks.values(), timeout=budget_s)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    for name, task in tasks.items():
        line = _outcome(name, task, budget_s, report)
        if line is not None:
            warn(line)
    report.evidence.sort(key=lambda e: (e.path, e.start_line, e.analyzer, e.rule))
    return report


def _outcome(name: str, task: asyncio.Task[list[Evidence]], budget_s: float, report: EvidenceReport) -> str | None:
    """File the task's result in ``report``; return the line to show when it did not succeed."""
    if task.cancelled():
        line = f"analyzer {name} ran past the {budget_s:g} s evidence budget and was stopped"
        report.failed.append(line)
        return line
    exc = task.exception()
    if isinstance(exc, AnalyzerSkipped):
        line = str(exc) if str(exc).startswith(name) else f"{name} skipped: {exc}"
        report.skipped.append(line)
        return line
    if exc is not None:
        reason = str(exc).splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        line = f"analyzer {name} failed, its evidence is left out: {reason}"
        report.failed.append(line)
        return line
    items = task.result()
    for item in items:
        if not isinstance(item, Evidence):
            line = f"analyzer {name} failed, its evidence is left out: it returned {type(item).__name__}, not Evidence"
            report.failed.append(line)
            return line
    report.evidence.extend(items)
    return None
