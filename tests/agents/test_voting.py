"""Voting: several samples per reviewer of a weak model, a finding kept only where enough agree."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings

from codejury.agents.voting import NO_MAJORITY, sample_context, sample_settings, vote
from codejury.config import Settings, merge_validated
from codejury.config_schema import FileTable, Source
from codejury.errors import ConfigError
from codejury.findings import FindingDraft, Review
from codejury.testing.scripted import Final, Raw, finding

PATH = "app/auth/users.py"
WEAK = {"weak_models": ("scripted:*",)}


def draft(path: str, line: int, title: str = "t") -> FindingDraft:
    return FindingDraft.model_validate(finding(path, line, title))


def test_a_finding_is_kept_where_enough_samples_report_it_near_the_same_place() -> None:
    a0, a1 = draft("x.py", 10, "first wording"), draft("x.py", 11, "second wording")
    kept, lost = vote([[a0, draft("x.py", 40)], [a1], [draft("y.py", 10)]], needed=2)
    assert kept == [a0]  # the earliest sample's wording, once
    assert [(d.path, d.start_line) for d in lost] == [("x.py", 40), ("y.py", 10)]  # one sample each


def test_one_sample_reporting_a_place_twice_is_one_vote() -> None:
    kept, lost = vote([[draft("x.py", 10), draft("x.py", 10, "again")], [], []], needed=2)
    assert kept == [] and len(lost) == 2


def test_samples_vary_the_file_order_and_sampling_but_the_first_is_the_plain_run() -> None:
    from codejury.agents.runner import ChangeContext

    patches = [("a", "A"), ("b", "B"), ("c", "C")]
    ctx = ChangeContext(files=(), title="", shared_context="", patches=patches, tools=None, shared_rules="")  # type: ignore[arg-type]
    assert sample_context(ctx, 0) is ctx and sample_settings(0) is None
    assert [p for p, _ in sample_context(ctx, 1).patches] == ["b", "c", "a"]
    assert sample_settings(2) == {"temperature": 0.7, "seed": 2}


async def test_a_weak_reviewer_votes_over_three_samples(tmp_path: Path) -> None:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    real = finding(PATH, 10, "SQL injection in find_user", severity="warning")
    invented = finding(PATH, 6, "Hardcoded customer id", severity="warning")
    checked = Raw({"quote": "query", "holds": True, "line": 10})
    scripts = {
        "security": [Final([real, invented]), Final([real]), Final([]), checked],
        "code_quality": [Final([]), Final([]), Final([])],
        "documentation": [Final([]), Final([]), Final([])],
        "coordinator": [Raw({"decisions": []})],
    }
    result, resolver, events = await run_review(change, scripts, settings=scripted_settings(votes=3, **WEAK))
    assert isinstance(result, Review)
    assert [(f.start_line, f.title) for f in result.findings] == [(10, "SQL injection in find_user")]
    assert result.dropped_findings[NO_MAJORITY] == 1
    [lost] = [e for e in events.events if e["type"] == "finding_dropped"]
    assert (lost["reason"], lost["reviewer"], lost["path"], lost["line"]) == (NO_MAJORITY, "security", PATH, 6)
    assert resolver.models["security"].calls == 4  # type: ignore[attr-defined]  # three samples, one check
    started = [e["agent"] for e in events.events if e["type"] == "agent_started"]
    assert "security:sample1" in started and "security:sample2" in started
    assert [r.name for r in result.reviewers].count("security") == 1  # one reviewer, its samples' usage summed


async def test_strong_models_are_not_sampled(tmp_path: Path) -> None:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    scripts = {name: [Final([])] for name in ("security", "code_quality", "documentation")}
    _, resolver, _ = await run_review(change, scripts, settings=scripted_settings(votes=3))
    assert resolver.models["security"].calls == 1  # type: ignore[attr-defined]


def test_votes_needed_above_votes_is_a_config_error_naming_the_file() -> None:
    table = FileTable.model_validate({"votes": 2, "votes_needed": 3})
    with pytest.raises(ConfigError, match=r"team.toml.*votes_needed = 3 is more than votes = 2"):
        merge_validated(Settings(), table, Source("team.toml"))
