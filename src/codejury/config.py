"""Layered configuration → frozen Settings → (with the plugins' contributions) one ReviewConfig.

Layers, lowest first (``LAYERS``): built-in defaults < ``[tool.codejury]`` in pyproject.toml or
``.codejury.toml`` (read from the base side of the change, so a change cannot reconfigure its own review)
< ``--config FILE`` < environment (``CODEJURY_*``: every key, ``CODEJURY_<TABLE>__<KEY>`` for a nested one) <
command-line flags < the remote routing document (``remote_config``), which re-routes reviewer models,
failback and providers over every other layer, since it is how an outage is handled while reviews run.
API keys are never config values: a provider names the environment variable that holds its key.

Every layer is validated by the settings model, ``config_schema.FileTable`` (one error line naming the file,
variable or flag, the key and what was expected). ``Settings`` is the frozen result the rest of the code reads:
a pydantic model that extends ``config_schema.SettingKeys``, where every key is declared once, and adds only
what ``merge_validated`` converts the file's ``[models]``, ``[reviewers.NAME]``, ``[record]`` and
``[confidence]`` tables into, with ``model_source`` and ``origins``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_origin

from pydantic import BaseModel, Field

from codejury.config_schema import FAIL_ON_CHOICES as FAIL_ON_CHOICES
from codejury.config_schema import (
    FileTable,
    LimitsTable,
    MemoryTable,
    PriceTable,
    ProviderTable,
    RecordTable,
    RetrievalTable,
    SettingKeys,
    SkipTable,
    Source,
    dotted,
    environment_table,
    show_value,
    validate_table,
)
from codejury.errors import ConfigError

if TYPE_CHECKING:
    from codejury.models.embeddings import EmbeddingsFactory
    from codejury.models.providers import ProviderSpec
    from codejury.models.registry import ModelKind
    from codejury.reviewers.roster import ReviewerSpec

ModelTier = Literal["top", "standard", "light"]
EMBEDDED_MODEL = "local:qwen2.5-coder-1.5b"
TIERS: tuple[ModelTier, ...] = ("top", "standard", "light")

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


LAYERS = (
    "built-in defaults",
    "pyproject.toml [tool.codejury] (base side)",
    ".codejury.toml (base side)",
    "--config FILE",
    "environment (CODEJURY_*)",
    "command-line flags",
    "remote routing document (remote_config)",
)
"""Where settings come from, lowest first: a later layer wins for the keys it sets."""
ENV_MODEL = "CODEJURY_MODEL"
"""One model for every tier, under the per-tier variables."""
ENV_ALIASES: dict[str, str] = {
    "CODEJURY_MODEL_TOP": "models.top",
    "CODEJURY_MODEL_STANDARD": "models.standard",
    "CODEJURY_MODEL_LIGHT": "models.light",
    "CODEJURY_RECORD_URL": "record.url",
}
"""Shorter names kept for some keys' variables (``env_name``: ``CODEJURY_MODELS__TOP``); the long name wins."""


ProviderSettings = ProviderTable
"""A provider declared in config (``[providers.NAME]``): the settings model's table, as validated."""
PriceSettings = PriceTable
"""What a model costs (``[prices."provider:model"]``); a missing cache price: the provider's usual fraction."""
DailyLimits = LimitsTable
"""``[limits]``: caps per UTC day, counted in the review store; None: no cap (``capped``: any is set)."""
MemorySettings = MemoryTable
"""``[memory]``: dismissed findings remembered per repository (``codejury.memory``)."""
SkipRules = SkipTable
"""``[skip]``: merge requests not reviewed, by label, author, title, target branch or paths (``change.skip``)."""
RetrievalSettings = RetrievalTable
"""``[retrieval]``: the embeddings model, the reranker and the vector store of code search; None: not used."""


class Settings(SettingKeys):
    """The user's layered settings (before plugins contribute): every key of ``SettingKeys`` as the layers left it
    (declared there once, defaults included), and what ``merge_validated`` makes of the file's other tables."""

    models: Mapping[str, str] = Field(default_factory=dict)
    """Tier → model string, from ``[models]`` (``fill_default_models`` gives the tiers left a default)."""
    reviewer_models: Mapping[str, str] = Field(default_factory=dict)
    """Reviewer (or ``coordinator``) → model string, from ``[reviewers.NAME] model``."""
    disabled_reviewers: frozenset[str] = frozenset()
    """Reviewers that ``[reviewers.NAME] enabled = false`` turned off."""
    record_url: str | None = None
    """Where reviews are recorded (``record.url``); None: the default SQLite file."""
    record_prompts: bool = RecordTable.model_fields["prompts"].default
    """Traces carry prompts and responses (``record.prompts``); off: names, models, tokens, timings only."""
    min_confidence: Mapping[str, float] = Field(default_factory=dict)
    """``[confidence]``: ``min`` and per-severity thresholds a finding needs to be published (empty: none)."""
    model_source: str = "default"
    """Which layer chose the models: default, config, environment, command line or embedded."""
    origins: Mapping[str, str] = Field(default_factory=dict)
    """Dotted key → where the user set it (``.codejury.toml: providers.gw.kind``), for later errors."""

    def origin(self, dotted: str) -> str:
        """Where ``dotted`` was set, else where its closest enclosing table was, else the key itself."""
        key = dotted
        while key:
            if key in self.origins:
                return self.origins[key] + dotted[len(key) :]
            key = key.rpartition(".")[0]
        return dotted

    def confidence_threshold(self, severity: str) -> float:
        """The confidence a finding of ``severity`` needs to be published (``[confidence]``)."""
        given = self.min_confidence
        return given.get(severity, given.get("min", 0.0))


@dataclass(frozen=True)
class ReviewConfig:
    """The assembled configuration of one review: the settings plus what the plugins contributed."""

    settings: Settings
    reviewers: Mapping[str, ReviewerSpec]
    providers: Mapping[str, ProviderSpec]
    prompt_sections: tuple[tuple[str, str], ...] = ()
    tool_env: Mapping[str, str] = field(default_factory=dict)
    tool_permissions: Mapping[str, frozenset[str]] = field(default_factory=dict)
    custom_rules: str | None = None
    repo_instructions: str | None = None
    org_instructions: str | None = None
    """The organisation's instructions template (``instructions_url``), as it fitted the budget."""
    instruction_notes: tuple[str, ...] = ()
    """What the instructions budget cut, for the review's notes."""
    notices: tuple[str, ...] = ()
    model_kinds: Mapping[str, ModelKind] | None = None
    """Provider kind → how to build its models (``codejury_register_model_kinds``); None: the built-in kinds."""
    embeddings_providers: Mapping[str, EmbeddingsFactory] = field(default_factory=dict)
    """Embeddings provider name → its factory (``codejury_register_embeddings``)."""
    stopped: str | None = None
    """Why no model may be called for this review (the routing document's kill switch); None: it runs."""

    def model_for(self, reviewer: str) -> str:
        """The model string a reviewer (or 'coordinator') runs on."""
        if reviewer in self.settings.reviewer_models:
            return self.settings.reviewer_models[reviewer]
        tier = "top" if reviewer == "coordinator" else self.reviewers[reviewer].tier
        return self.settings.models[tier]


_FILE_ONLY = frozenset(FileTable.model_fields) - frozenset(SettingKeys.model_fields)
"""The file's tables that ``merge_validated`` converts (``[models]``, ``[reviewers.NAME]``, ``[record]``…)."""


def _kind(annotation: Any) -> str:
    """``mapping`` (merged per entry), ``table`` (a model: merged key by key) or ``value`` (taken as it is)."""
    if get_origin(annotation) is dict:
        return "mapping"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    return "value"


_KINDS = {name: _kind(info.annotation) for name, info in SettingKeys.model_fields.items()}
SCALAR_KEYS = tuple(
    key
    for key, kind in _KINDS.items()
    if kind == "value" and get_origin(SettingKeys.model_fields[key].annotation) is not tuple
)
"""Keys whose one value the settings hold as the layer gave it (lists, mappings and tables are merged apart)."""


def read_config_text(name: str, text: str) -> tuple[dict[str, Any], str]:
    """Parse a config file and return its codejury table and the key prefix errors should show.

    pyproject.toml, and any file with a ``[tool.codejury]`` table (the README's block copied into a
    ``--config`` file), contribute that table only; any other file is the codejury table itself.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{name}: invalid TOML: {exc}") from exc
    tool = data.get("tool")
    if not name.endswith("pyproject.toml") and not (isinstance(tool, dict) and "codejury" in tool):
        return data, ""
    if tool is None:
        return {}, "tool.codejury."
    if not isinstance(tool, dict):
        raise ConfigError(f"{name}: tool must be a table (got {show_value(tool)})")
    table = tool.get("codejury", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{name}: tool.codejury must be a table (got {show_value(table)})")
    stray = sorted(k for k in data if k in FileTable.model_fields) if not name.endswith("pyproject.toml") else []
    if stray:
        raise ConfigError(f"{name}: setting(s) outside [tool.codejury]: {', '.join(stray)}")
    return table, "tool.codejury."


def merge_file_table(
    base: Settings,
    table: Mapping[str, Any],
    where: str,
    *,
    prefix: str = "",
    names: Mapping[str, str] | None = None,
    model_source: str = "config",
    strict: bool = True,
) -> Settings:
    """Validate one source's table and apply it over ``base`` (only the keys it sets)."""
    source = Source(where, prefix, names)
    return merge_validated(base, validate_table(table, source, strict=strict), source, model_source=model_source)


def merge_validated(base: Settings, t: FileTable, source: Source, *, model_source: str = "config") -> Settings:
    """Apply a validated table over ``base``: the keys it sets win, mappings and tables merge one level deep; the
    file-only tables become the settings' own fields (``[models]`` → ``models``, ``[reviewers.NAME]`` →
    ``reviewer_models`` and ``disabled_reviewers``, ``[record]`` → ``record_url``/``record_prompts``,
    ``[confidence]`` → ``min_confidence``)."""
    changes: dict[str, Any] = {}
    for name in t.model_fields_set - _FILE_ONLY:
        value, kind = getattr(t, name), _KINDS[name]
        if kind == "mapping":
            changes[name] = {**getattr(base, name), **value}
        elif kind == "table":
            changes[name] = getattr(base, name).model_copy(
                update={k: getattr(value, k) for k in value.model_fields_set}
            )
        else:
            changes[name] = value
    disabled = set(base.disabled_reviewers)
    for name, entry in t.reviewers.items():
        if entry.enabled is True:
            disabled.discard(name)
        elif entry.enabled is False:
            disabled.add(name)
    if "url" in t.record.model_fields_set:
        changes["record_url"] = t.record.url
    if "prompts" in t.record.model_fields_set:
        changes["record_prompts"] = t.record.prompts
    if t.confidence.model_fields_set:
        given_confidence = {k: v for k in t.confidence.model_fields_set if (v := getattr(t.confidence, k)) is not None}
        changes["min_confidence"] = {**base.min_confidence, **given_confidence}
    sets_models = bool(t.models.model_fields_set) or any(e.model is not None for e in t.reviewers.values())
    merged = base.model_copy(
        update={
            **changes,
            "models": {**base.models, **t.models.model_dump(exclude_none=True)},
            "reviewer_models": {
                **base.reviewer_models,
                **{n: e.model for n, e in t.reviewers.items() if e.model is not None},
            },
            "disabled_reviewers": frozenset(disabled),
            "model_source": model_source if sets_models else base.model_source,
            "origins": {**base.origins, **_origins(t.model_dump(exclude_unset=True), source)},
        }
    )
    if merged.votes_needed is not None and merged.votes_needed > merged.votes:
        raise ConfigError(
            f"{merged.origin('votes_needed')}: votes_needed = {merged.votes_needed} is more than votes = {merged.votes}"
        )
    return merged


def _origins(tree: Mapping[str, Any], source: Source, parent: tuple[str, ...] = ()) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in tree.items():
        path = (*parent, str(key))
        found[".".join(path)] = source.label(dotted(path))
        if isinstance(value, dict) and len(path) < 3:
            found.update(_origins(value, source, path))
    return found


def apply_environment(base: Settings, env: Mapping[str, str]) -> Settings:
    """Apply the ``CODEJURY_*`` variables that set a key (every key: ``config_schema.environment_table``), the
    ``ENV_ALIASES`` and ``CODEJURY_MODEL`` (every tier not set otherwise); an empty variable counts as unset."""
    table, names = environment_table(env)
    for variable, key in ENV_ALIASES.items():
        if env.get(variable) and key not in names:
            parent, _, leaf = key.partition(".")
            into = table.setdefault(parent, {})
            if isinstance(into, dict):
                into[leaf] = env[variable]
                names[key] = variable
    if env.get(ENV_MODEL):
        models = table.setdefault("models", {})
        for tier in TIERS if isinstance(models, dict) else ():
            if tier not in models:
                models[tier] = env[ENV_MODEL]
                names[f"models.{tier}"] = ENV_MODEL
    if not table:
        return base
    longest_first = dict(sorted(names.items(), key=lambda item: -len(item[0])))
    return merge_file_table(base, table, "environment", names=longest_first, model_source="environment", strict=False)


def check_provider(
    settings: Settings, name: str, known_kinds: Mapping[str, bool], kind: str, base_url: str | None
) -> None:
    """A configured provider's kind must be registered, and a kind that needs a base_url gets one.

    ``known_kinds``: every registered provider kind → whether its providers need a ``base_url``; ``kind`` and
    ``base_url``: the provider's own, or those of the built-in or plugin provider it is named after.
    """
    if kind not in known_kinds:
        raise ConfigError(
            f"{settings.origin(f'providers.{name}.kind')} must be one of {', '.join(known_kinds)} "
            f"(got {kind!r}); a plugin's kind needs its plugin loaded"
        )
    if known_kinds[kind] and not base_url:
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise ConfigError(f"{settings.origin(f'providers.{name}.base_url')} is required for {article} {kind} provider")


def check_embeddings_provider(settings: Settings, providers: Collection[str], registered: Collection[str]) -> None:
    """``[retrieval] embeddings_model`` names a configured provider or an embeddings provider a plugin registered."""
    spec = settings.retrieval.embeddings_model
    if spec is None:
        return
    name = spec.partition(":")[0].strip().lower()
    if name in providers or name in {r.lower() for r in registered}:
        return
    known = ", ".join(sorted(registered)) or "none"
    raise ConfigError(
        f"{settings.origin('retrieval.embeddings_model')}: no provider named {name!r} (providers: "
        f"{', '.join(sorted(providers))}; registered embeddings providers: {known}); a plugin's "
        "provider needs its plugin loaded"
    )


def check_reviewer_names(settings: Settings, known: Collection[str]) -> None:
    """Every reviewer the settings name (a model, enabled) must exist once the roster is assembled."""
    named = {*settings.reviewer_models, *settings.disabled_reviewers}
    named |= {key.split(".")[1] for key in settings.origins if key.startswith("reviewers.")}
    unknown = sorted(n for n in named if n not in known and n != "coordinator")
    if unknown:
        where = settings.origins.get(f"reviewers.{unknown[0]}.model") or settings.origin(f"reviewers.{unknown[0]}")
        raise ConfigError(
            f"{where}: no reviewer named {unknown[0]!r}; reviewers: {', '.join(sorted(known))}, coordinator "
            "(a plugin's reviewer needs its plugin loaded)"
        )


def fill_default_models(settings: Settings, env: Mapping[str, str]) -> tuple[Settings, str | None]:
    """Give every tier a model: a configured provider's key, else the embedded model.

    Returns the settings and a one-line notice when a default was chosen for the user.
    """
    models = dict(settings.models)
    missing = [t for t in TIERS if t not in models]
    if not missing:
        return settings, None
    for key_env, defaults in CLOUD_DEFAULTS.items():
        if env.get(key_env):
            for tier in missing:
                models[tier] = defaults[tier]
            return settings.model_copy(
                update={"models": models}
            ), f"no model configured; using {key_env[:-8].lower()} models"
    for tier in missing:
        models[tier] = EMBEDDED_MODEL
    notice = (
        "no model provider configured; using the embedded local model "
        f"({EMBEDDED_MODEL}). Set CODEJURY_MODEL or [tool.codejury.models] to use another."
    )
    return settings.model_copy(update={"models": models, "model_source": "embedded"}), notice
