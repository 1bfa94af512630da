"""``--dry-run``'s token estimate counts what the reviewers would get besides the change: the failing tests of
``--tests`` reports, and on a forge the change's discussion; the plan says so in one line each."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from codejury.change.discussion import Discussion, DiscussionComment, DiscussionThread
from codejury.cli import cli
from codejury.findings import Plan
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings, unified_diff

CART = "class Cart:\n    def total(self):\n        return sum(self.items)\n"
CART_NEW = CART.replace("return sum(self.items)", "return sum(self.items) * 0.9")


def _report(failures: int) -> str:
    cases = "".join(
        f'<testcase classname="tests.test_cart" name="test_total_{n}"><failure message="assert 9.0 == 10">'
        f"def test_total_{n}():\n    assert Cart([10]).total() == 10\nE   assert 9.0 == 10</failure></testcase>"
        for n in range(failures)
    )
    passing = '<testcase classname="tests.test_cart" name="test_count"/>'
    return f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{cases}{passing}</testsuite></testsuites>\n'


def _dry_run(tmp_path: Path, fmt: str, *extra: str) -> tuple[str, str]:
    diff = unified_diff("cart.py", CART, CART_NEW)
    args = ["review", "--diff", "-", "--dry-run", "--format", fmt, "--model", "openai:gpt-5-mini", *extra]
    result = CliRunner().invoke(cli, args, input=diff, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout, result.stderr


def _estimate(markdown: str) -> int:
    match = re.search(r"\*\*Estimate:\*\* ([\d,]+) input tokens", markdown)
    assert match is not None, markdown
    return int(match.group(1).replace(",", ""))


def test_a_dry_run_with_failing_tests_counts_them_and_says_so(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(_report(failures=3), encoding="utf-8")
    without, _ = _dry_run(tmp_path, "markdown")
    with_tests, _ = _dry_run(tmp_path, "markdown", "--tests", str(report))
    assert _estimate(with_tests) > _estimate(without)
    assert "test failures included: 3 failing tests of" in with_tests and "junit.xml" in with_tests
    assert "test failures" not in without

    plan = json.loads(_dry_run(tmp_path, "json", "--tests", str(report))[0])
    assert plan["estimated_input_tokens"] == _estimate(with_tests)
    [note] = plan["estimate_notes"]
    assert note.startswith("test failures included: 3 failing tests") and "tokens in each model call" in note
    assert "estimate_notes" not in json.loads(_dry_run(tmp_path, "json")[0]), "no key when nothing is added"


def test_a_report_without_failures_adds_nothing_and_says_so(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(_report(failures=0), encoding="utf-8")
    without, _ = _dry_run(tmp_path, "markdown")
    passing, _ = _dry_run(tmp_path, "markdown", "--tests", str(report))
    assert _estimate(passing) == _estimate(without)
    assert "no test failures to include: none of 1 test failed" in passing


def test_failing_tests_left_out_of_the_context_are_not_counted(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(_report(failures=2), encoding="utf-8")
    config = tmp_path / "codejury.toml"
    config.write_text("test_failures_tokens = 0\n", encoding="utf-8")
    without, _ = _dry_run(tmp_path, "markdown", "--config", str(config))
    off, _ = _dry_run(tmp_path, "markdown", "--config", str(config), "--tests", str(report))
    assert _estimate(off) == _estimate(without)
    assert "test failures not included: test_failures_tokens is 0" in off


DISCUSSION = Discussion(
    forge="gitlab",
    noun="merge request",
    threads=(
        DiscussionThread(
            (
                DiscussionComment("alice", "Why not use db.fetch_user here? " * 20, "2025-01-01T10:00:00Z"),
                DiscussionComment("bob", "Agreed, the raw query is risky.", "2025-01-01T11:00:00Z"),
            ),
            path="app/auth/users.py",
            line=10,
            resolvable=True,
        ),
    ),
)


async def test_a_dry_run_on_a_forge_counts_the_discussion_it_read_with_the_change(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"app/auth/users.py": (AUTH_OLD, AUTH_NEW)})
    on_forge = replace(change, meta=replace(change.meta, discussion=DISCUSSION))
    plain, resolver, _ = await run_review(change, {}, dry_run=True)
    counted, _, _ = await run_review(on_forge, {}, dry_run=True)
    assert isinstance(plain, Plan) and isinstance(counted, Plan)
    assert resolver.resolved == []
    assert counted.estimated_input_tokens > plain.estimated_input_tokens
    [note] = besides_the_walkthrough(counted)
    assert note.startswith("discussion included: the merge request's discussion (1 thread, 1 open), about ")
    assert besides_the_walkthrough(plain) == []

    off, _, _ = await run_review(on_forge, {}, dry_run=True, settings=scripted_settings(discussion_tokens=0))
    assert isinstance(off, Plan)
    assert (off.estimated_input_tokens, besides_the_walkthrough(off)) == (plain.estimated_input_tokens, [])


def besides_the_walkthrough(plan: Plan) -> list[str]:
    return [n for n in plan.estimate_notes if not n.startswith("the walkthrough of the change: ")]


async def test_a_dry_run_counts_the_walkthroughs_tokens_and_says_so(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"app/auth/users.py": (AUTH_OLD, AUTH_NEW)})
    plan, _, _ = await run_review(change, {}, dry_run=True)
    without, _, _ = await run_review(change, {}, dry_run=True, settings=scripted_settings(describe=False))
    assert isinstance(plan, Plan) and isinstance(without, Plan)
    [note] = [n for n in plan.estimate_notes if n.startswith("the walkthrough of the change: about ")]
    tokens = int(re.search(r"about ([\d,]+) input tokens on scripted:coordinator", note)[1].replace(",", ""))  # type: ignore[index]
    assert plan.estimated_input_tokens - without.estimated_input_tokens == tokens > 100
    assert without.estimate_notes == []


async def test_a_dry_run_names_the_models_with_no_known_price(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"app/auth/users.py": (AUTH_OLD, AUTH_NEW)})
    mystery = "scripted-gw:team-model"
    settings = scripted_settings()
    settings = settings.model_copy(update={"reviewer_models": {**settings.reviewer_models, "security": mystery}})
    plan, _, _ = await run_review(change, {}, dry_run=True, settings=settings)
    assert isinstance(plan, Plan)
    assert besides_the_walkthrough(plan) == [
        f'no known price for {mystery}: not in the estimated cost (set [prices."provider:model"])'
    ]
