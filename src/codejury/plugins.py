"""Plugin manager and the lifecycle: bootstrap (concurrent, non-fatal), configure (ordered,
fatal), post_configure (async). Plugins contribute through contexts; the core assembles the
final ReviewConfig from the contributions, so no plugin reads another plugin's settings."""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import pluggy

from codejury import hookspecs
from codejury.change.types import ChangeSet
from codejury.config import Settings, check_provider, check_reviewer_names
from codejury.errors import CodejuryError, ConfigError
from codejury.models.providers import PROVIDER_KINDS, ProviderSpec
from codejury.reviewers.roster import ReviewerSpec

T = TypeVar("T")
Warn = Callable[[str], None]


async def await_maybe(value: T | Awaitable[T]) -> T:
    """Return ``value``, awaiting it first when a hook returned an awaitable."""
    if inspect.isawaitable(value):
        return await value
    return value


def make_plugin_manager(extra_modules: Iterable[str] = ()) -> pluggy.PluginManager:
    """Built-ins and installed plugins from the ``codejury`` entry point group, plus extra modules."""
    pm = pluggy.PluginManager("codejury")
    pm.add_hookspecs(hookspecs)
    pm.load_setuptools_entrypoints("codejury")
    if pm.get_plugin("builtins") is None:
        from codejury import builtins

        pm.register(builtins, name="builtins")
    for name in extra_modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(f"cannot import plugin module '{name}': {exc}") from exc
        if pm.get_plugin(name) is None:
            pm.register(module, name=name)
    return pm


@dataclass
class Contributions:
    """Everything plugins contributed during configure, in order."""

    reviewers: dict[str, ReviewerSpec] = field(default_factory=dict)
    providers: dict[str, ProviderSpec] = field(default_factory=dict)
    prompt_sections: list[tuple[str, str]] = field(default_factory=list)
    tool_env: dict[str, str] = field(default_factory=dict)
    tool_permissions: dict[str, frozenset[str]] = field(default_factory=dict)
    custom_rules: list[str] = field(default_factory=list)
    repo_instructions: list[str] = field(default_factory=list)


@dataclass
class BootstrapContext:
    """What a plugin may look at while bootstrapping (no contributions yet)."""

    settings: Mapping[str, Any]
    warn: Warn


@dataclass
class ConfigureContext:
    """The only way a plugin contributes to a review's configuration."""

    plugin: str
    settings: Mapping[str, Any]
    change: ChangeSet
    _into: Contributions

    def add_reviewer(self, spec: ReviewerSpec) -> None:
        """Register a reviewer (a later plugin with the same name overrides an earlier one)."""
        self._into.reviewers[spec.name] = spec

    def add_provider(self, spec: ProviderSpec) -> None:
        self._into.providers[spec.name] = spec

    def add_prompt_section(self, title: str, text: str) -> None:
        """Append a section to every reviewer's static prompt."""
        self._into.prompt_sections.append((title, text))

    def set_tool_env(self, name: str, value: str) -> None:
        self._into.tool_env[name] = value

    def set_tool_permissions(self, reviewer: str, tools: Iterable[str]) -> None:
        self._into.tool_permissions[reviewer] = frozenset(tools)

    def add_custom_rules(self, text: str) -> None:
        """Rules for the compliance reviewer ("if you need X, use Y")."""
        self._into.custom_rules.append(text)

    def add_repo_instructions(self, text: str) -> None:
        """Repository instructions (AGENTS.md and the like) for every reviewer."""
        self._into.repo_instructions.append(text)


@dataclass(frozen=True)
class ReviewConfig:
    """The assembled configuration of one review."""

    settings: Settings
    reviewers: Mapping[str, ReviewerSpec]
    providers: Mapping[str, ProviderSpec]
    prompt_sections: tuple[tuple[str, str], ...] = ()
    tool_env: Mapping[str, str] = field(default_factory=dict)
    tool_permissions: Mapping[str, frozenset[str]] = field(default_factory=dict)
    custom_rules: str | None = None
    repo_instructions: str | None = None
    notices: tuple[str, ...] = ()

    def model_for(self, reviewer: str) -> str:
        """The model string a reviewer (or 'coordinator') runs on."""
        if reviewer in self.settings.reviewer_models:
            return self.settings.reviewer_models[reviewer]
        tier = "top" if reviewer == "coordinator" else self.reviewers[reviewer].tier
        return self.settings.models[tier]


@dataclass
class PostConfigureContext:
    """Adjust an assembled configuration (remote routing, provider outages)."""

    plugin: str
    settings: Mapping[str, Any]
    config: ReviewConfig
    warn: Warn
    model_overrides: dict[str, str] = field(default_factory=dict)
    disabled_providers: set[str] = field(default_factory=set)
    failback: dict[str, str | None] = field(default_factory=dict)

    def override_model(self, reviewer: str, spec: str) -> None:
        self.model_overrides[reviewer] = spec

    def disable_provider(self, name: str) -> None:
        self.disabled_providers.add(name)

    def set_failback(self, model: str, next_model: str | None) -> None:
        self.failback[model] = next_model


def _impls(pm: pluggy.PluginManager, hook: str) -> list[tuple[str, Callable[..., Any]]]:
    caller = getattr(pm.hook, hook)
    # pluggy calls the last registered first; we run in registration order (built-ins first).
    return [(impl.plugin_name, impl.function) for impl in reversed(caller.get_hookimpls())]


def _own_settings(settings: Settings, plugin: str) -> Mapping[str, Any]:
    return dict(settings.plugins.get(plugin, {}))


async def run_bootstrap(pm: pluggy.PluginManager, settings: Settings, warn: Warn) -> None:
    """Run every plugin's bootstrap concurrently; a failure is reported and the run goes on."""

    async def one(name: str, fn: Callable[..., Any]) -> None:
        try:
            await await_maybe(fn(BootstrapContext(settings=_own_settings(settings, name), warn=warn)))
        except Exception as exc:  # a plugin's bootstrap must never sink the review
            warn(f"plugin {name}: bootstrap failed: {exc}")

    await asyncio.gather(*(one(n, f) for n, f in _impls(pm, "codejury_bootstrap")))


def run_configure(pm: pluggy.PluginManager, settings: Settings, change: ChangeSet) -> Contributions:
    """Run every plugin's configure in order; the first failure stops the run with its cause."""
    into = Contributions()
    for name, fn in _impls(pm, "codejury_configure"):
        ctx = ConfigureContext(plugin=name, settings=_own_settings(settings, name), change=change, _into=into)
        try:
            fn(ctx=ctx)
        except CodejuryError:
            raise
        except Exception as exc:
            raise ConfigError(f"plugin {name} failed to configure: {exc}") from exc
    return into


def assemble(settings: Settings, into: Contributions, notices: Iterable[str] = ()) -> ReviewConfig:
    """Build the ReviewConfig from the user's settings and the plugins' contributions."""
    providers = dict(into.providers)
    for name, p in settings.providers.items():
        base = providers.get(name)
        check_provider(settings, name, PROVIDER_KINDS, base.base_url if base else None)
        providers[name] = ProviderSpec(
            name=name,
            kind=p.kind,  # type: ignore[arg-type]  # checked against PROVIDER_KINDS just above
            base_url=p.base_url or (base.base_url if base else None),
            api_key_env=p.api_key_env or (base.api_key_env if base else None),
            enabled=p.enabled,
        )
    check_reviewer_names(settings, into.reviewers)  # --model-for / [reviewers.NAME] name a real reviewer
    reviewers = {n: s for n, s in into.reviewers.items() if n not in settings.disabled_reviewers}
    sections = tuple(into.prompt_sections)
    return ReviewConfig(
        settings=settings,
        reviewers=reviewers,
        providers=providers,
        prompt_sections=sections,
        tool_env=dict(into.tool_env),
        tool_permissions=dict(into.tool_permissions),
        custom_rules="\n\n".join(into.custom_rules) or None,
        repo_instructions="\n\n".join(into.repo_instructions) or None,
        notices=tuple(notices),
    )


async def run_post_configure(pm: pluggy.PluginManager, config: ReviewConfig, warn: Warn) -> ReviewConfig:
    """Run every plugin's post_configure in order and apply what they asked for."""
    for name, fn in _impls(pm, "codejury_post_configure"):
        ctx = PostConfigureContext(plugin=name, settings=_own_settings(config.settings, name), config=config, warn=warn)
        try:
            await await_maybe(fn(ctx=ctx))
        except CodejuryError:
            raise
        except Exception as exc:
            raise ConfigError(f"plugin {name} failed in post_configure: {exc}") from exc
        config = _apply_post(config, ctx)
    return config


def _apply_post(config: ReviewConfig, ctx: PostConfigureContext) -> ReviewConfig:
    if not (ctx.model_overrides or ctx.disabled_providers or ctx.failback):
        return config
    providers = {
        n: (replace(p, enabled=False) if n in ctx.disabled_providers else p) for n, p in config.providers.items()
    }
    settings = replace(
        config.settings,
        reviewer_models={**config.settings.reviewer_models, **ctx.model_overrides},
        failback={**config.settings.failback, **ctx.failback},
    )
    return replace(config, providers=providers, settings=settings)


def collect_registry(pm: pluggy.PluginManager, hook: str) -> dict[str, Callable[..., Any]]:
    """Collect name → factory registrations (sources, renderers) in registration order."""
    found: dict[str, Callable[..., Any]] = {}

    def register(name: str, factory: Callable[..., Any]) -> None:
        found[name] = factory

    for _name, fn in _impls(pm, hook):
        fn(register=register)
    return found
