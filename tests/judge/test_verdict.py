from __future__ import annotations

from typing import Any

import pytest

from codejury.config import FAIL_ON_CHOICES
from codejury.findings import Finding, Review, SkippedFile, Verdict
from codejury.judge.verdict import (
    VCS_ACTION,
    FailOn,
    decide_verdict,
    should_fail,
    summarise,
    summarise_unreviewed,
)


def f(
    severity: str,
    *,
    path: str = "a.py",
    category: str | None = None,
    confidence: float = 0.8,
    reviewer: str = "security",
    title: str = "Problem",
    line: int = 1,
) -> Finding:
    return Finding(
        id=f"{severity}-{path}-{category}-{line}",
        reviewer=reviewer,
        category=category or f"cat-{path}-{line}",
        severity=severity,
        path=path,
        start_line=line,
        end_line=line,
        title=title,
        body="b",
        confidence=confidence,
    )


def review(findings: list[Finding], **overrides: Any) -> Review:
    fields: dict[str, Any] = {
        "verdict": decide_verdict(findings),
        "tier": "full",
        "summary": "s",
        "findings": findings,
    }
    fields.update(overrides)
    return Review(**fields)


@pytest.mark.parametrize(
    ("findings", "expected"),
    [
        ([], "approved"),
        ([f("suggestion", confidence=0.2), f("suggestion", confidence=0.4, path="b.py")], "approved"),
        ([f("suggestion", confidence=0.9)], "approved_with_comments"),
        ([f("warning")], "approved_with_comments"),
        ([f("warning", path="a.py"), f("warning", path="b.py"), f("suggestion")], "approved_with_comments"),
        (
            [f("warning", path="a.py"), f("warning", path="b.py"), f("warning", path="c.py")],
            "significant_concerns",
        ),
        ([f("warning", path="a.py", line=1), f("warning", path="a.py", line=50)], "significant_concerns"),
        (
            [f("warning", path="a.py", category="race"), f("warning", path="b.py", category="Race")],
            "significant_concerns",
        ),
        ([f("critical")], "requested_changes"),
        ([f("critical", confidence=0.1), f("suggestion")], "requested_changes"),
    ],
)
def test_rubric(findings: list[Finding], expected: Verdict) -> None:
    assert decide_verdict(findings) == expected


def test_vcs_actions() -> None:
    assert VCS_ACTION == {
        "approved": "approve",
        "approved_with_comments": "approve",
        "significant_concerns": "unapprove",
        "requested_changes": "block",
        "not_reviewed": "unapprove",
    }


def test_break_glass_forces_approval() -> None:
    assert decide_verdict([f("critical")], break_glass=True) == "approved"
    assert decide_verdict([f("critical")], break_glass=True, judged=False) == "approved"


@pytest.mark.parametrize("findings", [[], [f("suggestion", confidence=0.1)], [f("suggestion")], [f("warning")]])
def test_unjudged_never_approves(findings: list[Finding]) -> None:
    assert decide_verdict(findings, judged=False) == "significant_concerns"


def test_unjudged_keeps_a_harsher_verdict() -> None:
    assert decide_verdict([f("critical")], judged=False) == "requested_changes"


@pytest.mark.parametrize(
    ("fail_on", "severities", "expected"),
    [
        ("never", ["critical"], False),
        ("suggestion", [], False),
        ("suggestion", ["suggestion"], True),
        ("warning", ["suggestion"], False),
        ("warning", ["warning"], True),
        ("warning", ["critical"], True),
        ("critical", ["warning", "warning"], False),
        ("critical", ["critical"], True),
    ],
)
def test_should_fail_by_severity(fail_on: FailOn, severities: list[str], expected: bool) -> None:
    findings = [f(s, path=f"{i}.py") for i, s in enumerate(severities)]
    assert should_fail(review(findings), fail_on) is expected


def test_should_fail_on_requested_changes_follows_the_verdict() -> None:
    assert should_fail(review([f("critical")]), "requested_changes")
    three = [f("warning", path=p) for p in ("a.py", "b.py", "c.py")]
    assert not should_fail(review(three), "requested_changes")
    # The verdict decides, not the findings: an unjudged review can block without a critical.
    assert should_fail(review([], verdict="requested_changes"), "requested_changes")


@pytest.mark.parametrize("fail_on", FAIL_ON_CHOICES)
def test_break_glass_never_fails(fail_on: FailOn) -> None:
    r = review([f("critical")], verdict="approved", break_glass=True)
    assert not should_fail(r, fail_on)


def test_summarise_counts_and_headline() -> None:
    findings = [
        f(
            "critical",
            reviewer="security",
            title="Token logged in plain text.",
            path="auth.py",
            line=12,
            confidence=0.7,
        ),
        f("warning", reviewer="performance", path="b.py"),
        f("warning", reviewer="performance", path="c.py"),
        f("suggestion", reviewer="documentation"),
    ]
    text = summarise(findings, "requested_changes", [], judged=True, break_glass=False)
    assert text == (
        "1 critical issue, 2 warnings and 1 suggestion from 3 reviewers; "
        "security: Token logged in plain text in auth.py:12."
    )


def test_summarise_only_suggestions_has_no_headline() -> None:
    text = summarise([f("suggestion"), f("suggestion", path="b.py")], "approved_with_comments", [], True, False)
    assert text == "2 suggestions from 1 reviewer."


def test_summarise_no_findings() -> None:
    assert summarise([], "approved", [], True, False) == "No problems found."
    assert summarise([], "significant_concerns", [], False, False) == (
        "No findings were reported. The coordinator could not run, so the findings are unjudged."
    )


def test_summarise_failed_reviewers_deduplicated() -> None:
    text = summarise([], "approved", ["security", "docs", "security"], True, False)
    assert text == "No problems found. 2 reviewers failed (security, docs)."
    one = summarise([], "approved", ["docs"], False, False)
    assert one == (
        "No problems found. 1 reviewer failed (docs); the coordinator could not run, so the findings are unjudged."
    )


def test_summarise_break_glass_states_what_the_review_alone_would_say() -> None:
    text = summarise([f("critical")], "approved", [], True, True)
    assert text.endswith("Break glass: approved by a human override (the review alone: requested changes).")
    assert summarise([], "approved", [], True, True).startswith("No problems found. Break glass:")


UNREVIEWED = [SkippedFile(path="yarn.lock", reason="lock file")]


@pytest.mark.parametrize(
    ("fail_on", "expected"),
    [
        ("never", False),
        ("requested_changes", False),
        ("unreviewed", True),
        ("critical", True),
        ("warning", True),
        ("suggestion", True),
    ],
)
def test_a_not_reviewed_review_fails_from_unreviewed_up(fail_on: FailOn, expected: bool) -> None:
    r = review([], verdict="not_reviewed", skipped_files=UNREVIEWED)
    assert should_fail(r, fail_on) is expected


def test_fail_on_unreviewed_still_fails_on_requested_changes() -> None:
    assert should_fail(review([f("critical")]), "unreviewed")
    assert not should_fail(review([f("warning")]), "unreviewed")
    assert not should_fail(review([]), "unreviewed"), "a reviewed, clean change passes"


def test_every_fail_on_choice_is_a_level_should_fail_knows() -> None:
    for fail_on in FAIL_ON_CHOICES:
        should_fail(review([f("suggestion")]), fail_on)  # type: ignore[arg-type]


def test_unreviewed_summary_names_the_skipped_files_and_says_nothing_is_approved() -> None:
    skipped = [SkippedFile(path=f"vendor/lib{i}.go", reason="vendored code (vendor/)") for i in range(7)]
    text = summarise_unreviewed(skipped)
    assert text.startswith("Nothing was reviewed: every changed file was skipped (vendor/lib0.go: vendored code")
    assert "vendor/lib4.go" in text and "vendor/lib5.go" not in text and "and 2 more" in text
    assert "Nothing is approved" in text


def test_unreviewed_summary_when_no_reviewer_is_enabled() -> None:
    text = summarise_unreviewed([], reviewable=2, tier="trivial")
    assert "no reviewer is enabled for a trivial change (2 reviewable files)" in text


def test_unreviewed_summary_under_break_glass_says_what_the_review_alone_would_be() -> None:
    text = summarise_unreviewed(UNREVIEWED, break_glass=True)
    assert text.endswith("Break glass: approved by a human override (the review alone: not reviewed).")


@pytest.mark.parametrize("findings", [[], [f("suggestion")], [f("warning")]])
def test_a_withheld_approval_is_never_an_approval_and_says_why(findings: list[Finding]) -> None:
    assert decide_verdict(findings, withheld=True) == "significant_concerns"
    assert decide_verdict([f("critical")], withheld=True) == "requested_changes"
    assert decide_verdict(findings, withheld=True, break_glass=True) == "approved"
    reason = "a.py was skipped as binary file, a reason its author controls"
    text = summarise(findings, "significant_concerns", [], True, False, withheld=[reason])
    assert f"Approval is withheld: {reason}." in text
