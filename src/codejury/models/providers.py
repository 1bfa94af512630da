"""Providers as data: where a model string's provider lives and how to authenticate to it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from codejury.errors import ConfigError
from codejury.models.profiles import CapabilityProfile

PROVIDER_KINDS: tuple[str, ...] = ("openai", "anthropic", "openai-compatible", "local", "bedrock", "vertex", "azure")
"""The built-in provider kinds (``models.registry.BUILTIN_MODEL_KINDS``); plugins register more."""

#: Placeholder key for OpenAI-compatible servers that need none (the SDK insists on a non-empty key).
NO_KEY_PLACEHOLDER = "not-needed"


@dataclass(frozen=True)
class ProviderSpec:
    """One provider: its kind (a registered ``ModelKind``), base URL, the env var holding its key, overrides."""

    name: str
    kind: str
    base_url: str | None = None
    api_key_env: str | None = None
    enabled: bool = True
    profile: CapabilityProfile | None = None
    region: str | None = None
    """A cloud provider's region: Bedrock's AWS region, Vertex AI's location (else from the environment)."""
    project: str | None = None
    """Vertex AI's Google Cloud project (else ``GOOGLE_CLOUD_PROJECT``)."""
    api_version: str | None = None
    """Azure OpenAI's API version (else ``OPENAI_API_VERSION``)."""


BUILTIN_PROVIDERS: dict[str, ProviderSpec] = {
    # base_url None: the vendor default, or OPENAI_BASE_URL / ANTHROPIC_BASE_URL from the environment.
    "openai": ProviderSpec("openai", "openai", api_key_env="OPENAI_API_KEY"),
    "anthropic": ProviderSpec("anthropic", "anthropic", api_key_env="ANTHROPIC_API_KEY"),
    "ollama": ProviderSpec("ollama", "openai-compatible", base_url="http://localhost:11434/v1"),
    "lmstudio": ProviderSpec("lmstudio", "openai-compatible", base_url="http://localhost:1234/v1"),
    "vllm": ProviderSpec("vllm", "openai-compatible", base_url="http://localhost:8000/v1"),
    "llamacpp": ProviderSpec("llamacpp", "openai-compatible", base_url="http://localhost:8080/v1"),
    "local": ProviderSpec("local", "local"),
    # The clouds' own credential chains (models.cloud_setup): AWS's, Google's Application Default Credentials,
    # Azure OpenAI's key or Microsoft Entra token.
    "bedrock": ProviderSpec("bedrock", "bedrock"),
    "vertex": ProviderSpec("vertex", "vertex"),
    "azure": ProviderSpec("azure", "azure"),
}

#: Providers whose tokens cost nothing: servers on the user's own machine and the embedded model.
LOCAL_PROVIDER_NAMES: frozenset[str] = frozenset({"local", "ollama", "lmstudio", "vllm", "llamacpp"})


def gateway_provider(
    name: str, base_url: str, api_key_env: str | None = None, *, profile: CapabilityProfile | None = None
) -> ProviderSpec:
    """A user-defined OpenAI-compatible provider (a gateway, a team server) from config."""
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ConfigError(f"invalid provider name {name!r}: use letters, digits, '-' and '_'")
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"provider {name!r}: base_url must start with http:// or https://")
    return ProviderSpec(name, "openai-compatible", base_url, api_key_env, profile=profile)


def merge_providers(
    extra: Mapping[str, ProviderSpec] | None = None, *, disabled: frozenset[str] = frozenset()
) -> dict[str, ProviderSpec]:
    """The built-in providers plus config-defined ones, with the ``disabled`` names switched off."""
    merged = dict(BUILTIN_PROVIDERS)
    merged.update(extra or {})
    for name in disabled:
        if name in merged:
            merged[name] = replace(merged[name], enabled=False)
    return merged
