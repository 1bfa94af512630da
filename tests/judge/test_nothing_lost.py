"""Nothing found is lost: every analyzer hit is published, every finding left out is an event with its reason,
and when no reviewer answers the analyzers' hits are still published, as a partial review."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codejury.analyzers.base import find_program
from codejury.errors import ReviewFailed
from codejury.findings import FindingDraft, Review
from codejury.judge.anchors import finding_id
from codejury.judge.grounding import DUPLICATE, FAILED, MAX_CANDIDATES, MODELS_FAILED_NOTE, UNCHECKED_NOTE
from codejury.judge.holds import HOLD_NOTE
from codejury.judge.threshold import BELOW_CONFIDENCE
from codejury.record.events import EventLog
from codejury.stages.judge import JUDGE_DROPPED
from codejury.testing.scripted import Final, Raw, Sleep, finding
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings

SCRIPT = "deploy.sh"
OLD = "#!/bin/bash\nset -u\n"
NEW = OLD + "".join(f"D=/srv/app{n}\ncd $D\n" for n in range(15))  # 15 x ShellCheck SC2164 on `cd $D`
CD_LINES = [4 + 2 * n for n in range(15)]
PANEL = ("security", "performance", "code_quality", "documentation", "generalist")
CONFIRMED = Raw({"holds": True, "title": "cd without a check", "body": "A failed cd runs the rest elsewhere."})
NO_DECISIONS = [Raw({"decisions": []})]
WEAK = {"weak_models": ("scripted:*",)}
PATH = "app/auth/users.py"


needs_shellcheck = pytest.mark.skipif(find_program("shellcheck") is None, reason="shellcheck has no wheel here")
TIMING_OUT = {"reviewer_timeout_s": 0.3, "overall_timeout_s": 1.0}  # code_quality's own timeout is 600 s


async def shell_review(tmp_path: Path, scripts: dict[str, Any], **settings: Any) -> tuple[Review, Any, EventLog]:
    change = make_change(tmp_path, {SCRIPT: (OLD, NEW)})
    every = {name: [Final([])] for name in PANEL} | {"coordinator": NO_DECISIONS}
    result, resolver, events = await run_review(
        change, every | scripts, settings=scripted_settings(analyzers=True, **settings)
    )
    assert isinstance(result, Review)
    return result, resolver, events


def cd_findings(review: Review) -> list[Any]:
    return [f for f in review.findings if f.evidence == ["shellcheck:SC2164"]]


@needs_shellcheck
async def test_fifteen_hits_in_one_file_are_all_published_past_the_check_limit_unchecked(tmp_path: Path) -> None:
    scripts = {"code_quality": [Final([]), *[CONFIRMED] * MAX_CANDIDATES]}
    review, resolver, events = await shell_review(tmp_path, scripts)
    found = cd_findings(review)
    assert sorted(f.start_line for f in found) == CD_LINES  # every hit, none lost
    checked = [f for f in found if f.verified]
    unchecked = [f for f in found if UNCHECKED_NOTE in f.body]
    assert len(checked) == MAX_CANDIDATES and all(f.title == "cd without a check" for f in checked)
    assert len(unchecked) == 15 - MAX_CANDIDATES
    assert all(f.advisory and f.verified is None and f.path == SCRIPT for f in unchecked)
    assert resolver.models["code_quality"].calls == 1 + MAX_CANDIDATES  # the review, then one call per check
    # The count of unchecked hits is one line of the review, and no hit is counted as dropped.
    [line] = [n for n in review.notes if "published unchecked" in n]
    assert line.startswith(f"3 analyzer hits past the review's limit of {MAX_CANDIDATES} model checks")
    assert review.dropped_findings == {}
    outcomes = [e["outcome"] for e in events.events if e["type"] == "evidence_checked"]
    assert outcomes.count("unchecked") == 3 and outcomes.count("confirmed") == MAX_CANDIDATES
    assert review.verdict == "approved_with_comments"  # suggestions: shown, and three of them unchecked


@needs_shellcheck
async def test_hits_a_weak_model_is_not_asked_about_never_reach_the_check_limit(tmp_path: Path) -> None:
    review, resolver, _ = await shell_review(tmp_path, {}, **WEAK)
    found = cd_findings(review)
    assert sorted(f.start_line for f in found) == CD_LINES
    assert not any(UNCHECKED_NOTE in f.body for f in found)  # no call to spend: each one published unasked
    assert resolver.models["code_quality"].calls == 1 and review.dropped_findings == {}  # its review, no check


@needs_shellcheck
async def test_every_reviewer_timing_out_publishes_the_hits_as_a_partial_review(tmp_path: Path) -> None:
    stall = [Sleep(30, Final([]))]
    with pytest.raises(ReviewFailed, match=r"no reviewer succeeded \(.*timed out") as failed:
        await shell_review(tmp_path, dict.fromkeys(PANEL, stall), **TIMING_OUT)
    partial = failed.value.partial
    assert partial is not None
    found = cd_findings(partial)
    assert sorted(f.start_line for f in found) == CD_LINES
    assert all(f.advisory and f.verified is None and MODELS_FAILED_NOTE in f.body for f in found)
    assert partial.verdict == "significant_concerns"  # advisory warnings alone would approve: withheld
    assert not partial.judged and all(r.status == "failed" for r in partial.reviewers)
    [withheld] = partial.approval_withheld
    assert withheld.startswith("no reviewer succeeded (") and "timed out" in withheld
    assert "approval is withheld: no reviewer succeeded" in partial.summary
    assert any(n.startswith("no reviewer answered to check 15 analyzer hits") for n in partial.notes)


async def test_security_hits_of_a_partial_review_are_held_and_it_never_approves(tmp_path: Path) -> None:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    stall = [Sleep(30, Final([]))]
    scripts = dict.fromkeys(PANEL, stall) | {"coordinator": NO_DECISIONS}
    settings = scripted_settings(analyzers=True, **TIMING_OUT)
    with pytest.raises(ReviewFailed) as failed:
        await run_review(change, scripts, settings=settings)
    partial = failed.value.partial
    assert partial is not None
    # The SQL built from input (line 10) and the committed key (line 14): security evidence, held for a person.
    assert sorted((f.start_line, f.severity, f.withholds_approval, f.advisory) for f in partial.findings) == [
        (10, "critical", True, False),
        (14, "warning", True, False),
    ]
    assert all(f.evidence and MODELS_FAILED_NOTE in f.body and HOLD_NOTE not in f.body for f in partial.findings)
    assert partial.verdict == "requested_changes"
    # Break glass is a person's override: it still approves, and the review says what it would have been.
    with pytest.raises(ReviewFailed) as overridden:
        await run_review(change, scripts, settings=settings, break_glass=True)
    assert overridden.value.partial is not None and overridden.value.partial.verdict == "approved"


async def test_with_no_analyzer_hit_a_review_no_reviewer_answered_is_a_failure_note(tmp_path: Path) -> None:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    scripts = dict.fromkeys(PANEL, [Sleep(30, Final([]))])
    with pytest.raises(ReviewFailed, match="no reviewer succeeded") as failed:
        await run_review(change, scripts, settings=scripted_settings(**TIMING_OUT))  # analyzers off
    assert failed.value.partial is None


def dropped_events(events: EventLog) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in events.events:
        if e["type"] == "finding_dropped":
            out[e["reason"]] = out.get(e["reason"], 0) + 1
    return out


async def test_every_finding_left_out_is_an_event_with_its_reason_and_counted(tmp_path: Path) -> None:
    sqli = finding(PATH, 10, "SQL injection in find_user", severity="critical", category="security")
    judged = finding(PATH, 11, "fetchone may return None", severity="warning", category="bug")
    invented = finding(PATH, 9, "Function name is misleading", severity="warning", category="naming")
    unsure = finding(PATH, 6, "Hash without salt", severity="suggestion", category="crypto", confidence=0.1)
    drop = {"id": finding_id("code_quality", FindingDraft.model_validate(judged)), "action": "drop", "reason": "no"}
    holds, fails = Raw({"quote": "x", "holds": True}), Raw({"quote": "x", "holds": False})
    scripts = {
        "security": [Final([sqli]), holds],
        "code_quality": [Final([sqli, judged, invented]), fails, holds],  # checked by line: 9, then 11
        "documentation": [Final([unsure]), holds],
        "performance": [Final([])],
        "coordinator": [Raw({"decisions": [drop]})],
    }
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    settings = scripted_settings(verify="all", min_confidence={"min": 0.5})
    review, _, events = await run_review(change, scripts, settings=settings)
    assert isinstance(review, Review)
    expected = {DUPLICATE: 1, FAILED: 1, JUDGE_DROPPED: 1, BELOW_CONFIDENCE: 1}
    assert review.dropped_findings == expected
    assert dropped_events(events) == expected  # every count is that many events, reason for reason
    assert [f.title for f in review.findings] == ["SQL injection in find_user"]
