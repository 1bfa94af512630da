"""``codejury.testing`` is for tests: codejury never imports it, and importing it stays cheap."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import codejury
import codejury.testing

SRC = Path(codejury.__file__).resolve().parent


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_product_module_imports_the_test_doubles() -> None:
    offenders = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if "testing" not in path.relative_to(SRC).parts[:1]
        and "golden" not in path.parts
        and any(name == "codejury.testing" or name.startswith("codejury.testing.") for name in _imported_modules(path))
    ]
    assert offenders == []


def _modules_loaded_by(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return set(json.loads(run.stdout))


def test_importing_codejury_and_its_cli_does_not_load_the_test_doubles() -> None:
    loaded = _modules_loaded_by("import codejury, codejury.cli")
    assert "codejury.cli" in loaded
    assert not {m for m in loaded if m.startswith("codejury.testing")}


def test_a_fake_forge_loads_without_the_model_layer() -> None:
    loaded = _modules_loaded_by("from codejury_fakes import FakeGitLab, FakeGitHub")
    assert {"codejury_fakes.gitlab.server", "codejury_fakes.github.server"} <= loaded
    assert "pydantic_ai" not in loaded
    assert "codejury.testing.scripted" not in loaded


def test_every_exported_name_resolves_and_others_are_attribute_errors() -> None:
    homes = codejury.testing._MODULE_OF
    assert sorted(homes) == codejury.testing.__all__
    for name, home in homes.items():
        assert getattr(codejury.testing, name) is getattr(importlib.import_module(home), name)
    with pytest.raises(AttributeError, match="no_such_double"):
        _ = codejury.testing.no_such_double  # type: ignore[attr-defined]


def test_codejurys_own_distribution_carries_no_stateful_fake() -> None:
    """The fake forges and provider servers are ``codejury-testing``'s (``packages/codejury-testing``): the packages
    ``pip install codejury`` installs (``src/``) hold none of them."""
    root = SRC.parent.parent
    shipped = {p.parent.relative_to(root / "src").as_posix() for p in (root / "src").rglob("__init__.py")}
    assert "codejury/testing" in shipped
    assert not [p for p in shipped if "fakes" in p or p.startswith("codejury/testing/")]
    assert not [p.name for p in (SRC / "testing").iterdir() if p.name in {"github", "gitlab", "provider_server.py"}]
    fakes = root / "packages" / "codejury-testing" / "src" / "codejury_fakes"
    assert {p.name for p in fakes.iterdir()} >= {"github", "gitlab", "provider_server.py", "routing_server.py"}
