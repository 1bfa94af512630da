"""The naive baseline: one plain prompt on the standard model, instead of the panel."""

from __future__ import annotations

from pathlib import Path

from codejury.findings import Review
from codejury.plugins import Plugins
from codejury.record.events import EventLog
from codejury.runstate import ReviewOptions
from codejury.testing.scripted import Final, ScriptedResolver, finding
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, scripted_settings

PATH = "app/auth/users.py"


async def test_the_naive_baseline_is_one_request_with_the_whole_diff_and_no_judge(tmp_path: Path) -> None:
    from codejury.pipeline import review

    # The naive prompt may answer off the diff: the baseline keeps it as written (no anchoring).
    answer = [finding(PATH, 10, "SQL injection", severity="critical"), finding(PATH, 99, "Off the diff")]
    resolver = ScriptedResolver({"code_quality": [Final(answer)]})
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    with EventLog(None, run_id="naive") as events:
        opts = ReviewOptions(
            settings=scripted_settings(),
            env={},
            events=events,
            warn=lambda _m: None,
            plugins=Plugins(resolver.plugin_manager()),
            baseline="naive",
        )
        result = await review(change, opts)
    assert isinstance(result, Review)
    assert [(f.reviewer, f.start_line) for f in result.findings] == [("naive", 10), ("naive", 99)]
    assert result.verdict == "requested_changes" and [r.name for r in result.reviewers] == ["naive"]
    [prompt] = resolver.models["code_quality"].prompts
    assert "find the problems" in prompt.lower() and "   10 + " in prompt and "<patches>" in prompt
    others = {name: m.calls for name, m in resolver.models.items() if name != "code_quality"}
    assert set(others.values()) <= {0}  # no reviewer, no coordinator: one request in all
