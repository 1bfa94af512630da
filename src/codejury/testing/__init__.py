"""Test doubles for codejury and its plugins: a scripted model and changes built in a few lines.

They are part of the product (as pydantic-ai ships ``TestModel``), for codejury's own suite, its
benchmarks, and users' tests of their plugins and configuration; see ``docs/testing.md``.

- ``scripted``: ``ScriptedResolver`` plays scripted steps (``ToolCall``, ``Final``, ``Raw``,
  ``Fail``, ``Sleep``) as the model behind ``scripted:NAME`` model strings, in process;
- ``changes``: a change (``ChangeSet``) from ``{path: (old, new)}``, and unified diffs;
- ``review_seed``, ``dashboard_seed``: reviews written to a store, for the stats and the dashboard;
- ``postgres``: a real PostgreSQL server of its own in a temporary directory (not a fake), and
  ``scripted_worker``: a ``codejury worker`` process on the scripted model, for the distributed
  service's tests and benchmark (neither is among the names below).

The stateful fakes (``FakeGitHub``, ``FakeGitLab``, ``FakeProviderServer``, the routing document and
git servers) are another distribution, ``codejury-testing`` (``packages/codejury-testing``, package
``codejury_fakes``), installed by the development setup and never by ``pip install codejury``.

Nothing in codejury itself imports this package, and ``import codejury`` does not load it. The
names below are loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codejury.testing.scripted import (
        Fail,
        Final,
        Raw,
        ScriptedModel,
        ScriptedResolver,
        Sleep,
        Step,
        ToolCall,
        finding,
    )

__all__ = [
    "Fail",
    "Final",
    "Raw",
    "ScriptedModel",
    "ScriptedResolver",
    "Sleep",
    "Step",
    "ToolCall",
    "finding",
]
_MODULE_OF = {name: f"{__name__}.scripted" for name in __all__}  # every name above lives in ``scripted``


def lazy_exports(package: str, module_of: dict[str, str], names: list[str]) -> tuple[Any, Any]:
    """A package's ``__getattr__`` and ``__dir__`` that import the module defining a name on its first use
    (``module_of``: name -> module), so importing the package stays cheap (``codejury_fakes`` uses it too)."""

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted({*vars(importlib.import_module(package)), *names})

    return __getattr__, __dir__


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, __all__)
