"""What tokens cost: a price table per model string, and usage from a pydantic-ai run.

Prices are USD per million tokens. A model string is priced by, in order: the user's
overrides (config ``[prices]``), then the built-in table; both match the exact string
first, then the longest key that is a prefix of it at a ``-`` boundary, so a dated name
(``anthropic:claude-sonnet-4-5-20250929``) gets its family's price. Models served on the
user's own machine (``local:``, ``ollama:``, ...) cost nothing; anything else unknown
costs 0.0 and ``is_known`` says so, so a report can show "cost unknown" instead of lying.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from codejury.findings import Usage
from codejury.models.providers import LOCAL_PROVIDER_NAMES

if TYPE_CHECKING:
    from pydantic_ai.usage import RunUsage

_PER_TOKEN = 1_000_000

# Cache prices when a table entry leaves them out, as a fraction of the input price.
# Anthropic bills cache reads at 0.1x and (five-minute) cache writes at 1.25x input.
# OpenAI caches automatically: reads at 0.5x for older families (gpt-4o); writes are not
# billed extra, so they cost the plain input price. Newer OpenAI families (gpt-4.1: 0.25x,
# gpt-5: 0.1x) carry explicit cache_read prices in the table below.
_ANTHROPIC_CACHE = (0.1, 1.25)
_OPENAI_CACHE = (0.5, 1.0)


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens; cache prices None mean "the provider's usual fraction of input"."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


FREE = ModelPrice(0.0, 0.0, 0.0, 0.0)


def _p(input: float, output: float, cache_read: float | None = None) -> ModelPrice:
    return ModelPrice(input, output, cache_read)


#: List prices (USD / Mtok) of the cloud models we default to and their common siblings.
BUILTIN_PRICES: dict[str, ModelPrice] = {
    # Anthropic (cache read 0.1x, write 1.25x input: filled in by the table).
    "anthropic:claude-opus-4-6": _p(5.0, 25.0),
    "anthropic:claude-sonnet-4-6": _p(3.0, 15.0),
    "anthropic:claude-opus-4-5": _p(5.0, 25.0),
    "anthropic:claude-opus-4-1": _p(15.0, 75.0),
    "anthropic:claude-opus-4": _p(15.0, 75.0),
    "anthropic:claude-sonnet-4-5": _p(3.0, 15.0),
    "anthropic:claude-sonnet-4": _p(3.0, 15.0),
    "anthropic:claude-haiku-4-5": _p(1.0, 5.0),
    "anthropic:claude-3-7-sonnet": _p(3.0, 15.0),
    "anthropic:claude-3-5-sonnet": _p(3.0, 15.0),
    "anthropic:claude-3-5-haiku": _p(0.8, 4.0),
    "anthropic:claude-3-haiku": _p(0.25, 1.25),
    # OpenAI (cached input as published per family).
    "openai:gpt-5.1": _p(1.25, 10.0, 0.125),
    "openai:gpt-5": _p(1.25, 10.0, 0.125),
    "openai:gpt-5-mini": _p(0.25, 2.0, 0.025),
    "openai:gpt-5-nano": _p(0.05, 0.4, 0.005),
    "openai:gpt-4.1": _p(2.0, 8.0, 0.5),
    "openai:gpt-4.1-mini": _p(0.4, 1.6, 0.1),
    "openai:gpt-4.1-nano": _p(0.1, 0.4, 0.025),
    "openai:gpt-4o": _p(2.5, 10.0, 1.25),
    "openai:gpt-4o-mini": _p(0.15, 0.6, 0.075),
    "openai:o3": _p(2.0, 8.0, 0.5),
    "openai:o3-mini": _p(1.1, 4.4, 0.55),
    "openai:o4-mini": _p(1.1, 4.4, 0.275),
}


class PriceTable:
    """Prices per model string: user overrides first, then the built-in table."""

    def __init__(self, overrides: Mapping[str, ModelPrice] | None = None) -> None:
        self._overrides = {_normalise(k): v for k, v in (overrides or {}).items()}
        self._builtin = {_normalise(k): v for k, v in BUILTIN_PRICES.items()}

    def price(self, spec: str) -> ModelPrice | None:
        """The price of ``spec`` with cache prices filled in, or None when unknown."""
        spec = _normalise(spec)
        found = _lookup(self._overrides, spec)
        if found is None:
            if spec.partition(":")[0] in LOCAL_PROVIDER_NAMES:
                return FREE
            found = _lookup(self._builtin, spec)
        return None if found is None else _fill_cache_prices(spec, found)

    def is_known(self, spec: str) -> bool:
        """Whether ``spec`` has a price (local models do: zero)."""
        return self.price(spec) is not None

    def cost(self, spec: str, usage: Usage) -> float:
        """USD for ``usage`` on ``spec``; 0.0 when the price is unknown.

        ``usage.input_tokens`` *includes* cache reads and writes: pydantic-ai's ``RunUsage``
        normalises every provider to that convention (OpenAI reports ``prompt_tokens`` with
        ``cached_tokens`` inside it; Anthropic reports them apart and pydantic-ai adds them
        back). So only the remainder is billed at the plain input price.
        """
        price = self.price(spec)
        if price is None:
            return 0.0
        cache_read = max(0, usage.cache_read_tokens)
        cache_write = max(0, usage.cache_write_tokens)
        uncached = max(0, usage.input_tokens - cache_read - cache_write)
        total = (
            uncached * price.input
            + cache_read * (price.cache_read or 0.0)
            + cache_write * (price.cache_write or 0.0)
            + max(0, usage.output_tokens) * price.output
        )
        return total / _PER_TOKEN


def usage_from_run(run_usage: RunUsage) -> Usage:
    """Our ``Usage`` (no cost or duration yet) from a pydantic-ai ``RunUsage``."""
    return Usage(
        requests=run_usage.requests,
        input_tokens=run_usage.input_tokens,
        output_tokens=run_usage.output_tokens,
        cache_read_tokens=run_usage.cache_read_tokens,
        cache_write_tokens=run_usage.cache_write_tokens,
    )


def estimate_tokens(text: str) -> int:
    """A rough token count for planning: about 3.5 characters per token.

    English prose runs near 4 characters per token and source code (symbols, indentation,
    short identifiers) nearer 3, so 3.5 errs slightly high for code reviews, which is the
    safe side for a cost estimate. No tokenizer is used: tiktoken needs a download.
    """
    return math.ceil(len(text) / 3.5) if text else 0


def _normalise(spec: str) -> str:
    provider, sep, model = spec.strip().partition(":")
    return f"{provider.lower()}{sep}{model.strip()}"


def _lookup(table: Mapping[str, ModelPrice], spec: str) -> ModelPrice | None:
    """Exact key, else the longest key that prefixes ``spec`` at a ``-`` boundary."""
    if spec in table:
        return table[spec]
    best: str | None = None
    for key in table:
        if spec.startswith(key) and spec[len(key)] == "-" and (best is None or len(key) > len(best)):
            best = key
    return None if best is None else table[best]


def _fill_cache_prices(spec: str, price: ModelPrice) -> ModelPrice:
    if price.cache_read is not None and price.cache_write is not None:
        return price
    provider, _, model = spec.partition(":")
    anthropic_like = provider == "anthropic" or model.rsplit("/", 1)[-1].startswith("claude")
    read, write = _ANTHROPIC_CACHE if anthropic_like else _OPENAI_CACHE
    return replace(
        price,
        cache_read=price.input * read if price.cache_read is None else price.cache_read,
        cache_write=price.input * write if price.cache_write is None else price.cache_write,
    )
