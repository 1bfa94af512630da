"""What a cloud provider (Bedrock, Vertex AI, Azure OpenAI) needs before its first call, checked without calling.

Each cloud authenticates with its own standard credential chain, read by its SDK at request time:

- ``bedrock``: boto3's default chain (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``,
  ``AWS_PROFILE`` with the ``~/.aws`` files, web identity ``AWS_ROLE_ARN`` + ``AWS_WEB_IDENTITY_TOKEN_FILE``, a
  container or instance role). The region: ``[providers.bedrock] region``, else ``AWS_REGION`` /
  ``AWS_DEFAULT_REGION``, else the profile's. ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` moves the endpoint, as botocore
  does for every AWS tool.
- ``vertex``: Google Application Default Credentials (``GOOGLE_APPLICATION_CREDENTIALS``: a service-account key or an
  ``external_account`` workload identity federation file; ``gcloud auth application-default login``; the metadata
  server). The project and location: ``[providers.vertex] project`` / ``region``, else ``GOOGLE_CLOUD_PROJECT`` /
  ``GOOGLE_CLOUD_LOCATION``.
- ``azure``: ``AZURE_OPENAI_ENDPOINT`` (or ``base_url``), ``OPENAI_API_VERSION`` (or ``api_version``), and
  ``AZURE_OPENAI_API_KEY`` (or ``api_key_env``), else a Microsoft Entra access token in ``AZURE_OPENAI_AD_TOKEN``.

``cloud_problem`` says in one line why a model of such a provider cannot be used here (its SDK not installed, no
region, project, location, endpoint, API version or key), or None; ``--dry-run`` lists it and building the model
raises it. Nothing here imports an SDK: whether one is installed is read with ``importlib.util.find_spec``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass

from codejury.errors import ModelSetupError
from codejury.models.providers import ProviderSpec

CLOUD_KINDS: frozenset[str] = frozenset({"bedrock", "vertex", "azure"})

#: The Python modules each cloud kind's SDK brings, and the codejury extra that installs them.
_SDKS: dict[str, tuple[tuple[str, ...], str]] = {
    "bedrock": (("boto3", "botocore"), "bedrock"),
    "vertex": (("google.genai", "google.auth"), "vertex"),
    "azure": (("openai",), "azure"),
}

AZURE_KEY_ENV = "AZURE_OPENAI_API_KEY"
AZURE_TOKEN_ENV = "AZURE_OPENAI_AD_TOKEN"

#: The environment a cloud model is built from (they key the shared model: a change builds a new one).
CLOUD_ENV: dict[str, tuple[str, ...]] = {
    "bedrock": (
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_ROLE_ARN",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
        "SSL_CERT_FILE",
    ),
    "vertex": ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS"),
    "azure": ("AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION", AZURE_KEY_ENV, AZURE_TOKEN_ENV),
}


@dataclass(frozen=True)
class CloudSetup:
    """Where one cloud provider's models live, resolved from its config table and the environment."""

    region: str | None = None
    """Bedrock's AWS region; Vertex AI's location."""
    project: str | None = None
    endpoint: str | None = None
    api_version: str | None = None
    api_key: str | None = None
    ad_token: str | None = None


def cloud_problem(provider: ProviderSpec, env: Mapping[str, str]) -> str | None:
    """One line saying why ``provider``'s models cannot be used here, or None (a non-cloud kind: None)."""
    try:
        cloud_setup(provider, env)
    except ModelSetupError as exc:
        return str(exc)
    return None


def cloud_setup(provider: ProviderSpec, env: Mapping[str, str]) -> CloudSetup:
    """The provider's resolved setup; ``ModelSetupError`` says in one line what is missing."""
    if provider.kind not in CLOUD_KINDS:
        return CloudSetup()
    modules, extra = _SDKS[provider.kind]
    if not all(_importable(m) for m in modules):
        raise ModelSetupError(f"{provider.name}: install codejury[{extra}]")
    if provider.kind == "bedrock":
        return _bedrock(provider, env)
    if provider.kind == "vertex":
        return _vertex(provider, env)
    return _azure(provider, env)


def _bedrock(provider: ProviderSpec, env: Mapping[str, str]) -> CloudSetup:
    region = provider.region or _first(env, "AWS_REGION", "AWS_DEFAULT_REGION") or _profile_region(env)
    if not region:
        raise ModelSetupError(
            f"{provider.name}: no AWS region: set AWS_REGION (or [providers.{provider.name}] region, "
            "or a region in the AWS profile)"
        )
    return CloudSetup(region=region, endpoint=provider.base_url)


def _vertex(provider: ProviderSpec, env: Mapping[str, str]) -> CloudSetup:
    project = provider.project or _first(env, "GOOGLE_CLOUD_PROJECT")
    location = provider.region or _first(env, "GOOGLE_CLOUD_LOCATION")
    table = f"[providers.{provider.name}]"
    if not project:
        raise ModelSetupError(
            f"{provider.name}: no Google Cloud project: set GOOGLE_CLOUD_PROJECT (or {table} project)"
        )
    if not location:
        raise ModelSetupError(
            f"{provider.name}: no Vertex AI location: set GOOGLE_CLOUD_LOCATION (or {table} region), e.g. us-central1"
        )
    return CloudSetup(region=location, project=project, endpoint=provider.base_url)


def _azure(provider: ProviderSpec, env: Mapping[str, str]) -> CloudSetup:
    table = f"[providers.{provider.name}]"
    endpoint = provider.base_url or _first(env, "AZURE_OPENAI_ENDPOINT")
    if not endpoint:
        raise ModelSetupError(
            f"{provider.name}: no Azure OpenAI endpoint: set AZURE_OPENAI_ENDPOINT (or {table} base_url)"
        )
    api_version = provider.api_version or _first(env, "OPENAI_API_VERSION")
    if not api_version:
        raise ModelSetupError(
            f"{provider.name}: no Azure OpenAI API version: set OPENAI_API_VERSION (or {table} api_version), "
            "e.g. 2024-10-21"
        )
    key_env = provider.api_key_env or AZURE_KEY_ENV
    api_key = _first(env, key_env)
    token = None if api_key else _first(env, AZURE_TOKEN_ENV)
    if not api_key and not token:
        raise ModelSetupError(
            f"{provider.name}: no Azure OpenAI credentials: set {key_env}, or {AZURE_TOKEN_ENV} to a Microsoft Entra "
            "access token"
        )
    return CloudSetup(endpoint=endpoint, api_version=api_version, api_key=api_key, ad_token=token)


def _first(env: Mapping[str, str], *names: str) -> str | None:
    return next((value for name in names if (value := env.get(name, "").strip())), None)


def _profile_region(env: Mapping[str, str]) -> str | None:
    """The region of the AWS profile (``AWS_PROFILE``, else ``default``) in the AWS config file, read by botocore."""
    from botocore.session import Session

    profile = _first(env, "AWS_PROFILE", "AWS_DEFAULT_PROFILE")
    try:
        session = Session(profile=profile)
        region: str | None = session.get_config_variable("region")
    except Exception:  # noqa: BLE001  # a missing or broken profile: botocore's own error comes at the first call
        return None
    return region


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package ("google") is absent
        return False
