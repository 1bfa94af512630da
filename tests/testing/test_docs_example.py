"""docs/testing.md's examples run as written: the end-to-end one as a test, the scripted one as code."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

from codejury.testing import ScriptedModel, ScriptedResolver

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def _python_blocks() -> list[str]:
    """Each python block, after as many blank lines as precede it, so a traceback names the doc's lines."""
    text = DOC.read_text(encoding="utf-8")
    return [
        "\n" * text.count("\n", 0, match.start(1)) + match[1]
        for match in re.finditer(r"```python\n(.*?)```", text, flags=re.DOTALL)
    ]


def test_the_end_to_end_example_passes(tmp_path: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "docs_testing_example"}
    exec(compile(_python_blocks()[0], str(DOC), "exec"), namespace)
    tests = [value for name, value in namespace.items() if name.startswith("test_") and inspect.isfunction(value)]
    assert len(tests) == 1, "the example is one test"
    tests[0](tmp_path)


def test_the_scripted_model_example_builds_the_scripts_it_describes() -> None:
    namespace: dict[str, Any] = {"__name__": "docs_testing_scripted"}
    exec(compile(_python_blocks()[1], str(DOC), "exec"), namespace)
    resolver = namespace["resolver"]
    assert isinstance(resolver, ScriptedResolver)
    assert set(resolver.models) == {"security", "coordinator"}
    resolved = resolver("scripted:security", None)
    assert resolved.profile.supports_tools
    assert isinstance(resolver.models["security"], ScriptedModel)
    assert len(resolver.models["security"].steps) == 2
