"""The cost ceiling of a review (``max_cost_usd`` / ``--max-cost``), on scripted models that report token usage.

Every scripted response reports 20 output tokens; at $1,000 per million output tokens each one
costs $0.02, so a ceiling is reached after a known number of responses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.usage import RequestUsage

from codejury.config import PriceSettings, Settings
from codejury.errors import ReviewFailed
from codejury.findings import Review
from codejury.models.budget import CostBudget, CostCeilingReached, MeteredModel
from codejury.models.pricing import ModelPrice, PriceTable
from codejury.models.profiles import CapabilityProfile, ResolvedModel
from codejury.resilience import BOARDS, AgentWatch, ResilientModel
from codejury.reviewers.roster import BUILTIN_REVIEWERS
from codejury.testing.scripted import Final, Sleep, ToolCall, finding
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings, unified_diff
from tests.test_cli import invoke
from tests.timing import bounded

PATH = "app/auth/users.py"  # security-sensitive: full tier (security, performance, code_quality, documentation)
PER_RESPONSE = 0.02
LOOPING = [ToolCall("read_patch", {"path": PATH})]  # the last step repeats: this reviewer never finishes alone


def priced(**changes: object) -> Settings:
    names = [*BUILTIN_REVIEWERS, "coordinator"]
    prices = {f"scripted:{n}": PriceSettings(input=0.0, output=PER_RESPONSE / 20 * 1_000_000) for n in names}
    return scripted_settings(prices=prices, **changes)


async def review_of(tmp_path: Path, scripts: dict, settings: Settings) -> tuple[Review, object, list[dict]]:  # type: ignore[type-arg]
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    result, resolver, events = await run_review(change, scripts, settings=settings)
    assert isinstance(result, Review)
    return result, resolver, list(events.events)


def by_name(review: Review) -> dict[str, object]:
    return {r.name: r for r in review.reviewers}


async def test_reaching_the_ceiling_stops_running_reviewers_and_the_review_is_partial(tmp_path: Path) -> None:
    scripts = {
        "security": LOOPING,
        "performance": [Sleep(30, Final([]))],  # waiting on its model when the ceiling is reached
        "code_quality": [Final([])],
        "documentation": [Final([])],
    }
    with bounded(0, hung_s=30, what="the review"):  # performance's 30 s answer was not waited for
        review, resolver, events = await review_of(tmp_path, scripts, priced(max_cost_usd=0.09))
    reports = by_name(review)
    for stopped in ("security", "performance"):
        assert reports[stopped].status == "failed"  # type: ignore[attr-defined]
        assert reports[stopped].error.startswith("cost ceiling reached: $")  # type: ignore[attr-defined]
        assert "of the $0.0900 ceiling" in reports[stopped].error  # type: ignore[attr-defined]
    assert reports["code_quality"].status == "ok" and reports["documentation"].status == "ok"  # type: ignore[attr-defined]
    assert resolver.models["security"].calls < 10  # type: ignore[attr-defined]
    assert reports["security"].requests >= 2 and reports["security"].cost_usd > 0  # type: ignore[attr-defined]
    # Partial, never a clean pass: nothing was found, yet the review does not approve.
    assert review.verdict == "significant_concerns"
    assert "partial (cost ceiling reached" in review.summary and "not an approval" in review.summary
    assert review.notes[0].startswith("cost ceiling reached: $")
    assert 0.09 <= review.usage.cost_usd <= 0.09 + 2 * PER_RESPONSE  # at most the responses already in flight
    ceiling = [e for e in events if e["type"] == "cost_ceiling"]
    assert len(ceiling) == 1 and ceiling[0]["ceiling_usd"] == 0.09 and ceiling[0]["spent_usd"] >= 0.09
    finished = next(e for e in events if e["type"] == "review_finished")
    assert finished["stopped"] == review.notes[0] and finished["verdict"] == "significant_concerns"


async def test_a_critical_found_before_the_ceiling_still_blocks(tmp_path: Path) -> None:
    sqli = finding(PATH, 10, "SQL injection in find_user", severity="critical", category="security")
    scripts = {"security": [Final([sqli])], "code_quality": LOOPING}
    review, _, _ = await review_of(tmp_path, scripts, priced(max_cost_usd=0.1))
    assert review.verdict == "requested_changes"
    assert [f.title for f in review.findings] == ["SQL injection in find_user"]
    assert review.coordinator is not None and review.coordinator.status == "failed"  # no call past the ceiling
    assert (review.coordinator.error or "").startswith("cost ceiling reached")


async def test_under_the_ceiling_the_review_is_whole(tmp_path: Path) -> None:
    review, _, events = await review_of(tmp_path, {}, priced(max_cost_usd=5.0))
    assert review.verdict == "approved" and review.notes == []
    assert all(r.status == "ok" for r in review.reviewers)
    assert review.walkthrough is not None  # written on the coordinator's model: one response more
    assert review.usage.cost_usd == pytest.approx(5 * PER_RESPONSE)
    assert not [e for e in events if e["type"] == "cost_ceiling"]


def test_local_models_cost_nothing_so_they_never_reach_a_ceiling() -> None:
    events: list[tuple[str, dict[str, object]]] = []
    budget = CostBudget(0.000001, PriceTable(), lambda kind, **fields: events.append((kind, fields)))
    million = RequestUsage(input_tokens=1_000_000, output_tokens=1_000_000)
    budget.add("local:qwen2.5-coder-1.5b", million)  # the embedded model
    budget.add("ollama:qwen2.5-coder:7b", million)
    assert not budget.reached and budget.spent_usd == 0.0 and events == []
    budget.add("openai:gpt-5-mini", RequestUsage(output_tokens=1))  # $2 per million output tokens
    assert budget.reached and events == [
        ("cost_ceiling", {"ceiling_usd": 0.000001, "spent_usd": 0.000002, "model": "openai:gpt-5-mini"})
    ]
    with pytest.raises(CostCeilingReached, match=r"\$0.000002 spent of the \$0.000001 ceiling"):
        budget.check()


async def test_a_streamed_answer_is_counted_and_a_spent_budget_refuses_the_next_stream() -> None:
    response = ModelResponse(parts=[TextPart("ok")], usage=RequestUsage(output_tokens=20), model_name="scripted")
    budget = CostBudget(0.03, PriceTable({"scripted:x": ModelPrice(0.0, PER_RESPONSE / 20 * 1_000_000)}))
    chain = ResilientModel(  # replays its answer as a stream, as every agent's model does
        [ResolvedModel("scripted:x", FunctionModel(lambda _m, _i: response), CapabilityProfile())],
        board=BOARDS.board_for(3, 120.0),
    )
    model = MeteredModel(chain, budget, spec="scripted:x", watch=AgentWatch())
    params = ModelRequestParameters()
    async with model.request_stream([], None, params) as first:
        assert isinstance(first, StreamedResponse)
    async with model.request_stream([], None, params):
        pass
    assert budget.reached and budget.spent_usd == pytest.approx(2 * PER_RESPONSE)
    with pytest.raises(CostCeilingReached):
        async with model.request_stream([], None, params):
            pass


async def test_a_ceiling_reached_before_any_reviewer_finished_fails_the_review(tmp_path: Path) -> None:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    scripts = {n: LOOPING for n in ("security", "performance", "code_quality", "documentation")}
    with pytest.raises(ReviewFailed, match="cost ceiling reached"):
        await run_review(change, scripts, settings=priced(max_cost_usd=0.01))


def test_max_cost_flag_is_validated_in_one_line(tmp_path: Path) -> None:
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff(PATH, AUTH_OLD, AUTH_NEW))
    code, _, err = invoke("review", "--diff", str(diff), "--dry-run", "--max-cost", "-1")
    assert code == 2
    assert err.strip().splitlines() == ["codejury: command line: --max-cost must be greater than 0 (got -1.0)"]
    code, _, err = invoke("review", "--diff", str(diff), "--dry-run", "--max-cost", "0.25", "--format", "json")
    assert code == 0, err
