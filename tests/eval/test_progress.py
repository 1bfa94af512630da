"""The eval's progress display on a terminal: a bar with the case under review, cases done of all,
elapsed time, the time left and the running cost (the plain lines of a log are in test_eval_e2e.py)."""

from __future__ import annotations

import io
import re

from rich.console import Console

from codejury.eval.dataset import EvalCase, ExpectedComment
from codejury.eval.progress import CaseProgress, clock, eta_s, outcome
from codejury.eval.results import CaseRun, FoundFinding

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def screen(buf: io.StringIO) -> str:
    return ANSI.sub("", buf.getvalue())


def test_the_bar_shows_the_case_under_review_done_of_all_eta_and_cost() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=160, color_system=None)
    cases = [EvalCase(id=f"case-{n}", diff=f"{n}.diff") for n in (1, 2, 3)]
    with CaseProgress("codejury", 3, live=True, console=console) as progress:
        progress.started(cases[0])
        assert "case-1" in screen(buf) and "0/3" in screen(buf)
        assert "ETA -:--:--" in screen(buf)  # nothing finished yet: no estimate
        progress.finished(cases[0], CaseRun(case_id="case-1", verdict="approved", cost_usd=0.0125, wall_s=4.0))
        progress.started(cases[1])
        shown = screen(buf).rsplit("codejury eval:", 1)[-1]
        assert "1/3" in shown and "case-2" in shown and "$0.0125" in shown
        assert re.search(r"ETA \d:\d\d:\d\d", shown)
        progress.finished(cases[1], CaseRun(case_id="case-2", error="timed out after 3600 s", cost_usd=0.0))
        progress.started(cases[2])
        progress.finished(cases[2], CaseRun(case_id="case-3", verdict="approved", cost_usd=0.5))
    final = screen(buf)
    # each finished case stays on screen as one line above the bar
    assert "codejury eval: codejury [2/3] case-2: failed: timed out after 3600 s" in final
    assert "3/3" in final and "$0.5125" in final and "ETA 0:00:00" in final


def test_the_time_left_is_the_mean_pace_times_the_cases_left() -> None:
    assert eta_s(30.0, 0, 3) is None
    assert eta_s(30.0, 1, 3) == 60.0
    assert eta_s(90.0, 3, 3) == 0.0
    assert (clock(None), clock(0), clock(3725.4)) == ("-:--:--", "0:00:00", "1:02:05")


def test_a_finished_case_counts_its_findings_in_words() -> None:
    case = EvalCase(id="case-1", diff="1.diff", expected=[ExpectedComment(path="a.py", start_line=3, end_line=3)])
    one = [FoundFinding(path="a.py", start_line=3, end_line=3)]
    two = [*one, FoundFinding(path="a.py", start_line=9, end_line=9)]
    assert outcome(case, CaseRun(case_id="case-1", verdict="approved_with_comments", findings=one)) == (
        "approved_with_comments, 1 finding, 1 matched"
    )
    assert outcome(case, CaseRun(case_id="case-1", verdict="changes_requested", findings=two)) == (
        "changes_requested, 2 findings, 1 matched"
    )
