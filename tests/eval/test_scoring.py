"""Scoring by location, checked on hand-computed cases."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from codejury.eval.dataset import EvalCase, ExpectedComment
from codejury.eval.results import CaseRun, FoundFinding, overall_json, report_json
from codejury.eval.scoring import max_matching, percentile, prf, score_case


@dataclass(frozen=True)
class At:
    path: str
    start_line: int
    end_line: int


def test_overlap_edges_use_one_line_of_slack() -> None:
    expected = [At("a.py", 10, 12)]
    for line, hit in [(8, False), (9, True), (13, True), (14, False), (11, True)]:
        s = score_case([At("a.py", line, line)], expected)
        assert s.matched == int(hit), line
    assert score_case([At("b.py", 10, 10)], expected).matched == 0  # other path never matches


def test_one_expected_comment_is_matched_once_even_by_two_findings() -> None:
    s = score_case([At("a.py", 10, 10), At("a.py", 11, 11)], [At("a.py", 10, 11)])
    assert (s.findings, s.expected, s.matched) == (2, 1, 1)
    precision, recall, f1 = s.ratios()
    assert (precision, recall) == (0.5, 1.0)
    assert f1 == pytest.approx(2 / 3)


def test_matching_is_maximum_not_greedy() -> None:
    # finding 0 overlaps both comments, finding 1 only the first: the best pairing matches both.
    s = score_case([At("a.py", 10, 20), At("a.py", 10, 10)], [At("a.py", 10, 10), At("a.py", 20, 20)])
    assert s.matched == 2
    assert max_matching(2, 2, [(0, 0), (0, 1), (1, 0)]) == [(0, 1), (1, 0)]


def test_no_findings_scores_zero_not_perfect_precision() -> None:
    s = score_case([], [At("a.py", 1, 1)])
    assert s.ratios() == (0.0, 0.0, 0.0)
    assert prf(0, 0, 0, 0) == (0.0, 0.0, 0.0)


def test_changed_lines_and_known_false_positives() -> None:
    s = score_case(
        [At("a.py", 5, 6), At("a.py", 30, 30), At("b.py", 1, 1)],
        [],
        changed_lines={"a.py": {6, 7}},
        known_false_positives=[At("a.py", 30, 31)],
    )
    assert s.on_changed_lines == 1
    assert s.known_false_positive_hits == 1


def test_judge_accepted_pairs_score_meaning_separately() -> None:
    s = score_case(
        [At("a.py", 10, 10), At("a.py", 20, 20)], [At("a.py", 10, 10), At("a.py", 20, 20)], accepted={(1, 1)}
    )
    assert s.matched == 2
    assert s.judged_ratios() == (0.5, 0.5, 0.5)


def test_nearest_rank_percentiles() -> None:
    values = [4.0, 1.0, 3.0, 2.0, 10.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 90) == 10.0
    assert percentile([], 50) is None


def _case(case_id: str, language: str, *expected: tuple[str, int, int, str]) -> EvalCase:
    return EvalCase(
        id=case_id,
        language=language,
        diff="x.diff",
        expected=tuple(
            ExpectedComment(path=p, start_line=s, end_line=e, note="n", category=c) for p, s, e, c in expected
        ),
    )


def test_overall_is_micro_averaged_and_counts_a_failed_case() -> None:
    cases = [
        _case("one", "Go", ("a.go", 10, 10, "Code Defect"), ("a.go", 40, 40, "Performance")),
        _case("two", "Go", ("b.go", 5, 5, "Code Defect")),
        _case("three", "Python", ("c.py", 1, 1, "Security Vulnerability")),
    ]
    runs = [
        CaseRun(
            case_id="one",
            verdict="approved_with_comments",
            wall_s=10,
            findings=[
                FoundFinding(path="a.go", start_line=10, end_line=10),
                FoundFinding(path="a.go", start_line=70, end_line=70),
            ],
        ),
        CaseRun(
            case_id="two",
            verdict="requested_changes",
            wall_s=20,
            findings=[FoundFinding(path="b.go", start_line=6, end_line=6)],
        ),
        CaseRun(case_id="three", error="no reviewer succeeded"),
    ]
    overall = overall_json(cases, runs)
    # 3 findings, 2 matched; 4 expected, 2 matched.
    assert (overall["findings"], overall["matched"], overall["expected"]) == (3, 2, 4)
    assert overall["precision"] == round(2 / 3, 4)
    assert overall["recall"] == 0.5
    assert overall["f1"] == round(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5), 4)
    assert overall["failed_cases"] == 1
    assert overall["blocking_share"] == round(1 / 3, 4)
    assert overall["wall_p50_s"] == 10 and overall["wall_p90_s"] == 20  # the failed case has no wall time
    assert overall["by_category"]["Code Defect"] == {"expected": 2, "matched": 2, "recall": 1.0}
    assert overall["by_category"]["Performance"]["recall"] == 0.0
    assert overall["by_language"]["Python"]["recall"] == 0.0
    doc = report_json(cases, runs, baseline=runs)
    assert doc["cases"][0]["matches"][0]["expected"] == "n"
    assert doc["baseline"]["overall"] == overall
