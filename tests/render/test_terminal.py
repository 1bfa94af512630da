from __future__ import annotations

from io import StringIO

from rich.console import Console

from codejury.findings import ReviewerReport
from codejury.render.terminal import render_plan_terminal, render_review_terminal
from tests.render.samples import HOSTILE, finding, full_review, not_reviewed_review, plan


def _console(*, color: bool = False) -> tuple[Console, StringIO]:
    buf = StringIO()
    if color:
        return Console(file=buf, width=100, force_terminal=True, color_system="truecolor"), buf
    return Console(file=buf, width=100, force_terminal=False, color_system=None), buf


def test_review_terminal_shows_verdict_findings_and_usage() -> None:
    console, buf = _console()
    render_review_terminal(full_review(), console)
    out = buf.getvalue()
    assert "Verdict: Changes requested" in out
    assert "codejury review · tier full" in out
    assert "Security (1)" in out and "Performance (1)" in out
    assert out.index("Security (1)") < out.index("Performance (1)")
    assert "src/app/db.py:42-44" in out
    assert "SQL built from request input" in out
    assert "Use a bound parameter." in out
    assert "cur.execute(" in out
    assert "Failed: documentation (openai:gpt-5-nano): timed out after 300s" in out
    assert "Dropped findings: duplicate: 2, outside_diff: 1" in out
    assert "package-lock.json" in out and "lock file" in out
    assert "coordinator" in out
    assert "$0.0443" in out


def test_review_terminal_notices() -> None:
    console, buf = _console()
    coordinator = ReviewerReport(name="coordinator", model="m", status="failed", error="boom")
    render_review_terminal(full_review(break_glass=True, judged=False, coordinator=coordinator), console)
    out = buf.getvalue()
    assert "Break glass" in out
    assert "Unjudged" in out
    assert "Failed: coordinator (m): boom" in out


def test_empty_review_terminal() -> None:
    console, buf = _console()
    render_review_terminal(
        full_review(findings=[], reviewers=[], coordinator=None, verdict="approved", summary="ok"), console
    )
    assert "No findings." in buf.getvalue()


def test_control_characters_and_markup_do_not_leak() -> None:
    hostile = finding(title=HOSTILE, body=HOSTILE, suggestion=HOSTILE, path="a[/x].py")
    review = full_review(
        findings=[hostile],
        summary=HOSTILE,
        reviewers=[ReviewerReport(name="x[red]", model="m", status="failed", error=HOSTILE)],
    )
    for color in (False, True):
        console, buf = _console(color=color)
        render_review_terminal(review, console)
        out = buf.getvalue()
        assert "\x07" not in out
        assert "\u202e" not in out
        assert "\x1b]" not in out
        assert "\x1b[31mred" not in out
        assert "evil[31mred" in out
        assert "[bold]markup[/bold]" in out
        assert ":smile:" in out
        assert "a[/x].py" in out
        assert "x[red]" in out
        if not color:
            assert "\x1b" not in out


def test_plan_terminal() -> None:
    console, buf = _console()
    p = plan()
    p.reviewers[0].files.append("[b]weird\x1b[0m.py")
    render_plan_terminal(p, console)
    out = buf.getvalue()
    assert "codejury plan (dry run) · tier lite" in out
    assert "code_quality" in out and "openai:gpt-5" in out
    assert "src/a.py" in out and "[b]weird[0m.py" in out
    assert "\x1b" not in out
    assert "Coordinator: anthropic:claude-opus" in out
    assert "dist/app.min.js" in out and "minified" in out
    assert "12,345 input tokens" in out and "$0.0456" in out


def test_review_terminal_of_a_change_nothing_reviewed() -> None:
    console, buf = _console()
    render_review_terminal(not_reviewed_review(), console)
    out = buf.getvalue()
    assert "Verdict: Not reviewed" in out and "no model looked at this change" in out
    assert "No findings." not in out
    assert "Skipped yarn.lock" in out and "vendor/lib/a.go" in out


def test_plan_terminal_with_no_reviewer_says_nothing_would_be_reviewed() -> None:
    console, buf = _console()
    render_plan_terminal(plan(reviewers=[]), console)
    assert "Nothing to review" in buf.getvalue()


def test_review_terminal_shows_what_each_finding_stands_on() -> None:
    grounded = [
        finding(id="A", evidence=["ruff:S608"], verified=True),
        finding(id="B", title="Unbounded cache", verified=True),
        finding(id="C", title="Loop issues a query"),
        finding(id="D", title="Test fails", evidence=["junit:tests.test_db::test_find"]),
    ]
    console, buf = _console()
    render_review_terminal(full_review(findings=grounded), console)
    out = " ".join(buf.getvalue().split())
    assert "Grounds: ruff S608; checked against the code" in out
    assert "Grounds: model, checked against the code" in out
    assert "Grounds: model alone" in out
    assert "Grounds: failing test tests.test_db::test_find" in out
