"""The linked issues' acceptance criteria: each one the review says is not met (a finding cites it), met (the
walkthrough showed where, checked against the diff) or not judged, in the JSON, markdown, terminal and forge summary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from codejury_fakes.github import FakeGitHub

from codejury.agents.walkthrough import CRITERIA_PROMPT, CriteriaDraft, checked
from codejury.change.diffparse import parse_diff
from codejury.change.intent import MAX_CRITERIA, acceptance_criteria
from codejury.change.types import LinkedIssue
from codejury.cli import cli
from codejury.findings import Criterion, Review
from codejury.forges.markers import parse_summary
from codejury.render.jsonout import REVIEW_JSON_SCHEMA, schema_errors
from codejury.render.markdown import CRITERIA_HEADING, NOT_JUDGED, criteria_lines
from codejury.stages.criteria import cites, judged
from codejury.testing.changes import unified_diff
from codejury.testing.scripted import Final, Raw, ScriptedResolver
from codejury.testing.scripted import finding as model_finding
from tests.forges.scripted_cli import MODEL_FLAGS
from tests.forges.test_github_bot import ACTIONS, pr_url
from tests.forges.test_github_bot import gh as gh  # noqa: F401  (the fixture)

ISSUE = """Export orders as CSV.

## Acceptance criteria
- commas in customer names are escaped
- the header row is written once
- exports over 10,000 rows are streamed

## Notes
- we may add JSON later
"""
CODE = (
    "import csv\n\n\ndef export(rows, out):\n    writer = csv.writer(out)\n    write_header(writer)\n"
    + "".join(f"    step_{n} = {n}\n" for n in range(10))
    + "    for row in rows:\n        out.write(','.join(row))\n"
)


def test_criteria_are_checkboxes_anywhere_and_bullets_under_their_heading_only() -> None:
    body = "Intro\n- not one\n\nDefinition of Done:\n1. tests pass\n\n### Tasks\n- [ ] docs updated\n- [x] ci green\n"
    found = acceptance_criteria([LinkedIssue("#3", "t", body), LinkedIssue("SHOP-1", "t", ISSUE)])
    assert found[:3] == [("#3", "tests pass"), ("#3", "docs updated"), ("#3", "ci green")]
    assert [t for _, t in found[3:]] == [
        "commas in customer names are escaped",
        "the header row is written once",
        "exports over 10,000 rows are streamed",
    ]
    many = LinkedIssue("#4", "t", "\n".join(f"- [ ] item {n}" for n in range(30)))
    assert len(acceptance_criteria([many])) == MAX_CRITERIA


def test_a_finding_cites_a_criterion_by_its_words_not_by_a_shared_word() -> None:
    said = 'Criterion "commas in customer names are escaped" is not met: rows are joined.'
    quoting = model_finding("e.py", 9, "Names with commas break the CSV", category="intent", body=said)
    loose = model_finding("e.py", 9, "Unescaped customer names with commas", category="intent")
    unrelated = model_finding("e.py", 9, "The header is hard-coded", category="style")
    from codejury.findings import Finding

    criterion = "commas in customer names are escaped"
    assert cites(Finding(id="f", reviewer="r", **quoting), criterion)
    assert cites(Finding(id="f", reviewer="r", **loose), criterion)  # an intent finding naming most of its words
    assert not cites(Finding(id="f", reviewer="r", **unrelated), "the header row is written once")


def test_only_a_met_claim_whose_evidence_the_diff_shows_counts() -> None:
    files = parse_diff(unified_diff("export.py", "", CODE))
    draft = CriteriaDraft.model_validate(
        {"summary": "Adds `export`.", "groups": [], "criteria": [
            {"number": 2, "met": True, "evidence": "`write_header` writes it before the rows"},
            {"number": 3, "met": True, "evidence": "`stream_rows` streams them"},  # not in the diff
            {"number": 1, "met": True, "evidence": "it is handled"},  # names no code
            {"number": 9, "met": True, "evidence": "`export`"},  # no such criterion: ignored
        ]}
    )  # fmt: skip
    walk = checked(draft, files, criteria=3)
    assert walk.criteria_met == {2: "`write_header` writes it before the rows"}
    assert walk.unsupported == 2
    crits = [("#12", c) for c in ("commas in customer names are escaped", "the header row is written once", "x y z")]
    result = judged(crits, [], walk.criteria_met)
    assert [c.status for c in result] == ["not_judged", "met", "not_judged"]


def _run(gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, body: str, draft: dict[str, Any],  # noqa: F811
         findings: list[dict[str, Any]], *flags: str, number: int = 41) -> tuple[str, ScriptedResolver]:  # fmt: skip
    gh.add_pr(number=number, author="alice", files={"export.py": ("", CODE)}, body=body)
    monkeypatch.setenv("GITHUB_TOKEN", ACTIONS)
    monkeypatch.setenv("CODEJURY_GITHUB_URL", gh.api_url)
    config = tmp_path / "criteria.toml"
    config.write_text("analyzers = false\n", encoding="utf-8")
    resolver = ScriptedResolver(
        {"reviewer": [Final(findings)], "coordinator": [Raw({"decisions": []})]},
        walkthroughs={"coordinator": [Raw(draft)]},
        tools=False,
    )
    args = ["review", *MODEL_FLAGS, "--fail-on", "never", "--url", pr_url(gh, number), "--config", str(config), *flags]
    with resolver.active():
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout, resolver


DRAFT = {
    "summary": "Adds `export`.",
    "groups": [],
    "criteria": [{"number": 2, "met": True, "evidence": "`write_header` is called once before the rows"}],
}
QUOTED = 'Acceptance criterion "commas in customer names are escaped": rows are joined by hand.'
UNMET = model_finding("export.py", 18, "Customer names with commas are not escaped", category="intent", body=QUOTED)


def test_each_criterion_is_unmet_met_or_not_judged_in_the_json_and_the_forge_summary(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    gh.add_issue(12, "Export orders", ISSUE)
    out, resolver = _run(gh, monkeypatch, tmp_path, "Fixes #12", DRAFT, [UNMET], "--format", "json", "--publish")
    data = json.loads(out)
    assert schema_errors(data, REVIEW_JSON_SCHEMA) == []
    assert [(c["status"], c["text"]) for c in data["criteria"]] == [
        ("unmet", "commas in customer names are escaped"),
        ("met", "the header row is written once"),
        ("not_judged", "exports over 10,000 rows are streamed"),
    ]
    assert data["criteria"][0]["cited_by"] == ["export.py:18 Customer names with commas are not escaped"]
    prompt = resolver.models["coordinator"].walkthrough_prompts[0]  # type: ignore[attr-defined]
    assert CRITERIA_PROMPT in prompt and "3. exports over 10,000 rows are streamed" in prompt
    [summary] = [c.body for c in gh.issue_comments(41) if parse_summary(c.body)]
    assert CRITERIA_HEADING in summary and "1 not met, 1 met, 1 not judged." in summary
    assert "| #12 | exports over 10,000 rows are streamed | could not judge:" in summary


def test_markdown_and_terminal_list_the_criteria(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    gh.add_issue(12, "Export orders", ISSUE)
    markdown, _ = _run(gh, monkeypatch, tmp_path, "Fixes #12", DRAFT, [UNMET], "--format", "markdown")
    assert "| #12 | the header row is written once | met: `write_header` is called once before the rows |" in markdown
    gh.add_issue(13, "Export orders", ISSUE)
    terminal, _ = _run(gh, monkeypatch, tmp_path, "Fixes #13", DRAFT, [], "--format", "terminal", number=42)
    assert "Acceptance criteria of the linked issues" in terminal
    assert "exports over 10,000 rows are streamed: could not judge" in " ".join(terminal.split())


def test_without_linked_issues_the_walkthrough_asks_nothing_more_and_no_criteria_are_listed(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    out, resolver = _run(gh, monkeypatch, tmp_path, "Adds the export.", DRAFT, [], "--format", "json")
    assert "criteria" not in json.loads(out)
    prompt = resolver.models["coordinator"].walkthrough_prompts[0]  # type: ignore[attr-defined]
    assert CRITERIA_PROMPT not in prompt
    assert len(resolver.models["coordinator"].walkthrough_prompts) == 1  # type: ignore[attr-defined]


def test_criteria_cells_cannot_break_the_table() -> None:
    review = Review(verdict="approved", tier="lite", summary="", criteria=[Criterion(issue="#1", text="a | b\nc")])
    [row] = [line for line in criteria_lines(review.criteria) if line.startswith("| #1")]
    assert row == f"| #1 | a \\| b c | {NOT_JUDGED} |"


def test_dry_run_counts_the_criteria_question_only_when_there_are_criteria() -> None:
    from codejury.agents.walkthrough import planned_tokens
    from codejury.change.types import ChangeMeta

    files = parse_diff(unified_diff("export.py", "", CODE))
    plain = planned_tokens(ChangeMeta(title="Export"), files)
    asked = planned_tokens(ChangeMeta(title="Export"), files, criteria=["the header row is written once"])
    assert asked > plain
    assert planned_tokens(ChangeMeta(title="Export"), files, criteria=()) == plain
