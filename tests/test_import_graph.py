"""The shape of the package: no import cycles, and one exception tree.

The import graph is built from the source with ``ast`` (module-level imports only: imports
inside functions and ``if TYPE_CHECKING:`` blocks do not run when a module is imported), so a
cycle is reported by name even where Python would happen to tolerate it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import codejury
from codejury import errors
from codejury.errors import CodejuryError

SRC = Path(codejury.__file__).parent
SKIP_IMPORT = frozenset({"codejury.__main__"})
"""Modules that do something when imported (run the CLI), so the exception check does not import them."""


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: at module level, in try/if bodies, not TYPE_CHECKING."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                pending.extend(node.body)
            pending.extend(node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend([*node.body, *node.orelse, *node.finalbody])
            for handler in node.handlers:
                pending.extend(handler.body)
    return found


def import_graph(root: Path = SRC) -> dict[str, set[str]]:
    """Module → the codejury modules it imports when it is imported."""
    modules = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _top_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # ``from pkg import mod`` imports the submodule; ``from mod import name`` the module.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add(target)
                    # importing a.b.c imports the packages a and a.b first, unless they enclose this
                    # module (then they are already being imported)
                    parent = target.rpartition(".")[0]
                    while parent:
                        if parent in modules and not f"{name}.".startswith(f"{parent}."):
                            edges.add(parent)
                        parent = parent.rpartition(".")[0]
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_src_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_sees_a_cycle_through_a_package_and_ignores_type_checking(tmp_path: Path) -> None:
    pkg = tmp_path / "codejury"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from codejury.sub.b import thing\n")
    (pkg / "sub" / "b.py").write_text("from codejury import a\nthing = 1\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from codejury import c\n"
        "def f():\n    from codejury import c\n"
        "from codejury.sub import thing\n"
    )
    (pkg / "c.py").write_text("from codejury import a\n")
    graph = import_graph(pkg)
    assert "codejury.c" not in graph["codejury.a"]  # TYPE_CHECKING and function-level imports do not count
    assert find_cycle(graph) == ["codejury.a", "codejury.sub", "codejury.sub.b", "codejury.a"]


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
