"""The coordinator's context warning: a prompt past half the model's context window is said in the
review's notes and the event log (scripted models with a small window)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from codejury.findings import Review
from codejury.models.profiles import ResolvedModel
from codejury.pipeline import ReviewOptions, review
from codejury.plugins import Plugins
from codejury.record.events import EventLog
from codejury.testing.scripted import Fail, Raw, ScriptedResolver, finding
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, scripted_settings

PATH = "app/auth/users.py"
WINDOW = 1_200  # the scripted coordinator's prompt here is about 780 tokens


class SmallWindow(ScriptedResolver):
    """Scripted models whose profiles say a context window of ``windows[name]`` tokens."""

    def __init__(self, scripts: dict, windows: dict[str, int]) -> None:  # type: ignore[type-arg]
        super().__init__(scripts)
        self.windows = windows

    def __call__(self, spec: str, config: object) -> ResolvedModel:
        resolved = super().__call__(spec, config)
        window = self.windows.get(spec.split(":", 1)[1])
        if window is None:
            return resolved
        return dataclasses.replace(resolved, profile=dataclasses.replace(resolved.profile, context_window=window))


async def run(tmp_path: Path, scripts: dict, windows: dict[str, int]) -> tuple[Review, EventLog]:  # type: ignore[type-arg]
    with EventLog(None, run_id="ctx") as events:
        opts = ReviewOptions(
            settings=scripted_settings(),
            env={},
            events=events,
            warn=lambda _: None,
            plugins=Plugins(SmallWindow(scripts, windows).plugin_manager()),
        )
        result = await review(make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)}), opts)
    assert isinstance(result, Review)
    return result, events


SCRIPTS = {
    "security": [Raw({"findings": [finding(PATH, 10, "SQL injection", severity="warning")]})],
    "coordinator": [Raw({"decisions": []})],
}


async def test_a_coordinator_prompt_past_half_its_window_is_noted_in_the_review_and_the_events(tmp_path: Path) -> None:
    review_, events = await run(tmp_path, SCRIPTS, {"coordinator": WINDOW})
    [warning] = [e for e in events.events if e["type"] == "context_warning"]
    coordinator_prompt = warning["prompt_tokens"]
    assert warning["agent"] == "coordinator" and warning["model"] == "scripted:coordinator"
    assert warning["context_window"] == WINDOW and coordinator_prompt > WINDOW / 2 and warning["estimated"] is False
    assert warning["share"] == round(coordinator_prompt / WINDOW, 3)
    [note] = [n for n in review_.notes if "context window" in n]
    assert f"coordinator {coordinator_prompt / WINDOW:.0%} ({coordinator_prompt:,} of {WINDOW:,} tokens" in note
    assert "scripted:coordinator" in note and "consider splitting it" in note


async def test_prompts_well_inside_the_window_say_nothing(tmp_path: Path) -> None:
    review_, events = await run(tmp_path, SCRIPTS, {})  # the default window: 128,000 tokens
    assert not [e for e in events.events if e["type"] == "context_warning"]
    assert not [n for n in review_.notes if "context window" in n]


async def test_a_request_that_fails_is_still_measured_by_estimate(tmp_path: Path) -> None:
    from pydantic_ai.exceptions import ModelHTTPError

    scripts = {**SCRIPTS, "performance": [Fail(ModelHTTPError(400, "scripted:performance", {"error": "too long"}))]}
    review_, events = await run(tmp_path, scripts, {"performance": 1_000})
    [warning] = [e for e in events.events if e["type"] == "context_warning" and e["agent"] == "performance"]
    assert warning["estimated"] is True and warning["prompt_tokens"] > 500
    assert any("performance" in n and "about " in n for n in review_.notes)
    assert next(r for r in review_.reviewers if r.name == "performance").status == "failed"
