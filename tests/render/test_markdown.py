from __future__ import annotations

from codejury.findings import ReviewerReport
from codejury.render.markdown import (
    code_span,
    fenced,
    grounding_note,
    render_plan_markdown,
    render_review_markdown,
)
from tests.render.samples import HOSTILE, finding, full_review, not_reviewed_review, plan


def test_verdict_line_comes_first_after_heading() -> None:
    text = render_review_markdown(full_review())
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0] == "## codejury review"
    assert lines[1] == "**Verdict: Changes requested**"
    assert lines[2] == "1 critical issue and 1 warning from 2 reviewers."


def test_findings_grouped_by_section_with_severity_location_and_suggestion() -> None:
    text = render_review_markdown(full_review())
    security = text.index("### Security (1)")
    performance = text.index("### Performance (1)")
    assert security < performance
    assert "**Critical** · `src/app/db.py:42-44` · **SQL built from request input**" in text
    assert "**Warning** · `src/app/views.py:7` · **Query inside a loop**" in text
    assert "The query interpolates `name` directly.\nUse a bound parameter." in text
    assert '```\ncur.execute("SELECT * FROM t WHERE name = %s", (name,))\n```' in text
    assert text.count("Suggested change:") == 1


def test_caveats_failed_skipped_dropped_and_footer() -> None:
    text = render_review_markdown(full_review())
    assert "### Reviewers that failed" in text
    assert "- **documentation** (`openai:gpt-5-nano`): timed out after 300s" in text
    assert "- `package-lock.json`: lock file" in text
    assert "3 findings dropped (duplicate: 2, outside_diff: 1)." in text
    footer = text.rstrip().splitlines()[-1]
    assert footer.startswith("<sub>codejury · tier full · 4,100 in / 650 out")
    assert "$0.0443" in footer
    assert "1m 05s" in footer
    assert "| coordinator | anthropic:claude-opus | ok |" in text
    assert "Unjudged" not in text
    assert "Break glass" not in text


def test_failed_coordinator_listed_and_unjudged_notice() -> None:
    coordinator = ReviewerReport(name="coordinator", model="m", status="failed", error="rate limited")
    text = render_review_markdown(full_review(coordinator=coordinator, judged=False, verdict="significant_concerns"))
    assert "**Verdict: Significant concerns**" in text
    assert "**Unjudged:**" in text
    assert "- **coordinator** (`m`): rate limited" in text


def test_break_glass_notice() -> None:
    text = render_review_markdown(full_review(break_glass=True, verdict="approved"))
    assert "**Verdict: Approved**" in text
    assert "**Break glass:**" in text


def test_empty_review() -> None:
    text = render_review_markdown(
        full_review(
            findings=[],
            reviewers=[],
            coordinator=None,
            skipped_files=[],
            dropped_findings={},
            verdict="approved",
            summary="No problems found.",
        )
    )
    assert "No findings." in text
    assert "###" not in text
    assert "<details>" not in text
    assert text.endswith("</sub>\n")


def test_fence_is_longer_than_any_backtick_run_inside() -> None:
    suggestion = "x = 1\n````\nnot the end\n```\ny = 2"
    text = render_review_markdown(full_review(findings=[finding(suggestion=suggestion)]))
    assert "`````\nx = 1\n````\nnot the end\n```\ny = 2\n`````" in text
    assert fenced("plain") == "```\nplain\n```"
    assert fenced("a ``` b\n", "py") == "````py\na ``` b\n````"


def test_code_span_survives_backticks() -> None:
    assert code_span("a.py") == "`a.py`"
    assert code_span("we`ird.py") == "``we`ird.py``"
    assert code_span("`edge`") == "`` `edge` ``"


def test_model_text_is_cleaned_and_titles_are_one_line() -> None:
    hostile = finding(title="Line one\nline two\x1b[2J", body=HOSTILE, suggestion=HOSTILE)
    text = render_review_markdown(full_review(findings=[hostile], summary=HOSTILE))
    assert "\x1b" not in text
    assert "\x07" not in text
    assert "\u202e" not in text
    assert "\r" not in text
    assert "**Line one line two[2J**" in text


def test_plan_markdown() -> None:
    text = render_plan_markdown(plan())
    assert "## codejury plan (dry run)" in text
    assert "**Tier:** lite" in text
    assert "| code_quality | openai:gpt-5 | 2: `src/a.py`, `src/b.py` |" in text
    assert "| documentation | openai:gpt-5-nano | 1: `README.md` |" in text
    assert "**Coordinator:** `anthropic:claude-opus`" in text
    assert "- `dist/app.min.js`: minified" in text
    assert "12,345 input tokens" in text
    assert "$0.0456" in text


def test_plan_table_cells_escape_pipes_and_newlines() -> None:
    p = plan()
    p.reviewers[0].files = ["odd|name\n.py"]
    text = render_plan_markdown(p)
    assert "| 1: `odd\\|name .py` |" in text


def test_a_change_nothing_reviewed_says_so_and_lists_the_skipped_files_openly() -> None:
    text = render_review_markdown(not_reviewed_review())
    assert "**Verdict: Not reviewed**" in text
    assert "> **Not reviewed:** no model looked at this change" in text and "not approved" in text
    assert "No findings." not in text and "Approved" not in text
    assert "<details open>\n<summary>Skipped files (2)</summary>" in text
    assert "- `yarn.lock`: lock file" in text


def test_plan_with_no_reviewer_says_nothing_would_be_reviewed() -> None:
    text = render_plan_markdown(plan(reviewers=[]))
    assert "**Nothing to review:**" in text and "*not reviewed*" in text
    assert "<details open>" in text
    assert "Nothing to review" not in render_plan_markdown(plan())


def test_grounding_note_says_why_an_advisory_finding_does_not_block() -> None:
    confirmed = finding(evidence=["ruff:S608"], verified=True)
    rejected_hit = finding(evidence=["rules:perf-py-query-in-loop"], advisory=True)
    own_check_only = finding(verified=True, advisory=True)
    assert grounding_note(confirmed) == "Grounds: ruff S608; checked against the code"
    assert grounding_note(rejected_hit) == (
        "Grounds: rules perf-py-query-in-loop; advisory: the reviewing model did not confirm the hit, does not block"
    )
    # A passed check is never also called "not verified".
    assert grounding_note(own_check_only) == (
        "Grounds: model, checked against the code; "
        "advisory: a small model's finding without analyzer evidence, does not block"
    )
    assert grounding_note(finding()) == "Grounds: model alone"


def test_every_finding_in_markdown_shows_its_grounds() -> None:
    text = render_review_markdown(
        full_review(findings=[finding(evidence=["ruff:S608", "rules:py-sql-built-from-strings"]), finding(id="B")])
    )
    assert "_Grounds: ruff S608, rules py-sql-built-from-strings_" in text
    assert "_Grounds: model alone_" in text
