"""Scores of a review against the comments engineers wrote on the same change.

Location scoring: a finding matches an expected comment when the path is the same and the
line ranges overlap with ``SLACK`` lines of slack. Each expected comment is matched at most
once and each finding at most once, by a maximum matching (so two findings on one comment
count once, and the matching that pairs the most is taken; among those, each finding is offered
the comments closest to its lines first). precision = matched findings /
findings, recall = matched expected comments / expected comments, F1 their harmonic mean.
Overall figures are micro-averaged (sums over cases), so a case with many comments weighs more.

Meaning scoring (``--judge``) uses the same matching over the pairs a judge model accepted.

``by_threshold`` scores one run as if it had been made at each of several confidence thresholds
(``[confidence]``): the review keeps the findings under its own threshold (``below_threshold``), so
every finding of the run is there to be kept or set aside at each threshold.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from codejury.locations import Located, overlaps

BLOCKING_VERDICTS = frozenset({"requested_changes", "significant_concerns"})
THRESHOLDS: tuple[float, ...] = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9)
"""The confidence thresholds ``by_threshold`` reports."""


def max_matching(n_left: int, n_right: int, edges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """A maximum matching of a bipartite graph (Kuhn's augmenting paths; sizes here are small)."""
    adj: list[list[int]] = [[] for _ in range(n_left)]
    for left, right in edges:
        adj[left].append(right)
    owner: list[int | None] = [None] * n_right

    def augment(left: int, seen: list[bool]) -> bool:
        for right in adj[left]:
            if seen[right]:
                continue
            seen[right] = True
            current = owner[right]
            if current is None or augment(current, seen):
                owner[right] = left
                return True
        return False

    for left in range(n_left):
        augment(left, [False] * n_right)
    return sorted((left, right) for right, left in enumerate(owner) if left is not None)


def prf(matched_findings: int, findings: int, matched_expected: int, expected: int) -> tuple[float, float, float]:
    """Precision, recall and F1; an empty side scores 0 (no findings is not perfect precision)."""
    precision = matched_findings / findings if findings else 0.0
    recall = matched_expected / expected if expected else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


@dataclass(frozen=True)
class Match:
    """A finding paired with the expected comment at its place (for a person, or a judge, to read)."""

    finding: int
    expected: int


@dataclass
class CaseScore:
    """One case's counts; ratios are derived so that sums over cases stay exact."""

    findings: int
    expected: int
    matches: list[Match]
    on_changed_lines: int
    known_false_positive_hits: int
    expected_categories: list[str] = field(default_factory=list)
    expected_contexts: list[str | None] = field(default_factory=list)
    judged_matches: list[Match] | None = None

    @property
    def matched(self) -> int:
        return len(self.matches)

    def ratios(self) -> tuple[float, float, float]:
        return prf(self.matched, self.findings, self.matched, self.expected)

    def judged_ratios(self) -> tuple[float, float, float] | None:
        if self.judged_matches is None:
            return None
        n = len(self.judged_matches)
        return prf(n, self.findings, n, self.expected)


def score_case(
    findings: Sequence[Located],
    expected: Sequence[Located],
    *,
    categories: Sequence[str] = (),
    contexts: Sequence[str | None] = (),
    changed_lines: Mapping[str, set[int]] | None = None,
    known_false_positives: Sequence[Located] = (),
    accepted: set[tuple[int, int]] | None = None,
) -> CaseScore:
    """Score one case. ``accepted``: (finding, expected) pairs a judge said are the same problem."""
    edges = [(i, j) for i, f in enumerate(findings) for j, e in enumerate(expected) if overlaps(f, e)]
    # Among maximum matchings, prefer the comment whose lines are closest to the finding's: a finding on
    # line 62 is paired with the comment on 61-62 before the one on 59-63 (the count does not change).
    edges.sort(key=lambda ij: (ij[0], _distance(findings[ij[0]], expected[ij[1]]), ij[1]))
    matches = [Match(i, j) for i, j in max_matching(len(findings), len(expected), edges)]
    judged: list[Match] | None = None
    if accepted is not None:
        kept = [(i, j) for i, j in edges if (i, j) in accepted]
        judged = [Match(i, j) for i, j in max_matching(len(findings), len(expected), kept)]
    on_changed = 0
    if changed_lines is not None:
        for f in findings:
            lines = changed_lines.get(f.path, set())
            if any(n in lines for n in range(f.start_line, f.end_line + 1)):
                on_changed += 1
    kfp = sum(1 for f in findings if any(overlaps(f, k, slack=0) for k in known_false_positives))
    return CaseScore(
        findings=len(findings),
        expected=len(expected),
        matches=matches,
        on_changed_lines=on_changed,
        known_false_positive_hits=kfp,
        expected_categories=list(categories),
        expected_contexts=list(contexts),
        judged_matches=judged,
    )


def _distance(a: Located, b: Located) -> int:
    return abs(a.start_line - b.start_line) + abs(a.end_line - b.end_line)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100): the smallest value with at least q% of values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def category_recall(scores: Iterable[CaseScore]) -> dict[str, tuple[int, int]]:
    """Per expected-comment category: (matched, total) by location."""
    return _recall_by((s, s.expected_categories) for s in scores)


def context_recall(scores: Iterable[CaseScore]) -> dict[str, tuple[int, int]]:
    """Per expected comment's context ("Diff Level", "File Level", "Repo Level": how much of the
    repository an engineer needed to write it): (matched, total) by location; comments without one
    are left out."""
    return _recall_by((s, s.expected_contexts) for s in scores)


def _recall_by(labelled: Iterable[tuple[CaseScore, Sequence[str | None]]]) -> dict[str, tuple[int, int]]:
    out: dict[str, list[int]] = {}
    for s, labels in labelled:
        hit = {m.expected for m in s.matches}
        for j, label in enumerate(labels):
            if label is None:
                continue
            cell = out.setdefault(label, [0, 0])
            cell[1] += 1
            cell[0] += j in hit
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


class Scored(Located, Protocol):
    """A finding with the confidence its reviewer gave it."""

    @property
    def confidence(self) -> float: ...


@dataclass(frozen=True)
class ThresholdRow:
    """Location precision and recall of a run's findings at or above one confidence threshold (micro-averaged)."""

    min_confidence: float
    findings: int
    matched: int
    expected: int
    precision: float
    recall: float
    f1: float


def by_threshold(
    cases: Iterable[tuple[Sequence[Scored], Sequence[Located]]], thresholds: Sequence[float] = THRESHOLDS
) -> list[ThresholdRow]:
    """For each threshold, the run's findings (published and below its own threshold) with at least that confidence,
    scored against each case's expected comments: one run, every threshold."""
    pairs = list(cases)
    rows: list[ThresholdRow] = []
    for t in thresholds:
        findings = matched = expected = 0
        for found, wanted in pairs:
            kept = [f for f in found if f.confidence >= t]
            s = score_case(kept, wanted)
            findings, matched, expected = findings + s.findings, matched + s.matched, expected + s.expected
        precision, recall, f1 = prf(matched, findings, matched, expected)
        rows.append(ThresholdRow(t, findings, matched, expected, round(precision, 4), round(recall, 4), round(f1, 4)))
    return rows
