"""docs/architecture.md stays true: its layers are the contract's, its paths exist, and the composition root is
the one caller of the pipeline and the one closer of the model cache."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.import_contracts import contract_layers

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
SRC = ROOT / "src" / "codejury"


def _drawn_layers() -> list[list[str]]:
    """The picture under "## The layers": each line's packages, before the two spaces that start its note."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## The layers") :]
    picture = section.split("```")[1]
    lines = [re.split(r"\s{2,}", line.strip())[0] for line in picture.strip().splitlines()]
    return [[name.strip() for name in re.split(r"[|:]", line)] for line in lines]


def test_the_layers_drawn_are_the_layers_of_the_contract() -> None:
    contract = [[name.removeprefix("codejury.") for name in layer] for layer in contract_layers(ROOT / ".importlinter")]
    assert _drawn_layers() == contract


def test_every_source_path_the_architecture_names_exists() -> None:
    named = set(re.findall(r"`(src/codejury/[\w/.]*)`", DOC.read_text(encoding="utf-8")))
    assert len(named) > 30  # the stage table and the callers were read
    assert sorted(p for p in named if not (ROOT / p).exists()) == []


def _calls(names: set[str]) -> dict[str, list[str]]:
    """Module path → the calls in it of a function named in ``names`` (``pipeline.review(...)``, ``review(...)``)."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
            if name in names and (owner == "pipeline" or name == "close_cached_models"):
                found.setdefault(str(path.relative_to(SRC)), []).append(name)
    return found


def test_only_the_session_calls_the_pipeline_and_closes_the_model_cache() -> None:
    calls = _calls({"review", "start", "configure", "review_models", "close_cached_models"})
    assert set(calls) == {"session.py"}
    assert set(calls["session.py"]) == {"review", "configure", "review_models", "close_cached_models"}
