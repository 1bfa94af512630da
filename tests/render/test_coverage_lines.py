"""What a review could not do (an analyzer skipped or failed, no head-side tree, files cut to fit)
is one line in every output format and in the forge summary, never a clean pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from codejury_fakes.github import FakeGitHub

from codejury.render import codeclimate, rdjson, sarif
from tests.forges.test_github_bot import ACTIONS, gh, run, summary
from tests.render.failing_analyzer import LINE
from tests.render.test_ci_formats import clean_review

__all__ = ["gh"]  # the fixture

SKIPPED = "ruff skipped: the change has no head-side tree to read"
FILES = {"reports.py": ("x = 1\n", "x = 2\n")}


def _flat(text: str) -> str:
    return " ".join(text.split())


def _lines(fmt: str, out: str) -> list[str]:
    """The lines saying what the review could not do, where each format keeps them."""
    if fmt == "json":
        return list(json.loads(out)["notes"])
    if fmt == "sarif":
        [invocation] = json.loads(out)["runs"][0]["invocations"]
        notes = invocation["toolExecutionNotifications"]
        return [n["message"]["text"] for n in notes if n["descriptor"]["id"] == "review-limited"]
    if fmt == "rdjson":
        found = json.loads(out)["diagnostics"]
        return [d["message"] for d in found if d["code"]["value"] == "codejury/review-limited"]
    if fmt == "codeclimate":
        return [i["description"] for i in json.loads(out) if i["check_name"] == "codejury/review-limited"]
    return [_flat(out)]  # markdown, terminal: the text as a reader sees it, wrapping undone


@pytest.mark.parametrize("fmt", ["markdown", "terminal", "json", "sarif", "rdjson", "codeclimate"])
def test_an_analyzer_forced_to_fail_is_one_line_in_every_format_and_in_the_forge_summary(
    gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    gh.add_pr(number=8, author="alice", files=FILES)
    monkeypatch.setenv("CODEJURY_REPO_CACHE", "off")  # no head-side tree either: the analyzers are skipped
    code, out, err = run(
        gh,
        monkeypatch,
        [],
        *("--plugin", "tests.render.failing_analyzer", "--format", fmt, "--publish"),
        token=ACTIONS,
        number=8,
    )
    assert code == 0, err
    lines = _lines(fmt, out)
    assert any(LINE in line for line in lines), out
    assert any(SKIPPED in line for line in lines), out
    body = _flat(summary(gh, 8))
    assert "What this review could not do" in body and LINE in body and SKIPPED in body


def test_a_code_quality_report_without_analyzers_is_never_an_empty_clean_array() -> None:
    review = clean_review(notes=[SKIPPED + " (a diff without --repo)"])
    issues = codeclimate.review_to_codeclimate_list(review)
    assert issues, "an empty array reads as a clean report"
    [limited] = issues
    assert limited["check_name"] == "codejury/review-limited" and SKIPPED in limited["description"]
    assert limited["location"] == {"path": ".", "lines": {"begin": 1}}
    again = codeclimate.review_to_codeclimate_list(review.model_copy())
    assert again[0]["fingerprint"] == limited["fingerprint"]  # the widget tracks it across runs


def test_files_cut_to_fit_are_a_line_in_the_ci_formats_and_the_review_still_executed() -> None:
    review = clean_review(cut_files=["big/generated.py"])
    data: dict[str, Any] = sarif.review_to_sarif_dict(review)
    [invocation] = data["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True  # the review ran; what it left out is a warning
    [cut] = invocation["toolExecutionNotifications"]
    assert cut["level"] == "warning" and "big/generated.py" in cut["message"]["text"]
    assert any("big/generated.py" in d["message"] for d in rdjson.review_to_rdjson_dict(review)["diagnostics"])
    assert any("big/generated.py" in i["description"] for i in codeclimate.review_to_codeclimate_list(review))


TESTS_LINE = "tests (junit.xml): 1 of 3 failed: tests.test_cart::test_total (covers cart.py:total)"
JUNIT = """<testsuite name="pytest" tests="3" failures="1">
<testcase classname="tests.test_reports" name="test_x"><failure message="boom">assert 1 == 2</failure></testcase>
<testcase classname="tests.test_reports" name="test_y"/><testcase classname="tests.test_reports" name="test_z"/>
</testsuite>"""


def test_the_ci_jobs_test_results_have_their_own_line_in_the_ci_formats_never_as_something_not_done() -> None:
    review = clean_review(tests=TESTS_LINE)
    sarif_run = sarif.review_to_sarif_dict(review)["runs"][0]
    [said] = sarif_run["invocations"][0]["toolExecutionNotifications"]
    assert (said["descriptor"]["id"], said["level"]) == ("tests", "note") and TESTS_LINE in said["message"]["text"]
    assert sarif_run["properties"]["tests"] == TESTS_LINE
    [issue] = codeclimate.review_to_codeclimate_list(review)
    assert (issue["check_name"], issue["severity"]) == ("codejury/tests", "info")
    [diagnostic] = rdjson.review_to_rdjson_dict(review)["diagnostics"]
    assert diagnostic["code"]["value"] == "codejury/tests" and TESTS_LINE in diagnostic["message"]


def test_the_forge_summary_names_the_failing_tests_under_their_own_heading(
    gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gh.add_pr(number=9, author="alice", files=FILES)
    report = tmp_path / "junit.xml"
    report.write_text(JUNIT, encoding="utf-8")
    code, out, err = run(gh, monkeypatch, [], "--tests", str(report), "--publish", token=ACTIONS, number=9)
    assert code == 0, err
    body = _flat(summary(gh, 9))
    assert f"**Tests:** tests ({report}): 1 of 3 failed: tests.test_reports::test_x" in body, body
    could_not = body.partition("What this review could not do")[2]
    assert "1 of 3 failed" not in could_not
