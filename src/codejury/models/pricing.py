"""What tokens cost: each model string's price, and usage from a pydantic-ai run.

Prices are USD per million tokens. A model string (``provider:model``) is priced by, in order:

1. the user's overrides (config ``[prices]``): the exact string first, then the longest key that is a
   prefix of it at a ``-`` boundary, so ``anthropic:claude-sonnet-4-5`` prices the dated
   ``anthropic:claude-sonnet-4-5-20250929``;
2. free by design: models served on the user's own machine (``local:``, ``ollama:``, ...: the embedded
   model included) and the scripted models of ``codejury.testing`` cost nothing. They are priced, at zero:
   never "unpriced";
3. the price data that ships with the installed ``genai-prices`` package (its bundled snapshot: nothing is
   fetched at run time). A provider genai-prices knows by name (``openai``, ``anthropic``, ``groq``, ...)
   is looked up there, with genai-prices' own rules for dated and aliased model names (``bedrock`` is its
   ``aws``, with its regional prefixes: ``us.anthropic.claude-...``; ``vertex`` its ``google``; an ``azure``
   deployment is priced when it is named after its model, ``azure:gpt-4o``); any other provider
   (a gateway, an OpenAI-compatible server: ``gw:gpt-4o``) is priced only when its model name matches
   models of genai-prices that all have one price, else it is unpriced.

A model none of these price is *unpriced*: its calls count as $0. ``PriceTable.unpriced`` names them, and
``unpriced_line`` says so in one line (what a spend cap cannot count), which ``warn_unpriced`` shows once
per process.

genai-prices dates some prices and prices some models by the time of day (DeepSeek's off-peak hours at half
price): a ``PriceTable`` prices at its clock's time (the current time unless given one), to the minute.

genai-prices may price a model in tiers (Anthropic's and Google's long-context rates above 200k input
tokens per request). codejury sums usage over an agent's requests, so a tier threshold cannot be applied
to the sum: the base price is used, which under-counts a request past the threshold.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from codejury.findings import Usage
from codejury.models.providers import LOCAL_PROVIDER_NAMES

if TYPE_CHECKING:
    from genai_prices.types import ModelInfo, Provider
    from pydantic_ai.usage import RunUsage

_PER_TOKEN = 1_000_000

FREE_PROVIDERS: frozenset[str] = LOCAL_PROVIDER_NAMES | {"scripted"}
"""Providers whose models cost nothing by design: the user's own machine (the embedded model among them) and
``codejury.testing``'s scripted models (``scripted:NAME``), which answer from a script and call nothing."""

#: codejury provider names that genai-prices knows under another id (pydantic-ai's names for them).
GENAI_PROVIDER_ALIASES: dict[str, str] = {
    "google-gla": "google",
    "google-vertex": "google",
    "vertex": "google",
    "bedrock": "aws",
    "xai": "x-ai",
    "grok": "x-ai",
}

# Cache prices when a ``[prices]`` entry leaves them out, as a fraction of its input price. Anthropic bills
# cache reads at 0.1x and (five-minute) cache writes at 1.25x input; OpenAI caches automatically, reads at
# 0.5x for older families and writes at the plain input price.
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


class PriceTable:
    """Prices per model string: the user's overrides, then free by design, then genai-prices' bundled data."""

    def __init__(
        self, overrides: Mapping[str, ModelPrice] | None = None, *, clock: Callable[[], datetime] | None = None
    ) -> None:
        self._overrides = {_normalise(k): v for k, v in (overrides or {}).items()}
        self._clock = clock or _utc_now

    def price(self, spec: str) -> ModelPrice | None:
        """The price of ``spec`` with cache prices filled in, or None when unknown (unpriced)."""
        spec = _normalise(spec)
        found = _lookup(self._overrides, spec)
        if found is not None:
            return _fill_cache_prices(spec, found)
        if is_free_by_design(spec):
            return FREE
        return genai_price(spec, _to_the_minute(self._clock()))

    def is_known(self, spec: str) -> bool:
        """Whether ``spec`` has a price (a model free by design does: zero)."""
        return self.price(spec) is not None

    def unpriced(self, specs: Iterable[str]) -> list[str]:
        """Those of ``specs`` with no known price, sorted, each once."""
        return sorted({s for s in specs if not self.is_known(s)})

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


def is_free_by_design(spec: str) -> bool:
    """Whether ``spec``'s provider costs nothing by design (``FREE_PROVIDERS``); a ``[prices]`` entry still wins."""
    return _normalise(spec).partition(":")[0] in FREE_PROVIDERS


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _to_the_minute(when: datetime) -> datetime:
    """``when`` in UTC without seconds: the key prices are cached by (no price changes within a minute)."""
    return when.astimezone(UTC).replace(second=0, microsecond=0)


@lru_cache(maxsize=4096)
def genai_price(spec: str, when: datetime) -> ModelPrice | None:
    """``spec``'s price in genai-prices' bundled data (see the module's notes) at ``when``, or None.

    The price is the one in force at ``when`` (genai-prices dates some price changes and prices some
    models by the time of day); a tiered price is taken at its base.
    Cache prices genai-prices leaves out are the plain input price: a provider that does not list a
    cache price does not discount cached tokens, and OpenAI does not bill cache writes apart.
    """
    provider_name, _, model_name = _normalise(spec).partition(":")
    if not model_name:
        return None
    providers = _bundled_providers()
    wanted = GENAI_PROVIDER_ALIASES.get(provider_name, provider_name)
    provider = next((p for p in providers if p.id == wanted), None)
    if provider is not None:  # a provider genai-prices knows: its models (and those it serves for others)
        model = provider.find_model(model_name, all_providers=providers)
        return None if model is None else _token_price(model, when)
    # A gateway or OpenAI-compatible server: the model name alone, when every match has one price.
    found = {_token_price(m, when) for p in providers if (m := p.find_model(model_name)) is not None}
    found.discard(None)
    return found.pop() if len(found) == 1 else None


def genai_prices_version() -> str:
    """The installed genai-prices, whose bundled data prices the models ``[prices]`` does not."""
    from importlib.metadata import version

    return version("genai-prices")


def priced_model_count() -> int:
    """How many models genai-prices' bundled data gives a token price now."""
    now = _utc_now()
    return sum(1 for p in _bundled_providers() for m in p.models if _token_price(m, now) is not None)


@cache
def _bundled_providers() -> list[Provider]:
    """genai-prices' bundled data (never ``UpdatePrices``' fetched one: prices do not change while a review runs
    and nothing is downloaded)."""
    from genai_prices.data import providers

    return providers


def _token_price(model: ModelInfo, when: datetime) -> ModelPrice | None:
    prices = model.get_prices(when)
    input_price = _base(prices.input_mtok)
    if input_price is None:
        return None  # no token price (a model billed per request, image or second; or none listed)
    output = _base(prices.output_mtok)
    read = _base(prices.cache_read_mtok)
    write = _base(prices.cache_write_mtok)
    return ModelPrice(
        input_price,
        0.0 if output is None else output,
        input_price if read is None else read,
        input_price if write is None else write,
    )


def _base(value: object) -> float | None:
    """A genai-prices price as a float: a tiered one at its base (the price below the first tier)."""
    from genai_prices.types import TieredPrices

    if isinstance(value, TieredPrices):
        return float(value.base)
    return float(value) if isinstance(value, Decimal | int | float) else None


def unpriced_line(models: Sequence[str], caps: Sequence[str] = ()) -> str:
    """One line naming ``models`` (unpriced) and, when set, the spend ``caps`` that cannot count them.

    ``caps`` describe the caps in words (``the $1.0000 cost ceiling``)."""
    names = ", ".join(models)
    them = "its calls count" if len(models) == 1 else "their calls count"
    cannot = f", so {_and(caps)} cannot count them" if caps else ""
    return f'no known price for {names}: {them} as $0{cannot} (set [prices."provider:model"])'


class _Once:
    """What this process already said, so that it is said once however many reviews it runs."""

    def __init__(self) -> None:
        self._said: set[tuple[str, tuple[str, ...]]] = set()
        self._lock = threading.Lock()

    def new(self, models: Iterable[str], caps: Sequence[str]) -> list[str]:
        """Those of ``models`` not said yet with these ``caps``, now said."""
        with self._lock:
            fresh = [m for m in models if (m, tuple(caps)) not in self._said]
            self._said.update((m, tuple(caps)) for m in fresh)
        return fresh


_UNPRICED_SAID = _Once()


def warn_unpriced(models: Sequence[str], caps: Sequence[str], warn: Callable[[str], None]) -> None:
    """Warn about the unpriced ``models`` (with the spend ``caps`` that cannot count them), once per process
    for each model and caps: a second review of the same models says nothing more."""
    fresh = _UNPRICED_SAID.new(models, caps)
    if fresh:
        warn(unpriced_line(fresh, caps))


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


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
