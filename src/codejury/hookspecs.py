"""Every plugin hook codejury calls. Built-ins are registered through these same hooks.

Lifecycle hooks receive a context (``codejury.contexts``); registration hooks receive a
``register(name, thing)`` callable (simonw/llm's ``register_models(register)`` shape), where a
later plugin's name overrides an earlier one's. Pluggy is synchronous: a hook may return an
awaitable, which the core awaits (see ``plugins.await_maybe``). Plugin authors import
everything from ``codejury.plugin``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from codejury.contexts import BootstrapContext, ConfigureContext, PostConfigureContext
    from codejury.models.embeddings import EmbeddingsFactory
    from codejury.models.registry import ModelKind

hookspec = pluggy.HookspecMarker("codejury")
hookimpl = pluggy.HookimplMarker("codejury")


@hookspec
def codejury_bootstrap(ctx: BootstrapContext) -> Awaitable[None] | None:
    """Prepare before configuration (all plugins concurrently; a failure is logged, the run goes on)."""


@hookspec
def codejury_configure(ctx: ConfigureContext) -> None:
    """Contribute reviewers, providers, prompt sections, tool env and permissions (in order; fatal)."""


@hookspec
def codejury_post_configure(ctx: PostConfigureContext) -> Awaitable[None] | None:
    """Adjust the assembled configuration, e.g. from a remote routing document (async)."""


@hookspec
def codejury_register_sources(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register change sources: name -> factory(**options) -> object with ``load() -> ChangeSet`` ('git', 'diff')."""


@hookspec
def codejury_register_renderers(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register renderers: ``--format`` name -> function(Review) -> str ('markdown', 'json'; 'NAME-plan' for plans)."""


@hookspec
def codejury_register_model_kinds(register: Callable[[str, ModelKind], None]) -> None:
    """Register provider kinds: name -> ``ModelKind`` (how to build a model for a ``[providers.X] kind = name``)."""


@hookspec
def codejury_register_embeddings(register: Callable[[str, EmbeddingsFactory], None]) -> None:
    """Register embeddings providers: NAME (of ``[retrieval] embeddings_model = "NAME:MODEL"``) -> factory."""


@hookspec
def codejury_register_analyzers(register: Callable[[str, Any], None]) -> None:
    """Register analyzers: name -> object with ``async analyze(change: ChangeSet) -> list[Evidence]``."""


@hookspec
def codejury_register_recorders(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register recorders: name -> factory(settings) -> object with ``record(review, events)`` and ``close()``."""


@hookspec
def codejury_register_forges(register: Callable[[str, Any], None]) -> None:
    """Register forges by name, each a ``codejury.forges.registry.ForgeKind`` (e.g. 'github', 'gitlab')."""
