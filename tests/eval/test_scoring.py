"""Scoring by location, checked on hand-computed cases."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from codejury.errors import InputError
from codejury.eval.dataset import EvalCase, ExpectedComment
from codejury.eval.markdown import render
from codejury.eval.results import CaseRun, FoundFinding, overall_json, report_json
from codejury.eval.scoring import max_matching, percentile, prf, score_case
from codejury.eval.session import _gate as gate
from codejury.eval.session import parse_thresholds


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


def test_recall_by_context_level_counts_only_comments_that_name_one() -> None:
    comments = (
        ExpectedComment(path="a.go", start_line=10, end_line=10, note="n", context="Diff Level"),
        ExpectedComment(path="a.go", start_line=40, end_line=40, note="n", context="Repo Level"),
        ExpectedComment(path="a.go", start_line=60, end_line=60, note="n", context="Repo Level"),
        ExpectedComment(path="a.go", start_line=90, end_line=90, note="n"),  # no context: left out
    )
    case = EvalCase(id="one", diff="x.diff", expected=comments)
    run = CaseRun(
        case_id="one",
        verdict="approved_with_comments",
        findings=[
            FoundFinding(path="a.go", start_line=61, end_line=61),
            FoundFinding(path="a.go", start_line=90, end_line=90),
        ],
    )
    overall = overall_json([case], [run])
    assert overall["by_context"] == {
        "Diff Level": {"expected": 1, "matched": 0, "recall": 0.0},
        "Repo Level": {"expected": 2, "matched": 1, "recall": 0.5},
    }
    table = render(report_json([case], [run]))
    assert "## Recall by the context an expected comment needed (location)" in table
    assert "| Repo Level | 2 | 1 | 0.500 |" in table
    # A dataset without context levels gets no such section (the golden set).
    plain = EvalCase(id="two", diff="x.diff", expected=(ExpectedComment(path="a.go", start_line=1, end_line=1),))
    assert "by_context" not in overall_json([plain], [CaseRun(case_id="two", verdict="approved")])


def test_findings_are_counted_by_what_backs_them() -> None:
    case = EvalCase(
        id="one",
        diff="x.diff",
        expected=(
            ExpectedComment(path="a.py", start_line=10, end_line=10, note="sql"),
            ExpectedComment(path="a.py", start_line=30, end_line=30, note="n+1"),
        ),
    )
    found = [
        FoundFinding(path="a.py", start_line=10, end_line=10, evidence=["ruff:S608"]),
        FoundFinding(path="a.py", start_line=31, end_line=31),  # the model's own claim, at the place
        FoundFinding(path="a.py", start_line=50, end_line=50),  # the model's own claim, elsewhere
    ]
    overall = overall_json([case], [CaseRun(case_id="one", verdict="requested_changes", findings=found)])
    assert overall["by_backing"] == {
        "analyzer": {"findings": 1, "matched": 1, "precision": 1.0},
        "model": {"findings": 2, "matched": 1, "precision": 0.5},
    }
    table = render(report_json([case], [CaseRun(case_id="one", verdict="requested_changes", findings=found)]))
    assert "| an analyzer rule | 1 | 1 | 1.000 |" in table and "| the model alone | 2 | 1 | 0.500 |" in table


def test_range_overlap_edges_and_containment() -> None:
    expected = [At("a.py", 20, 25)]
    cases = [
        (At("a.py", 10, 18), False),  # ends 2 lines before: outside the slack
        (At("a.py", 10, 19), True),  # ends 1 line before
        (At("a.py", 26, 40), True),  # starts 1 line after
        (At("a.py", 27, 40), False),
        (At("a.py", 22, 23), True),  # inside
        (At("a.py", 1, 100), True),  # around
    ]
    for finding, hit in cases:
        assert score_case([finding], expected).matched == int(hit), finding


def test_one_finding_over_two_comments_is_matched_once() -> None:
    s = score_case([At("a.py", 1, 50)], [At("a.py", 10, 10), At("a.py", 40, 40)])
    assert s.matched == 1
    precision, recall, f1 = s.ratios()
    assert (precision, recall) == (1.0, 0.5)
    assert f1 == pytest.approx(2 / 3)


def test_a_finding_is_paired_with_the_comment_closest_to_its_lines() -> None:
    # Two findings on line 62; comments on 59-63 (a broad one) and twice on 61-62 (one per problem there).
    expected = [At("x.ts", 59, 63), At("x.ts", 61, 62), At("x.ts", 61, 62)]
    s = score_case(
        [At("x.ts", 62, 62), At("x.ts", 62, 62)], expected, contexts=["File Level", "Diff Level", "Diff Level"]
    )
    assert s.matched == 2
    assert sorted(m.expected for m in s.matches) == [1, 2]  # not the broad comment
    wide = score_case([At("x.ts", 59, 63), At("x.ts", 62, 62)], expected)
    assert sorted((m.finding, m.expected) for m in wide.matches) == [(0, 0), (1, 1)]


def test_findings_on_a_clean_change_only_lower_precision() -> None:
    clean = score_case([At("a.py", 3, 3), At("a.py", 9, 9)], [])
    assert (clean.findings, clean.expected, clean.matched) == (2, 0, 0)
    assert clean.ratios() == (0.0, 0.0, 0.0)
    cases = [_case("hit", "Go", ("a.go", 5, 5, "bug")), _case("clean", "Go")]
    runs = [
        CaseRun(case_id="hit", verdict="approved", findings=[FoundFinding(path="a.go", start_line=5, end_line=5)]),
        CaseRun(
            case_id="clean",
            verdict="approved",
            findings=[
                FoundFinding(path="b.go", start_line=1, end_line=1),
                FoundFinding(path="b.go", start_line=9, end_line=9),
            ],
        ),
    ]
    overall = overall_json(cases, runs)
    assert (overall["precision"], overall["recall"]) == (round(1 / 3, 4), 1.0)
    assert overall["findings_per_case"] == 1.5


def test_known_false_positives_take_no_slack_and_changed_lines_need_a_plus_line() -> None:
    s = score_case(
        [At("a.py", 11, 11), At("a.py", 12, 14), At("a.py", 20, 20)],
        [],
        changed_lines={"a.py": {14}},
        known_false_positives=[At("a.py", 12, 12)],
    )
    assert s.known_false_positive_hits == 1  # 11 is next to the known false positive, not on it
    assert s.on_changed_lines == 1  # only 12-14 reaches the changed line 14


def test_a_case_without_findings_has_no_changed_line_share_and_a_failed_case_no_verdict() -> None:
    cases = [_case("one", "Go", ("a.go", 1, 1, "bug"))]
    runs = [CaseRun(case_id="one", error="timed out after 3600 s", wall_s=3600)]
    doc = report_json(cases, runs)
    assert doc["overall"]["on_changed_lines"] is None
    assert doc["overall"]["wall_p50_s"] is None  # a failed case's time is not a review's time
    assert doc["overall"]["blocking_share"] == 0.0
    case = doc["cases"][0]
    assert (case["verdict"], case["error"], case["recall"], case["on_changed_lines"]) == (
        None,
        "timed out after 3600 s",
        0.0,
        None,
    )


def test_judged_scores_appear_only_when_every_case_was_judged() -> None:
    cases = [_case("one", "Go", ("a.go", 5, 5, "bug")), _case("two", "Go", ("b.go", 5, 5, "bug"))]
    hit = [FoundFinding(path="a.go", start_line=5, end_line=5)]
    judged = [
        CaseRun(case_id="one", verdict="approved", findings=hit, accepted=[(0, 0)]),
        CaseRun(case_id="two", error="no reviewer succeeded", accepted=[]),  # a failed case is judged empty
    ]
    overall = overall_json(cases, judged)
    assert (overall["judged_matched"], overall["judged_precision"], overall["judged_recall"]) == (1, 1.0, 0.5)
    unjudged = [judged[0], judged[1].model_copy(update={"accepted": None})]
    assert "judged_f1" not in overall_json(cases, unjudged)


def test_the_markdown_table_puts_the_baseline_beside_and_names_each_scoring() -> None:
    cases = [_case("one", "Go", ("a.go", 5, 5, "bug"))]
    panel = [
        CaseRun(
            case_id="one",
            verdict="approved_with_comments",
            wall_s=3,
            findings=[FoundFinding(path="a.go", start_line=5, end_line=5, title="Nil map | write", body="b")],
            accepted=[(0, 0)],
        )
    ]
    naive = [CaseRun(case_id="one", error="no reviewer succeeded (naive: boom)")]
    table = render(report_json(cases, panel, naive))
    assert "| metric | codejury | naive baseline |" in table
    assert "| F1 (location) | 1.000 | 0.000 |" in table
    assert "| F1 (meaning, judge) | 1.000 | – |" in table  # the failed baseline run was not judged
    assert "| failed cases (no review) | 0 | 1 |" in table
    assert "Nil map \\| write: b" in table  # a pipe in a finding cannot break the table


def test_fail_below_parses_metrics_and_gates_on_missing_values() -> None:
    assert parse_thresholds(["f1=0.3", " recall = 0.5 "]) == {"f1": 0.3, "recall": 0.5}
    for bad in ("f1", "f2=0.3", "f1=high"):
        with pytest.raises(InputError):
            parse_thresholds([bad])
    assert gate({"f1": 0.31}, {"f1": 0.3}) == 0
    assert gate({"f1": 0.29}, {"f1": 0.3}) == 1
    assert gate({"f1": 0.5}, {"judged_f1": 0.1}) == 1  # asked to gate on a score that was not computed


def test_the_walkthroughs_time_is_read_from_each_review_and_set_against_the_rest() -> None:
    from codejury.eval.runner import parse_review

    reviews = [
        {"verdict": "approved", "walkthrough": {"summary": "s", "usage": {"duration_s": 30.0}}},
        {"verdict": "approved", "walkthrough": {"summary": "s", "usage": {"duration_s": 10.0}}},
        {"verdict": "approved"},  # no walkthrough (trivial, or its model failed): not in the walkthrough figures
    ]
    runs = [
        parse_review(f"c{i}", r, wall, {}) for i, (r, wall) in enumerate(zip(reviews, (130.0, 60.0, 40.0), strict=True))
    ]
    cases = [_case(f"c{i}", "Go") for i in range(3)]
    overall = overall_json(cases, runs)
    assert [r.walkthrough_s for r in runs] == [30.0, 10.0, 0.0]
    assert overall["walkthrough_p50_s"] == 10.0
    assert overall["walkthrough_added_p50"] == 0.2  # 10 s over 50 s, and 30 s over 100 s: nearest rank
    assert "walkthrough time over the rest of the review" in render(report_json(cases, runs))
