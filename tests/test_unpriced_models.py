"""A model with no known price counts as $0: under a cost ceiling the review says so, once on stderr and once
in its notes, since the ceiling cannot stop that model."""

from __future__ import annotations

from pathlib import Path

from codejury.config import PriceSettings
from codejury.findings import Review
from codejury.reviewers.roster import BUILTIN_REVIEWERS
from codejury.testing.scripted import Final
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings

PATH = "app/auth/users.py"
SCRIPTS = {name: [Final([])] for name in BUILTIN_REVIEWERS}
WARNING = (
    "no known price for scripted:security: its calls count as $0, so the $1.0000 cost ceiling cannot stop them "
    '(set [prices."provider:model"])'
)


def prices(*unpriced: str) -> dict[str, PriceSettings]:
    names = [n for n in [*BUILTIN_REVIEWERS, "coordinator"] if n not in unpriced]
    return {f"scripted:{n}": PriceSettings(input=1.0, output=1.0) for n in names}


async def review_with(tmp_path: Path, **settings: object) -> tuple[Review, list[str], list[dict[str, object]]]:
    warnings: list[str] = []
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    result, _, events = await run_review(change, SCRIPTS, settings=scripted_settings(**settings), warnings=warnings)
    assert isinstance(result, Review)
    return result, warnings, list(events.events)


async def test_an_unpriced_model_under_a_ceiling_is_one_warning_and_one_note(tmp_path: Path) -> None:
    review, warnings, events = await review_with(tmp_path, prices=prices("security"), max_cost_usd=1.0)
    assert warnings.count(WARNING) == 1
    assert review.notes.count(WARNING) == 1
    [event] = [e for e in events if e["type"] == "model_unpriced"]
    assert event["models"] == ["scripted:security"]


async def test_priced_models_or_no_ceiling_say_nothing(tmp_path: Path) -> None:
    for settings in ({"prices": prices(), "max_cost_usd": 1.0}, {"prices": prices("security")}):
        review, warnings, events = await review_with(tmp_path / str(len(settings)), **settings)
        assert not [w for w in warnings if "no known price" in w], settings
        assert not [n for n in review.notes if "no known price" in n], settings
        assert not [e for e in events if e["type"] == "model_unpriced"]
