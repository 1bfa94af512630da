"""What one eval run produced per case, and the overall figures: the JSON contract of ``--json``.

``{"overall": {...}, "cases": [{...}], "baseline": {"overall": ..., "cases": ...}}`` where every
ratio is location-scored unless its key starts with ``judged_`` (meaning-scored by ``--judge``).
``overall.by_threshold`` scores the same run at several confidence thresholds (``scoring.by_threshold``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from codejury.eval.dataset import EvalCase, ExpectedComment
from codejury.eval.scoring import (
    BLOCKING_VERDICTS,
    CaseScore,
    by_threshold,
    category_recall,
    context_recall,
    percentile,
    prf,
    score_case,
)


class FoundFinding(BaseModel):
    """A finding as the eval keeps it (a review's finding or a naive baseline's)."""

    path: str
    start_line: int
    end_line: int
    severity: str = "warning"
    title: str = ""
    body: str = ""
    reviewer: str = ""
    evidence: list[str] = Field(default_factory=list)
    """The analyzer rules that back it (``ruff:S608``); empty for a model's own claim."""
    confidence: float = 1.0
    below_threshold: bool = False
    """Under the review's confidence threshold: not published, kept to score other thresholds."""


class CaseRun(BaseModel):
    """The raw outcome of reviewing one case (cached per case and config)."""

    case_id: str
    verdict: str | None = None
    findings: list[FoundFinding] = Field(default_factory=list)
    below_threshold: list[FoundFinding] = Field(default_factory=list)
    """Findings the review did not publish for their confidence (``[confidence]``); not in the scores above."""
    changed_lines: dict[str, list[int]] = Field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    walkthrough_s: float = 0.0
    """The walkthrough's share of ``wall_s`` (0: none was written)."""
    error: str | None = None
    accepted: list[tuple[int, int]] | None = None
    """(finding, expected) pairs a judge model accepted as the same problem; None without --judge."""


def score(case: EvalCase, run: CaseRun) -> CaseScore:
    return score_case(
        run.findings,
        case.expected,
        categories=[e.category for e in case.expected],
        contexts=[e.context for e in case.expected],
        changed_lines={p: set(lines) for p, lines in run.changed_lines.items()},
        known_false_positives=case.known_false_positives,
        accepted=set(map(tuple, run.accepted)) if run.accepted is not None else None,  # type: ignore[arg-type]
    )


def _ratio(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def case_json(case: EvalCase, run: CaseRun, s: CaseScore) -> dict[str, Any]:
    precision, recall, f1 = s.ratios()
    out: dict[str, Any] = {
        "id": case.id,
        "language": case.language,
        "verdict": run.verdict,
        "error": run.error,
        "findings": s.findings,
        "expected": s.expected,
        "matched": s.matched,
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "on_changed_lines": _ratio(s.on_changed_lines, s.findings),
        "known_false_positive_hits": s.known_false_positive_hits,
        "tokens": run.input_tokens + run.output_tokens,
        "cost_usd": round(run.cost_usd, 6),
        "wall_s": round(run.wall_s, 2),
        "walkthrough_s": round(run.walkthrough_s, 2),
        "matches": [_pair(case.expected[m.expected], run.findings[m.finding]) for m in s.matches],
        "found": [f.model_dump() for f in run.findings],
    }
    judged = s.judged_ratios()
    if judged is not None:
        out.update(
            judged_matched=len(s.judged_matches or []),
            judged_precision=round(judged[0], 4),
            judged_recall=round(judged[1], 4),
            judged_f1=round(judged[2], 4),
        )
    return out


def _pair(expected: ExpectedComment, finding: FoundFinding) -> dict[str, Any]:
    return {
        "path": finding.path,
        "finding_lines": [finding.start_line, finding.end_line],
        "expected_lines": [expected.start_line, expected.end_line],
        "finding": f"{finding.title}: {finding.body}".strip(": "),
        "expected": expected.note,
        "category": expected.category,
    }


def overall_json(cases: Sequence[EvalCase], runs: Sequence[CaseRun]) -> dict[str, Any]:
    """The overall figures (micro-averaged) with breakdowns by language and expected category."""
    scores = [score(c, r) for c, r in zip(cases, runs, strict=True)]
    findings = sum(s.findings for s in scores)
    expected = sum(s.expected for s in scores)
    matched = sum(s.matched for s in scores)
    precision, recall, f1 = prf(matched, findings, matched, expected)
    walls = [r.wall_s for r in runs if r.error is None]
    out: dict[str, Any] = {
        "cases": len(cases),
        "failed_cases": sum(1 for r in runs if r.error is not None),
        "findings": findings,
        "findings_per_case": round(findings / len(cases), 3) if cases else 0.0,
        "expected": expected,
        "matched": matched,
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "on_changed_lines": _ratio(sum(s.on_changed_lines for s in scores), findings),
        "known_false_positive_hits": sum(s.known_false_positive_hits for s in scores),
        "blocking_share": _ratio(sum(1 for r in runs if r.verdict in BLOCKING_VERDICTS), len(runs)),
        "tokens": sum(r.input_tokens + r.output_tokens for r in runs),
        "cost_usd": round(sum(r.cost_usd for r in runs), 6),
        "wall_p50_s": percentile(walls, 50),
        "wall_p90_s": percentile(walls, 90),
        "wall_total_s": round(sum(r.wall_s for r in runs), 2),
        "walkthrough_p50_s": percentile([r.walkthrough_s for r in runs if r.error is None and r.walkthrough_s], 50),
        "walkthrough_added_p50": percentile(
            [
                round(r.walkthrough_s / (r.wall_s - r.walkthrough_s), 4)
                for r in runs
                if r.error is None and r.walkthrough_s and r.wall_s > r.walkthrough_s
            ],
            50,
        ),
        "by_language": _by_language(cases, scores),
        "by_category": _recall_rows(category_recall(scores)),
        "by_backing": _by_backing(runs, scores),
    }
    out["by_threshold"] = [
        dataclasses.asdict(row)
        for row in by_threshold(
            (([*r.findings, *r.below_threshold], c.expected) for c, r in zip(cases, runs, strict=True)),
        )
    ]
    by_context = context_recall(scores)
    if by_context:
        out["by_context"] = _recall_rows(by_context)
    if all(s.judged_matches is not None for s in scores) and scores:
        judged = sum(len(s.judged_matches or []) for s in scores)
        jp, jr, jf = prf(judged, findings, judged, expected)
        out.update(
            judged_matched=judged, judged_precision=round(jp, 4), judged_recall=round(jr, 4), judged_f1=round(jf, 4)
        )
    return out


def _by_language(cases: Sequence[EvalCase], scores: Sequence[CaseScore]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[CaseScore]] = {}
    for case, s in zip(cases, scores, strict=True):
        groups.setdefault(case.language, []).append(s)
    out: dict[str, dict[str, Any]] = {}
    for language, group in sorted(groups.items()):
        f = sum(s.findings for s in group)
        e = sum(s.expected for s in group)
        m = sum(s.matched for s in group)
        p, r, f1 = prf(m, f, m, e)
        out[language] = {"cases": len(group), "precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4)}
    return out


def report_json(
    cases: Sequence[EvalCase], runs: Sequence[CaseRun], baseline: Sequence[CaseRun] | None = None
) -> dict[str, Any]:
    """The whole ``--json`` document."""
    doc: dict[str, Any] = {
        "overall": overall_json(cases, runs),
        "cases": [case_json(c, r, score(c, r)) for c, r in zip(cases, runs, strict=True)],
    }
    if baseline is not None:
        doc["baseline"] = {
            "overall": overall_json(cases, baseline),
            "cases": [case_json(c, r, score(c, r)) for c, r in zip(cases, baseline, strict=True)],
        }
    return doc


def _recall_rows(counts: dict[str, tuple[int, int]]) -> dict[str, dict[str, Any]]:
    return {
        key: {"expected": total, "matched": hit, "recall": _ratio(hit, total)} for key, (hit, total) in counts.items()
    }


def _by_backing(runs: Sequence[CaseRun], scores: Sequence[CaseScore]) -> dict[str, dict[str, Any]]:
    """Findings and their location precision by what backs them: an analyzer's rule, or the model alone."""
    counts = {"analyzer": [0, 0], "model": [0, 0]}
    for run, s in zip(runs, scores, strict=True):
        hit = {m.finding for m in s.matches}
        for i, f in enumerate(run.findings):
            cell = counts["analyzer" if f.evidence else "model"]
            cell[0] += 1
            cell[1] += i in hit
    return {k: {"findings": n, "matched": m, "precision": _ratio(m, n)} for k, (n, m) in counts.items()}
