"""The shape of the package: no import cycles, the layers, and one exception tree.

The import rules are import-linter contracts (``.importlinter``, run by ``make lint``): no cycle
between modules, counting imports inside functions (``tests.import_contracts``), and the layers
of docs/architecture.md. These tests run the same checks, and check the cycle finder itself.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

import codejury
from codejury import errors
from codejury.errors import CodejuryError
from tests.import_contracts import contract_layers, cycles, module_edges

ROOT = Path(__file__).resolve().parents[1]
SKIP_IMPORT = frozenset({"codejury.__main__"})
"""Modules that do something when imported (run the CLI), so the exception check does not import them."""


def test_src_has_no_import_cycle_counting_imports_inside_functions() -> None:
    graph = grimp.build_graph("codejury", exclude_type_checking_imports=True, cache_dir=None)
    assert cycles(module_edges(graph)) == []


def test_the_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 kept, 0 broken" in done.stdout


def test_every_top_level_module_is_in_a_layer_of_the_contract() -> None:
    """A module outside every layer may import anything: each one is placed, so the contract says where it sits."""
    named = {name for layer in contract_layers(ROOT / ".importlinter") for name in layer}
    modules = {f"codejury.{info.name}" for info in pkgutil.iter_modules(codejury.__path__) if info.name != "__main__"}
    assert sorted(modules - named) == []


def test_the_cycle_finder_counts_imports_inside_functions_and_packages_but_not_type_checking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "cyclepkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from cyclepkg.sub.b import thing\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from cyclepkg import a\nthing = 1\n")
    (pkg / "sub" / "c.py").write_text("")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclepkg import d\nimport cyclepkg.sub.c\n"
    )
    (pkg / "d.py").write_text("from cyclepkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyclepkg", exclude_type_checking_imports=True, cache_dir=None)
    edges = module_edges(graph)
    assert "cyclepkg.d" not in edges["cyclepkg.a"]  # TYPE_CHECKING imports never run
    assert "cyclepkg.sub" in edges["cyclepkg.a"]  # importing cyclepkg.sub.c runs cyclepkg/sub/__init__ first
    assert cycles(edges) == [["cyclepkg.a", "cyclepkg.sub", "cyclepkg.sub.b", "cyclepkg.a"]]


def _exception_classes() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for info in pkgutil.walk_packages(codejury.__path__, "codejury."):
        if info.name in SKIP_IMPORT:
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                found.append(obj)
    return found


def test_every_exception_class_in_src_derives_from_the_one_root_and_is_drawn_in_its_tree() -> None:
    classes = _exception_classes()
    assert len(classes) > 15  # the walk found the forge, resilience and analyzer modules too
    outside = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, CodejuryError))
    assert outside == []
    tree = errors.__doc__ or ""
    undrawn = sorted(c.__qualname__ for c in classes if not c.__name__.startswith("_") and c.__name__ not in tree)
    assert undrawn == []


@pytest.mark.parametrize(("name", "parent"), [("UnsafeBody", "InternalError"), ("RoutingError", "ConfigError")])
def test_the_drawn_tree_matches_the_classes(name: str, parent: str) -> None:
    by_name = {c.__name__: c for c in _exception_classes()}
    assert by_name[parent] in by_name[name].__mro__[1:]
    line = next(line for line in (errors.__doc__ or "").splitlines() if f" {name} " in line)
    parent_line = next(line for line in (errors.__doc__ or "").splitlines() if f" {parent} " in line)
    assert line.index(name) > parent_line.index(parent)  # drawn one level deeper
