"""An import-linter contract type: no import cycle between modules, imports inside functions included.

``lint-imports`` (``make lint``) loads it from ``.importlinter``. The graph is grimp's (every
``import`` statement, at module level or inside a function; ``if TYPE_CHECKING:`` imports left
out by the configuration), plus the packages Python runs first: importing ``a.b.c`` runs
``a/__init__`` and ``a/b/__init__`` unless the importer is inside them. A cycle is reported by
its modules in order; ``ignore_imports`` removes named imports, each with its reason beside it.
"""

from __future__ import annotations

import configparser
from collections.abc import Iterator
from pathlib import Path

import grimp
from importlinter import Contract, ContractCheck, fields, output
from importlinter.application import contract_utils
from importlinter.application.contract_utils import AlertLevel


def contract_layers(config: Path) -> list[list[str]]:
    """The layers contract of ``config`` (``.importlinter``), top to bottom: each layer's module names, an
    optional one without its parentheses."""
    parser = configparser.ConfigParser()
    parser.read(config, encoding="utf-8")
    lines = parser["importlinter:contract:layers"]["layers"].strip().splitlines()
    return [[name.strip().strip("()") for name in line.replace(":", "|").split("|")] for line in lines]


def module_edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    """Module → the modules importing it runs: its direct imports and their enclosing packages."""
    modules = graph.modules
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for importer in modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            targets = {imported}
            parent = imported.rpartition(".")[0]
            while parent:
                if parent in modules and not f"{importer}.".startswith(f"{parent}."):
                    targets.add(parent)
                parent = parent.rpartition(".")[0]
            edges[importer] |= targets - {importer}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (modules in order, the first repeated at the end) per strongly connected group."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative: packages nest deep enough to matter
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return [_path_through(edges, group) for group in groups]


def _path_through(edges: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest cycle through the group's first module (breadth-first inside the group)."""
    start = min(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(edges[node] & group):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    return sorted(group)


class AcyclicModulesContract(Contract):
    """No import cycle between the modules of the root packages."""

    type_name = "acyclic_modules"

    ignore_imports = fields.SetField(subfield=fields.ImportExpressionField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        removal = contract_utils.remove_ignored_imports_and_report(
            graph=graph,
            ignore_imports=self.ignore_imports,  # type: ignore[arg-type]
            unmatched_alerting=AlertLevel.ERROR,
        )
        found = cycles(module_edges(graph))
        return ContractCheck(
            kept=not found,
            warnings=list(removal.warnings),
            ignored_import_count=removal.ignored_import_count,
            metadata={"cycles": found},
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error("import cycle: " + " -> ".join(cycle))
            output.new_line()
