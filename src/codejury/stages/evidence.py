"""The evidence stage: every registered analyzer (and ``--evidence`` SARIF) on the kept files' changed lines.

Runs once the reviewers are done, so the grounding stage can back their findings with the hits and
hand the hits no reviewer reported to their owners; when no reviewer answered, the hits are what the
review still publishes (a partial review, never an approval). An analyzer that is not installed or that crashes is
one note in the review; a SARIF file that cannot be read is bad input (exit 2), found before any
model is called.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from codejury.analyzers import chosen
from codejury.analyzers.runner import EvidenceReport, collect_evidence
from codejury.runstate import ReviewRun


async def evidence_stage(run: ReviewRun) -> EvidenceReport:
    settings = run.settings
    analyzers: dict[str, object] = {}
    if settings.analyzers:
        registered = run.options.plugins.analyzers  # collected once per process (``Plugins``)
        analyzers.update(chosen(dict(registered), enable=settings.enable_analyzers, disable=settings.disable_analyzers))
    if settings.evidence:
        from codejury.analyzers.sarif import SarifEvidence

        analyzers["sarif"] = SarifEvidence.from_files([Path(p) for p in settings.evidence])
    if not analyzers:
        return EvidenceReport()
    kept = replace(run.change, files=run.selection.kept)
    report = await collect_evidence(kept, analyzers, warn=run.options.say)  # type: ignore[arg-type]
    run.events.emit(
        "evidence",
        hits=len(report.evidence),
        rules=sorted({f"{e.analyzer}:{e.rule}" for e in report.evidence}),
        skipped=report.skipped,
        failed=report.failed,
        seconds=report.seconds,
    )
    return report
