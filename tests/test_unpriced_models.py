"""A model with no known price counts as $0: every review naming it says so in its notes, the process warns once,
and a spend cap (the review's ceiling, ``[limits]``' daily spend caps) says at start-up that it cannot count it.
The scripted models, like the embedded and local ones, are free by design: never unpriced."""

from __future__ import annotations

import uuid
from pathlib import Path

from codejury.config import DailyLimits, PriceSettings
from codejury.contexts import ConfigureContext
from codejury.findings import Review
from codejury.hookspecs import hookimpl
from codejury.models.providers import ProviderSpec
from codejury.pipeline import ReviewOptions, review
from codejury.plugins import Plugins
from codejury.record.events import EventLog
from codejury.reviewers.roster import BUILTIN_REVIEWERS
from codejury.testing.scripted import SCRIPTED, Final, ScriptedResolver
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, scripted_settings

PATH = "app/auth/users.py"
SET_PRICE = '(set [prices."provider:model"])'


class Gateway:
    """A user's OpenAI-compatible gateway ``gw`` whose models answer from scripts (no network)."""

    @hookimpl
    def codejury_configure(self, ctx: ConfigureContext) -> None:
        ctx.add_provider(ProviderSpec(name="gw", kind=SCRIPTED))


def gateway_model() -> str:
    """A model name no price list knows, new to this process (the warning is once per process)."""
    return f"gw:team-model-{uuid.uuid4().hex[:8]}"


async def review_with(
    tmp_path: Path, security: str | None, warnings: list[str], **settings: object
) -> tuple[Review, list[dict[str, object]]]:
    """A review of an auth change, the security reviewer on ``security`` (default: its scripted model)."""
    base = scripted_settings(**settings)
    models = {**base.reviewer_models, **({"security": security} if security else {})}
    scripts = {name: [Final([])] for name in [*BUILTIN_REVIEWERS, *([security.split(":", 1)[1]] if security else [])]}
    resolver = ScriptedResolver(scripts)
    pm = resolver.plugin_manager()
    pm.register(Gateway(), name="gateway")
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    with EventLog(None, run_id="test") as events:
        opts = ReviewOptions(
            settings=base.model_copy(update={"reviewer_models": models}),
            env={},
            events=events,
            warn=warnings.append,
            plugins=Plugins(pm),
        )
        result = await review(change, opts)
    assert isinstance(result, Review)
    return result, list(events.events)


def unpriced(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("no known price")]


async def test_an_unpriced_model_warns_once_per_process_and_is_named_in_every_review(tmp_path: Path) -> None:
    model = gateway_model()
    line = f'no known price for {model}: its calls count as $0 (set [prices."provider:model"])'
    warnings: list[str] = []
    first, events = await review_with(tmp_path / "1", model, warnings)
    second, _ = await review_with(tmp_path / "2", model, warnings)
    assert unpriced(warnings) == [line]  # two reviews, one process: one warning
    assert unpriced(first.notes) == [line]
    assert unpriced(second.notes) == [line]
    [event] = [e for e in events if e["type"] == "model_unpriced"]
    assert event["models"] == [model]
    assert event["caps"] == []


async def test_a_ceiling_with_an_unpriced_model_says_at_start_up_that_it_cannot_count_it(tmp_path: Path) -> None:
    model = gateway_model()
    line = (
        f"no known price for {model}: its calls count as $0, so the $1.0000 cost ceiling cannot count them "
        '(set [prices."provider:model"])'
    )
    warnings: list[str] = []
    result, events = await review_with(tmp_path, model, warnings, max_cost_usd=1.0)
    assert unpriced(warnings) == [line]
    assert unpriced(result.notes) == [line]
    kinds = [e["type"] for e in events]
    first_call = min(i for i, k in enumerate(kinds) if k.startswith("agent_"))
    assert kinds.index("model_unpriced") < first_call  # said before any model was called


async def test_daily_spend_caps_with_an_unpriced_model_say_they_cannot_count_it(tmp_path: Path) -> None:
    model = gateway_model()
    limits = DailyLimits(spend_per_day_usd=50.0, spend_per_day_per_repository_usd=5.0)
    warnings: list[str] = []
    result, events = await review_with(tmp_path, model, warnings, max_cost_usd=1.0, limits=limits)
    caps = "the $1.0000 cost ceiling, the $50.00 daily spend cap and the $5.00 daily spend cap per repository"
    line = f"no known price for {model}: its calls count as $0, so {caps} cannot count them " + SET_PRICE
    assert unpriced(warnings) == [line]
    assert unpriced(result.notes) == [line]
    [event] = [e for e in events if e["type"] == "model_unpriced"]
    assert event["ceiling_usd"] == 1.0
    assert len(event["caps"]) == 3  # type: ignore[arg-type]


async def test_a_price_for_the_model_or_a_free_model_says_nothing(tmp_path: Path) -> None:
    model = gateway_model()
    priced = {model: PriceSettings(input=1.0, output=2.0)}
    # The scripted models have no [prices] entry: free by design, like the embedded model, not unpriced.
    for n, (security, settings) in enumerate([(model, {"prices": priced}), (None, {"max_cost_usd": 1.0})]):
        warnings: list[str] = []
        result, events = await review_with(tmp_path / str(n), security, warnings, **settings)
        assert not unpriced(warnings), settings
        assert not unpriced(result.notes), settings
        assert not [e for e in events if e["type"] == "model_unpriced"]
