"""The repository's shape: what keeps the suite and the benchmarks easy to change."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_benchmarks_import_nothing_from_the_test_suite() -> None:
    """A benchmark runs from a clone without the tests' package on its path: shared helpers live in
    ``codejury.testing`` (or beside the benchmarks)."""
    offenders = {
        path.name: sorted(m for m in _imported_modules(path) if m == "tests" or m.startswith("tests."))
        for path in sorted((ROOT / "benchmarks").glob("*.py"))
    }
    assert {name: mods for name, mods in offenders.items() if mods} == {}


MAX_TEST_FILE_LINES = 700


def test_no_test_file_is_over_700_lines() -> None:
    """A test file past 700 lines holds several subjects: split it by subject (shared helpers in a module beside)."""
    long_files = {
        str(path.relative_to(ROOT)): n
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_TEST_FILE_LINES
    }
    assert long_files == {}
