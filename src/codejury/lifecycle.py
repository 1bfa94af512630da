"""The plugin lifecycle of one review: bootstrap (concurrent, non-fatal), configure (ordered,
fatal), post_configure (async), and the registries read from a plugin manager.

Plugins contribute through contexts (``codejury.contexts``); the core assembles the final
ReviewConfig from the contributions, so no plugin reads another plugin's settings. Registries
(sources, renderers, model kinds, embeddings providers, forges, analyzers, recorders) are name →
object tables collected from the ``codejury_register_*`` hooks. The manager itself is made once, by
``codejury.plugins``, in the composition root (``codejury.session``)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy

from codejury.config import (
    ProviderSettings,
    ReviewConfig,
    Settings,
    check_embeddings_provider,
    check_provider,
    check_reviewer_names,
)
from codejury.contexts import BootstrapContext, ConfigureContext, Contributions, PostConfigureContext, Warn
from codejury.errors import CodejuryError, ConfigError
from codejury.models.providers import ProviderSpec

if TYPE_CHECKING:
    from codejury.change.types import ChangeSet
    from codejury.models.registry import ModelKind

T = TypeVar("T")


async def await_maybe(value: T | Awaitable[T]) -> T:
    """Return ``value``, awaiting it first when a hook returned an awaitable."""
    if inspect.isawaitable(value):
        return await value
    return value


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


def run_configure(
    pm: pluggy.PluginManager,
    settings: Settings,
    change: ChangeSet,
    registries: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
) -> Contributions:
    """Run every plugin's configure in order; the first failure stops the run with its cause. ``registries``:
    the model kinds and embeddings providers already collected from ``pm`` (else collected now)."""
    kinds, embeddings = registries or (
        collect_registry(pm, "codejury_register_model_kinds"),
        collect_registry(pm, "codejury_register_embeddings"),
    )
    into = Contributions(model_kinds=dict(kinds), embeddings=dict(embeddings))
    for name, fn in _impls(pm, "codejury_configure"):
        ctx = ConfigureContext(plugin=name, settings=_own_settings(settings, name), change=change, _into=into)
        try:
            fn(ctx=ctx)
        except CodejuryError:
            raise
        except Exception as exc:
            raise ConfigError(f"plugin {name} failed to configure: {exc}") from exc
    return into


def provider_spec(name: str, p: ProviderSettings, base: ProviderSpec | None = None) -> ProviderSpec:
    """The provider ``[providers.NAME]`` declares, over ``base`` (the built-in or plugin provider of that name,
    whose ``kind``, ``base_url`` and ``api_key_env`` it keeps where it sets none). A table with a new name and no
    ``kind`` declares an OpenAI-compatible server."""
    return ProviderSpec(
        name=name,
        kind=p.kind or (base.kind if base else "openai-compatible"),
        base_url=p.base_url or (base.base_url if base else None),
        api_key_env=p.api_key_env or (base.api_key_env if base else None),
        enabled=p.enabled,
        region=p.region,
        project=p.project,
        api_version=p.api_version,
    )


def configured_providers(settings: Settings, known: Mapping[str, ProviderSpec]) -> dict[str, ProviderSpec]:
    """``known`` (the built-in and plugin providers) with the providers ``[providers.NAME]`` declares over them."""
    declared = {name: provider_spec(name, p, known.get(name)) for name, p in settings.providers.items()}
    return {**known, **declared}


def assemble(settings: Settings, into: Contributions, notices: Iterable[str] = ()) -> ReviewConfig:
    """Build the ReviewConfig from the user's settings and the plugins' contributions."""
    kinds = into.model_kinds or _builtin_model_kinds()
    needs_base_url = {name: kind.needs_base_url for name, kind in kinds.items()}
    providers = configured_providers(settings, into.providers)
    for name in settings.providers:
        check_provider(settings, name, needs_base_url, providers[name].kind, providers[name].base_url)
    check_reviewer_names(settings, into.reviewers)  # --model-for / [reviewers.NAME] name a real reviewer
    check_embeddings_provider(settings, providers, into.embeddings)  # [retrieval] embeddings_model's NAME
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
        model_kinds=dict(kinds),
        embeddings_providers=dict(into.embeddings),
    )


def _builtin_model_kinds() -> dict[str, ModelKind]:
    """The built-in kinds, for a configuration assembled without running the plugins' registrations."""
    from codejury.models.registry import BUILTIN_MODEL_KINDS

    return dict(BUILTIN_MODEL_KINDS)


async def run_post_configure(
    pm: pluggy.PluginManager, config: ReviewConfig, warn: Warn, change: ChangeSet | None = None
) -> ReviewConfig:
    """Run every plugin's post_configure in order and apply what they asked for."""
    for name, fn in _impls(pm, "codejury_post_configure"):
        ctx = PostConfigureContext(
            plugin=name, settings=_own_settings(config.settings, name), config=config, warn=warn, change=change
        )
        try:
            await await_maybe(fn(ctx=ctx))
        except CodejuryError:
            raise
        except Exception as exc:
            raise ConfigError(f"plugin {name} failed in post_configure: {exc}") from exc
        config = _apply_post(config, ctx)
    return config


def _apply_post(config: ReviewConfig, ctx: PostConfigureContext) -> ReviewConfig:
    if ctx.stopped is not None and config.stopped is None:  # the first plugin to stop the review says why
        config = replace(config, stopped=ctx.stopped)
    if (given := ctx.instructions) is not None:
        notes = (given.cut,) if given.cut else ()
        config = replace(
            config, repo_instructions=given.repo, org_instructions=given.organisation, instruction_notes=notes
        )
    if not (ctx.model_overrides or ctx.disabled_providers or ctx.failback):
        return config
    providers = {
        n: (replace(p, enabled=False) if n in ctx.disabled_providers else p) for n, p in config.providers.items()
    }
    settings = config.settings.model_copy(
        update={
            "reviewer_models": {**config.settings.reviewer_models, **ctx.model_overrides},
            "failback": {**config.settings.failback, **ctx.failback},
        }
    )
    return replace(config, providers=providers, settings=settings)


def collect_registry(pm: pluggy.PluginManager, hook: str) -> dict[str, Any]:
    """Collect name → object registrations in registration order (a later plugin overrides a name)."""
    found: dict[str, Any] = {}

    def register(name: str, factory: Any) -> None:
        found[name] = factory

    for _name, fn in _impls(pm, hook):
        fn(register=register)
    return found
