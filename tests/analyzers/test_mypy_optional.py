"""mypy is an optional extra (``typecheck``): without it, the mypy analyzer enabled by configuration is skipped
with the one line every analyzer whose tool is not installed gives, and the review goes on."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from codejury.analyzers import builtin_analyzers, toolkit
from codejury.findings import Review
from codejury.testing.scripted import Final, Raw
from tests.engine_helpers import make_change, run_review, scripted_settings

ROOT = Path(__file__).resolve().parents[2]
SKIP_LINE = "mypy skipped: mypy is not installed (pip install mypy)"


def _name(requirement: str) -> str:
    """The distribution a requirement names (``mypy>=1.11; ...`` is ``mypy``)."""
    return re.split(r"[\s;<>=!~\[]", requirement, maxsplit=1)[0]


def test_mypy_is_an_optional_extra_and_a_dev_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "mypy" not in {_name(d) for d in project["dependencies"]}
    extras = project["optional-dependencies"]
    assert "mypy" in {_name(d) for d in extras["typecheck"]}
    assert "mypy" in {_name(d) for d in extras["dev"]}, "make lint runs mypy"


def _without_mypy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The program lookup the analyzers use finds no mypy, beside the interpreter or on PATH."""
    real = toolkit.find_program
    monkeypatch.setattr(toolkit, "find_program", lambda name: None if name == "mypy" else real(name))


async def test_without_mypy_an_enabled_mypy_analyzer_is_one_skip_line_and_the_review_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_mypy(monkeypatch)
    base = "def total(n: int) -> int:\n    return n\n"
    change = make_change(tmp_path, {"billing.py": (base, base + "\n\ndef report() -> int:\n    return totl(3)\n")})
    others = tuple(name for name in builtin_analyzers() if name != "mypy")
    settings = scripted_settings(analyzers=True, enable_analyzers=("mypy",), disable_analyzers=others)
    scripts = {"generalist": [Final([])], "coordinator": [Raw({"decisions": []})]}
    for name in ("security", "performance", "code_quality", "documentation"):
        scripts[name] = [Final([])]
    result, _, events = await run_review(change, scripts, settings=settings)
    assert isinstance(result, Review)
    assert SKIP_LINE in result.notes
    [evidence] = [e for e in events.events if e["type"] == "evidence"]
    assert (evidence["skipped"], evidence["failed"], evidence["hits"]) == ([SKIP_LINE], [], 0)
