"""The confidence threshold (``[confidence]``): findings below it are kept aside, not published.

A finding whose confidence is under its severity's threshold is not published and does not count
toward the verdict; it stays in ``Review.below_threshold`` (the JSON output, the store) and is
counted as ``below_confidence`` among the dropped findings, so the threshold can be tuned from
``codejury eval``. A finding held on security evidence (``withholds_approval``) is never set aside:
the threshold is a filter on models' claims, not a way around the analyzers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from codejury.findings import Finding

BELOW_CONFIDENCE = "below_confidence"
"""The ``dropped_findings`` reason of the findings under the threshold."""


def split_by_confidence(
    findings: Sequence[Finding], threshold: Callable[[str], float]
) -> tuple[list[Finding], list[Finding]]:
    """``findings`` that meet ``threshold(severity)`` (or are held), and those below it, each in order."""
    kept: list[Finding] = []
    below: list[Finding] = []
    for f in findings:
        if f.withholds_approval or f.confidence >= threshold(f.severity):
            kept.append(f)
        else:
            below.append(f)
    return kept, below
