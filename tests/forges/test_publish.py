"""Publishing plans, pure: what a re-review posts, resolves, keeps and approves."""

from __future__ import annotations

from typing import Any

import pytest

from codejury.change.diffparse import parse_diff
from codejury.change.types import FileChange
from codejury.findings import Finding, Review, ReviewerReport
from codejury.fingerprint import fingerprint
from codejury.forges.markers import SummaryState, parse_finding, parse_summary
from codejury.forges.publish import (
    PlanOptions,
    PreviousState,
    PreviousThread,
    Reply,
    approval_action,
    code_digest,
    failure_note,
    finding_title,
    plan_publish,
    previous_review,
    split_thread_key,
    thread_key,
)
from codejury.forges.safety import check_published
from tests.engine_helpers import unified_diff

OLD = "".join(f"line {n}\n" for n in range(1, 41))
NEW = OLD.replace("line 5\n", "line five\n").replace("line 30\n", "line thirty\n")
FILES = parse_diff(unified_diff("app.py", OLD, NEW))
HEAD = "a" * 40
OK = ReviewerReport(name="generalist", model="m", status="ok")


def finding(line: int, title: str = "Unchecked input", severity: str = "warning", **kw: Any) -> Finding:
    fields: dict[str, Any] = {"id": f"f{line}", "reviewer": "generalist", "category": "bug", "severity": severity}
    fields |= {
        "path": "app.py",
        "start_line": line,
        "end_line": line,
        "title": title,
        "body": "Why.",
        "confidence": 0.9,
    }
    return Finding(**(fields | kw))


def review(*findings: Finding, **kw: Any) -> Review:
    fields: dict[str, Any] = {"verdict": "approved_with_comments", "tier": "lite", "summary": "Looks fine."}
    return Review(**(fields | {"findings": list(findings), "reviewers": [OK]} | kw))


def plan(rev: Review, previous: PreviousState | None = None, files: tuple[FileChange, ...] = FILES, **kw: Any) -> Any:
    return plan_publish(rev, files, previous or PreviousState(), PlanOptions(head_sha=HEAD, **kw))


def thread_for(f: Finding, text: str, **kw: Any) -> PreviousThread:
    key = thread_key(fingerprint(f), f.severity, code_digest([text]))
    return PreviousThread(
        id=f"t{f.start_line}", key=key, path=f.path, start_line=f.start_line, end_line=f.end_line, **kw
    )


def state(*fs: Finding, status: str = "open") -> SummaryState:
    return SummaryState(head_sha="b" * 40, findings={fingerprint(f): status for f in fs})  # type: ignore[misc]


def test_a_finding_outside_the_diff_goes_to_the_summary_only() -> None:
    p = plan(review(finding(5), finding(20, "Far away")))
    assert [c.start_line for c in p.inline] == [5]
    assert [(f.start_line, why) for f, why in p.summary_only] == [(20, "outside the diff")]
    assert "Far away" in p.summary and "outside the diff" in p.summary


def test_the_cap_keeps_the_most_severe_and_lists_the_rest() -> None:
    fs = [finding(4, "a", "suggestion"), finding(5, "b", "critical"), finding(6, "c", "warning")]
    p = plan(review(*fs), max_inline=2)
    assert [c.finding.severity for c in p.inline] == ["critical", "warning"]
    assert [why for _, why in p.summary_only] == ["over the cap of 2 inline comments"]


def test_every_inline_body_carries_a_thread_key_marker_and_is_safe() -> None:
    [c] = plan(review(finding(5, "/approve @all"))).inline
    assert parse_finding(c.body) == c.key and split_thread_key(c.key) == (
        fingerprint(c.finding),
        "warning",
        c.key[-12:],
    )
    assert check_published(c.body) == [] and "<code>@all</code>" in c.body


def test_reported_again_keeps_the_thread_and_posts_nothing_new() -> None:
    f = finding(5)
    prev = PreviousState(summary_id=1, state=state(f), threads=(thread_for(f, "line five"),))
    p = plan(review(f), prev)
    assert (p.inline, p.resolve, p.kept) == ((), (), ("t5",))
    assert (p.fixed, p.still_open, p.new) == (0, 1, 0)


def test_not_reported_on_unchanged_lines_stays_open_and_changed_lines_are_fixed() -> None:
    stays, fixed = finding(5, "Stays"), finding(30, "Fixed")
    prev = PreviousState(
        summary_id=1,
        state=state(stays, fixed),
        threads=(thread_for(stays, "line five"), thread_for(fixed, "line 30 before the push")),
    )
    p = plan(review(), prev)
    assert [(u.thread_id, u.reason) for u in p.resolve] == [("t30", "fixed")]
    assert p.state.findings == {fingerprint(stays): "open", fingerprint(fixed): "fixed"}
    assert "1 fixed, 1 still open, 0 new" in p.summary


def test_a_partial_review_resolves_no_earlier_thread_as_fixed() -> None:
    """No reviewer answered, an analyzer hit published alone: a model finding not reported again is not a fix."""
    model_said, hit = finding(30, "Fixed?"), finding(5, "Unused variable", evidence=["ruff:F841"])
    wont_fix = finding(6, "Name is unclear", severity="suggestion")
    threads = (
        thread_for(model_said, "line 30 before the push"),
        thread_for(wont_fix, "line 6", replies=(Reply("alice", "won't fix", can_write=True),)),
    )
    prev = PreviousState(summary_id=1, state=state(model_said, wont_fix), threads=threads)
    failed = ReviewerReport(name="generalist", model="m", status="failed", error="timed out")
    p = plan(review(hit, verdict="significant_concerns", judged=False, reviewers=[failed]), prev)
    assert [(u.thread_id, u.reason) for u in p.resolve] == [("t6", "dismissed")]  # a person's word still acts
    assert p.kept == ("t30",) and p.state.findings[fingerprint(model_said)] == "open"
    assert "0 fixed, 1 still open, 1 new" in p.summary and "Fixed:" not in p.summary


def test_a_file_that_left_the_diff_fixes_its_threads() -> None:
    f = finding(5)
    other = parse_diff(unified_diff("other.py", "a\n", "b\n"))
    p = plan(review(), PreviousState(summary_id=1, state=state(f), threads=(thread_for(f, "line five"),)), other)
    assert [u.reason for u in p.resolve] == ["fixed"]


def test_a_human_resolved_thread_is_left_alone_unless_the_finding_got_worse() -> None:
    f = finding(5, severity="warning")
    prev = PreviousState(
        summary_id=1, state=state(f), threads=(thread_for(f, "line five", resolved=True, resolved_by_human=True),)
    )
    assert plan(review(f), prev).inline == ()
    worse = finding(5, severity="critical")
    assert [c.finding.severity for c in plan(review(worse), prev).inline] == ["critical"]


@pytest.mark.parametrize("text", ["won't fix", "Wontfix, it is intended", "ack", "Acknowledged.", "won’t fix"])
def test_a_wont_fix_reply_by_a_writer_dismisses_and_is_remembered(text: str) -> None:
    f = finding(5)
    reply = Reply("alice", text, can_write=True)
    prev = PreviousState(summary_id=1, state=state(f), threads=(thread_for(f, "line five", replies=(reply,)),))
    p = plan(review(f), prev)
    assert [u.reason for u in p.resolve] == ["dismissed"] and p.state.findings[fingerprint(f)] == "dismissed"
    assert "alice" in p.resolve[0].note and p.inline == ()


def test_a_reply_that_is_not_wont_fix_or_from_a_reader_dismisses_nothing() -> None:
    f = finding(5)
    for reply in (Reply("alice", "I acknowledge nothing", can_write=True), Reply("rita", "won't fix")):
        prev = PreviousState(summary_id=1, state=state(f), threads=(thread_for(f, "line five", replies=(reply,)),))
        assert plan(review(f), prev).resolve == ()


def test_the_same_state_on_the_same_head_needs_no_summary_edit() -> None:
    f = finding(5)
    first = plan(review(f))
    assert first.summary_changed
    prev = PreviousState(summary_id=1, summary_body=first.summary, state=parse_summary(first.summary))
    thread = PreviousThread("t5", first.inline[0].key, "app.py", 5, 5)
    assert not plan(review(f), PreviousState(**{**prev.__dict__, "threads": (thread,)})).summary_changed


def test_approval_follows_the_rubric_and_never_comes_from_an_incomplete_review() -> None:
    ok = review()
    assert approval_action(ok, approve=True, bot_approved=False) == "approve"
    assert approval_action(ok, approve=True, bot_approved=True) == "none"
    assert approval_action(ok, approve=False, bot_approved=True) == "none"
    concerns = review(verdict="significant_concerns")
    assert approval_action(concerns, approve=True, bot_approved=True) == "unapprove"
    assert approval_action(review(verdict="requested_changes"), approve=True, bot_approved=False) == "none"
    assert approval_action(review(judged=False), approve=True, bot_approved=True) == "unapprove"
    failed = review(reviewers=[ReviewerReport(name="x", model="m", status="failed")])
    assert approval_action(failed, approve=True, bot_approved=False) == "none"
    forced = review(verdict="approved", break_glass=True)
    assert approval_action(forced, approve=True, bot_approved=False) == "approve"


def test_the_summary_states_what_was_covered() -> None:
    rev = review(
        finding(5),
        break_glass=True,
        reviewers=[OK, ReviewerReport(name="security", model="m", status="failed", error="timeout @all")],
        skipped_files=[{"path": "uv.lock", "reason": "lock file"}],
        cut_files=["data/huge.sql"],
    )
    body = plan(rev, break_glass_by=("bob",), line_url=lambda p, s, e: f"https://gl/x/-/blob/{HEAD}/{p}#L{s}").summary
    needles = ("Approved with comments", HEAD[:12], "invoked by bob", "security failed", "uv.lock", "lock file")
    for needle in (*needles, "Cut to fit the model's context (1)", "data/huge.sql"):
        assert needle in body
    assert "Files reviewed (1)" in body and "tier lite" in body and "](https://gl/x/-/blob/" in body
    assert check_published(body) == []


def test_the_failure_note_keeps_the_previous_state_and_is_safe() -> None:
    prev = PreviousState(summary_id=1, state=state(finding(5)))
    body, kept = failure_note(prev, "no reviewer succeeded (/merge @all)", HEAD)
    assert kept.findings == prev.state.findings  # type: ignore[union-attr]
    assert "Review failed" in body and check_published(body) == []


# -- what reviewers are told about the earlier review ---------------------------------------------------
@pytest.mark.parametrize("title", ["Unchecked input", "/approve @all </details> a&b", "x_y `code` @bob_z"])
def test_the_title_reads_back_from_the_bots_inline_comment(title: str) -> None:
    [c] = plan(review(finding(5, title))).inline
    assert finding_title(c.body) == title  # as written: the prompt fences it as data
    assert finding_title("<!-- codejury:finding v1 x -->\nsomething else") == ""


def test_previous_review_lists_open_and_dismissed_findings_once_each() -> None:
    still, dismissed, by_human, fixed, unlisted = (
        finding(5, "Still"),
        finding(6, "Won't fix"),
        finding(7, "Resolved by bob"),
        finding(8, "Fixed"),
        finding(20, "Outside the diff"),
    )
    wont = Reply("alice", "won't fix", can_write=True)
    prev = PreviousState(
        summary_id=1,
        state=SummaryState(
            head_sha="b" * 40,
            findings={fingerprint(f): "open" for f in (still, dismissed, by_human, unlisted)}
            | {fingerprint(fixed): "fixed"},
        ),
        threads=(
            thread_for(still, "x", title="Still"),
            thread_for(still, "x", title="Still"),  # a second thread for the same finding: listed once
            thread_for(dismissed, "x", title="Won't fix", replies=(wont,)),
            thread_for(by_human, "x", title="Resolved by bob", resolved=True, resolved_by_human=True),
            thread_for(fixed, "x", title="Fixed", resolved=True),
        ),
    )
    got = previous_review(prev, ["app.py"])
    assert got is not None and got.head_sha == "b" * 40 and got.changed_since == ("app.py",)
    assert [(f.path, f.start_line, f.severity, f.title) for f in got.still_open] == [("app.py", 5, "warning", "Still")]
    assert [(f.title, f.why) for f in got.dismissed] == [
        ("Won't fix", "reply by alice"),
        ("Resolved by bob", "resolved by a human"),
    ]
    assert got.unlisted_open == 1
    assert previous_review(PreviousState(), None) is None
    assert previous_review(prev, None).changed_since is None  # type: ignore[union-attr]
