"""Every plugin hook codejury calls. Built-ins are registered through these same hooks.

Pluggy is synchronous: a hook may return an awaitable, which the core awaits
(see ``plugins.await_maybe``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from codejury.plugins import BootstrapContext, ConfigureContext, PostConfigureContext

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
    """Register change sources by name (e.g. 'git', 'diff')."""


@hookspec
def codejury_register_renderers(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register review renderers by format name (e.g. 'markdown', 'json', 'terminal')."""


@hookspec
def codejury_register_forges(register: Callable[[str, Any], None]) -> None:
    """Register forges by name, each a ``codejury.forges.registry.ForgeKind`` (e.g. 'github', 'gitlab')."""
