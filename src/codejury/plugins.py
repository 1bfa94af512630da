"""The plugin manager: built-ins, installed plugins (the ``codejury`` entry point group) and
``--plugin`` modules, loaded once into a frozen ``Plugins`` by the composition root
(``codejury.session``).

The lifecycle a review runs on that manager (bootstrap, configure, post_configure) and the
registries it reads are in ``codejury.lifecycle``; their names are re-exported here.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

import pluggy

from codejury import builtins, hookspecs
from codejury.errors import ConfigError
from codejury.lifecycle import (
    assemble,
    await_maybe,
    collect_registry,
    run_bootstrap,
    run_configure,
    run_post_configure,
)


def make_plugin_manager(extra_modules: Iterable[str] = ()) -> pluggy.PluginManager:
    """Built-ins and installed plugins from the ``codejury`` entry point group, plus extra modules."""
    pm = pluggy.PluginManager("codejury")
    pm.add_hookspecs(hookspecs)
    pm.load_setuptools_entrypoints("codejury")
    if pm.get_plugin("builtins") is None:
        pm.register(builtins, name="builtins")
    for name in extra_modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(f"cannot import plugin module '{name}': {exc}") from exc
        if pm.get_plugin(name) is None:
            pm.register(module, name=name)
    return pm


@dataclass(frozen=True)
class Plugins:
    """The plugins of a process or a review, loaded once: the manager and the registries read from it.

    Each registry is collected the first time it is read, then kept (a local review never imports
    the forges' clients)."""

    manager: pluggy.PluginManager

    def _registry(self, hook: str) -> Mapping[str, Any]:
        return MappingProxyType(collect_registry(self.manager, hook))

    @cached_property
    def sources(self) -> Mapping[str, Any]:
        """Change sources by name (``codejury_register_sources``)."""
        return self._registry("codejury_register_sources")

    @cached_property
    def renderers(self) -> Mapping[str, Any]:
        """Output formats by name (``codejury_register_renderers``)."""
        return self._registry("codejury_register_renderers")

    @cached_property
    def forges(self) -> Mapping[str, Any]:
        """Forge kinds by name (``codejury_register_forges``)."""
        return self._registry("codejury_register_forges")

    @cached_property
    def recorders(self) -> Mapping[str, Any]:
        """Recorder factories by name (``codejury_register_recorders``)."""
        return self._registry("codejury_register_recorders")

    @cached_property
    def analyzers(self) -> Mapping[str, Any]:
        """Analyzers by name (``codejury_register_analyzers``)."""
        return self._registry("codejury_register_analyzers")

    @cached_property
    def model_kinds(self) -> Mapping[str, Any]:
        """Model kinds by name (``codejury_register_model_kinds``)."""
        return self._registry("codejury_register_model_kinds")

    @cached_property
    def embeddings(self) -> Mapping[str, Any]:
        """Embeddings providers by name (``codejury_register_embeddings``)."""
        return self._registry("codejury_register_embeddings")


def load_plugins(extra_modules: Iterable[str] = ()) -> Plugins:
    """The built-ins, the installed plugins and ``extra_modules`` (``--plugin``), loaded once."""
    return Plugins(make_plugin_manager(extra_modules))


__all__ = [
    "Plugins",
    "assemble",
    "await_maybe",
    "collect_registry",
    "load_plugins",
    "make_plugin_manager",
    "run_bootstrap",
    "run_configure",
    "run_post_configure",
]
