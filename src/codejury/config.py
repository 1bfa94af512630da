"""Layered configuration → one frozen ReviewConfig.

Layers, lowest first: built-in defaults < ``[tool.codejury]`` in pyproject.toml or
``.codejury.toml`` (read from the base side of the change, so a change cannot reconfigure
its own review) < environment (``CODEJURY_*``) < CLI flags. API keys are never config
values: a provider names the environment variable that holds its key.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from codejury.errors import ConfigError

ModelTier = Literal["top", "standard", "light"]
FAIL_ON_CHOICES = ("suggestion", "warning", "critical", "requested_changes", "never")
EMBEDDED_MODEL = "local:qwen2.5-coder-1.5b"

CLOUD_DEFAULTS: dict[str, dict[str, str]] = {
    "ANTHROPIC_API_KEY": {
        "top": "anthropic:claude-opus-4-6",
        "standard": "anthropic:claude-sonnet-4-6",
        "light": "anthropic:claude-haiku-4-5",
    },
    "OPENAI_API_KEY": {
        "top": "openai:gpt-5.1",
        "standard": "openai:gpt-5-mini",
        "light": "openai:gpt-5-nano",
    },
}


@dataclass(frozen=True)
class ProviderSettings:
    """A provider declared in config: an OpenAI-compatible gateway or an override."""

    kind: str = "openai-compatible"
    base_url: str | None = None
    api_key_env: str | None = None
    enabled: bool = True


@dataclass(frozen=True)
class PriceSettings:
    input: float
    output: float
    cache_read: float | None = None  # None: the provider's usual fraction of the input price
    cache_write: float | None = None


@dataclass(frozen=True)
class Settings:
    """The user's layered settings (before plugins contribute)."""

    models: Mapping[str, str] = field(default_factory=dict)
    reviewer_models: Mapping[str, str] = field(default_factory=dict)
    disabled_reviewers: frozenset[str] = frozenset()
    providers: Mapping[str, ProviderSettings] = field(default_factory=dict)
    prices: Mapping[str, PriceSettings] = field(default_factory=dict)
    failback: Mapping[str, str | None] = field(default_factory=dict)
    reflection: bool = False
    fail_on: str = "requested_changes"
    exclude: tuple[str, ...] = ()
    max_tool_calls: int = 25
    max_requests: int = 30
    max_input_tokens: int = 400_000
    reviewer_timeout_s: float = 300.0
    overall_timeout_s: float = 1500.0
    stall_timeout_s: float = 60.0
    heartbeat_s: float = 30.0
    min_retry_window_s: float = 120.0
    breaker_failures: int = 3
    breaker_cooldown_s: float = 120.0
    remote_config: str | None = None
    plugins: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    model_source: str = "default"
    approve: bool = True
    """False: on a forge, publish comments only, never approve or withdraw an approval."""


def _table(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table")
    return value


def read_config_text(name: str, text: str) -> dict[str, Any]:
    """Parse a config file's text and return its codejury table."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{name}: invalid TOML: {exc}") from exc
    if name.endswith("pyproject.toml"):
        return _table(data.get("tool", {}).get("codejury"), f"{name} [tool.codejury]")
    return data


def merge_file_table(base: Settings, table: Mapping[str, Any], where: str) -> Settings:
    """Apply one config file's table over ``base``."""
    known = {
        "models",
        "reviewers",
        "providers",
        "prices",
        "failback",
        "reflection",
        "fail_on",
        "exclude",
        "max_tool_calls",
        "max_requests",
        "max_input_tokens",
        "reviewer_timeout_s",
        "overall_timeout_s",
        "stall_timeout_s",
        "heartbeat_s",
        "min_retry_window_s",
        "breaker_failures",
        "breaker_cooldown_s",
        "remote_config",
        "plugins",
        "approve",
    }
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s): {', '.join(unknown)}")
    models = dict(base.models)
    for tier, spec in _table(table.get("models"), f"{where} models").items():
        if tier not in ("top", "standard", "light"):
            raise ConfigError(f"{where}: models.{tier}: tier must be top, standard or light")
        models[tier] = _str(spec, f"{where}: models.{tier}")
    reviewer_models = dict(base.reviewer_models)
    disabled = set(base.disabled_reviewers)
    for name, entry in _table(table.get("reviewers"), f"{where} reviewers").items():
        entry = _table(entry, f"{where} reviewers.{name}")
        if "model" in entry:
            reviewer_models[name] = _str(entry["model"], f"{where}: reviewers.{name}.model")
        if entry.get("enabled") is False:
            disabled.add(name)
        elif entry.get("enabled") is True:
            disabled.discard(name)
    providers = dict(base.providers)
    for name, entry in _table(table.get("providers"), f"{where} providers").items():
        entry = _table(entry, f"{where} providers.{name}")
        if "api_key" in entry:
            raise ConfigError(
                f"{where}: providers.{name}.api_key: keys never go in config files; "
                "set api_key_env to the name of an environment variable"
            )
        providers[name] = ProviderSettings(
            kind=str(entry.get("kind", "openai-compatible")),
            base_url=entry.get("base_url"),
            api_key_env=entry.get("api_key_env"),
            enabled=bool(entry.get("enabled", True)),
        )
    prices = dict(base.prices)
    for spec, entry in _table(table.get("prices"), f"{where} prices").items():
        entry = _table(entry, f"{where} prices.{spec}")
        try:
            prices[spec] = PriceSettings(
                input=float(entry["input"]),
                output=float(entry["output"]),
                cache_read=float(entry["cache_read"]) if "cache_read" in entry else None,
                cache_write=float(entry["cache_write"]) if "cache_write" in entry else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: prices.{spec}: needs numeric input and output (USD per Mtok)") from exc
    failback = dict(base.failback)
    for model, nxt in _table(table.get("failback"), f"{where} failback").items():
        failback[model] = nxt or None
    fail_on = str(table.get("fail_on", base.fail_on))
    if fail_on not in FAIL_ON_CHOICES:
        raise ConfigError(f"{where}: fail_on must be one of {', '.join(FAIL_ON_CHOICES)}")
    exclude = table.get("exclude", list(base.exclude))
    if not isinstance(exclude, list) or not all(isinstance(x, str) for x in exclude):
        raise ConfigError(f"{where}: exclude must be a list of glob strings")
    approve = table.get("approve", base.approve)
    if not isinstance(approve, bool):
        raise ConfigError(f"{where}: approve must be true or false")
    return Settings(
        approve=approve,
        models=models,
        reviewer_models=reviewer_models,
        disabled_reviewers=frozenset(disabled),
        providers=providers,
        prices=prices,
        failback=failback,
        reflection=bool(table.get("reflection", base.reflection)),
        fail_on=fail_on,
        exclude=tuple(exclude),
        max_tool_calls=_int(table, "max_tool_calls", base.max_tool_calls, where),
        max_requests=_int(table, "max_requests", base.max_requests, where),
        max_input_tokens=_int(table, "max_input_tokens", base.max_input_tokens, where),
        reviewer_timeout_s=_seconds(table, "reviewer_timeout_s", base.reviewer_timeout_s, where),
        overall_timeout_s=_seconds(table, "overall_timeout_s", base.overall_timeout_s, where),
        stall_timeout_s=_seconds(table, "stall_timeout_s", base.stall_timeout_s, where),
        heartbeat_s=_seconds(table, "heartbeat_s", base.heartbeat_s, where),
        min_retry_window_s=_seconds(table, "min_retry_window_s", base.min_retry_window_s, where, allow_zero=True),
        breaker_failures=_int(table, "breaker_failures", base.breaker_failures, where),
        breaker_cooldown_s=_seconds(table, "breaker_cooldown_s", base.breaker_cooldown_s, where),
        remote_config=table.get("remote_config", base.remote_config),
        plugins={**base.plugins, **_table(table.get("plugins"), f"{where} plugins")},
        model_source="config" if models or reviewer_models else base.model_source,
    )


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} must be a non-empty string")
    return value


def _seconds(table: Mapping[str, Any], key: str, default: float, where: str, *, allow_zero: bool = False) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or (value == 0 and not allow_zero):
        raise ConfigError(f"{where}: {key} must be a positive number of seconds")
    return float(value)


def _int(table: Mapping[str, Any], key: str, default: int, where: str) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{where}: {key} must be a positive integer")
    return value


def apply_environment(base: Settings, env: Mapping[str, str]) -> Settings:
    """Apply ``CODEJURY_*`` variables: CODEJURY_MODEL (every tier), CODEJURY_MODEL_TOP/STANDARD/LIGHT,
    CODEJURY_REFLECTION, CODEJURY_FAIL_ON, CODEJURY_REMOTE_CONFIG."""
    models = dict(base.models)
    source = base.model_source
    if env.get("CODEJURY_MODEL"):
        models = {tier: env["CODEJURY_MODEL"] for tier in ("top", "standard", "light")}
        source = "environment"
    for tier in ("top", "standard", "light"):
        value = env.get(f"CODEJURY_MODEL_{tier.upper()}")
        if value:
            models[tier] = value
            source = "environment"
    table: dict[str, Any] = {}
    if "CODEJURY_REFLECTION" in env:
        table["reflection"] = env["CODEJURY_REFLECTION"].lower() in ("1", "true", "yes", "on")
    if env.get("CODEJURY_FAIL_ON"):
        table["fail_on"] = env["CODEJURY_FAIL_ON"]
    if env.get("CODEJURY_REMOTE_CONFIG"):
        table["remote_config"] = env["CODEJURY_REMOTE_CONFIG"]
    merged = merge_file_table(base, table, "environment")
    return _replace(merged, models=models, model_source=source)


def _replace(settings: Settings, **changes: Any) -> Settings:
    from dataclasses import replace

    return replace(settings, **changes)


def fill_default_models(settings: Settings, env: Mapping[str, str]) -> tuple[Settings, str | None]:
    """Give every tier a model: a configured provider's key, else the embedded model.

    Returns the settings and a one-line notice when a default was chosen for the user.
    """
    models = dict(settings.models)
    missing = [t for t in ("top", "standard", "light") if t not in models]
    if not missing:
        return settings, None
    for key_env, defaults in CLOUD_DEFAULTS.items():
        if env.get(key_env):
            for tier in missing:
                models[tier] = defaults[tier]
            return _replace(settings, models=models), f"no model configured; using {key_env[:-8].lower()} models"
    for tier in missing:
        models[tier] = EMBEDDED_MODEL
    notice = (
        "no model provider configured; using the embedded local model "
        f"({EMBEDDED_MODEL}). Set CODEJURY_MODEL or [tool.codejury.models] to use another."
    )
    return _replace(settings, models=models, model_source="embedded"), notice
