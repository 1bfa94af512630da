"""mypy on the changed Python files, read with the repository's head tree: type errors on added lines.

One run per review over the changed ``.py``/``.pyi`` files, from the head tree's root, so the
modules they import from the repository are read too (``--follow-imports=silent``: their own errors
are not reported). Module names follow the paths from the root (``--explicit-package-bases``, so
``shop/pricing.py`` is ``shop.pricing`` with or without an ``__init__.py``), and from ``src/`` too
when the tree has that layout. Nothing is written into the tree (no incremental cache), and the repository's
mypy configuration is not read: a config can load plugins, which are code from the change, and
would decide which errors show. Installed third-party packages are not read either
(``--no-site-packages --ignore-missing-imports``: what they export is ``Any``), so the versions
in codejury's own environment cannot raise errors about the repository's code; only the standard
library's stubs and the repository's own code are typed. As in mypy's default mode, the bodies of
functions without annotations are not checked.

Of the error codes mypy's documentation lists as enabled by default, only those that name code
that fails when it runs are kept (``ERROR_CODES``): an undefined name (``name-defined``), a
missing attribute (``attr-defined``, ``union-attr``: one of its types, ``None`` included, lacks
it), a call with the wrong arguments (``call-arg``, ``arg-type``, ``call-overload``), a returned
value of the wrong type (``return-value``), the value of a function that returns nothing
(``func-returns-value``), a coroutine never awaited (``unused-coroutine``), a function tested for
truth instead of called (``truthy-function``), a bad format string (``str-format``), an abstract
class instantiated (``abstract``), a missing or unknown ``TypedDict`` key (an undefined name is
not reported in a file with a ``from X import *``, whose names mypy may not know). The codes about
annotations themselves (``assignment``, ``override``, ``var-annotated``, ``misc``, ``import``…)
are left out. Only hits on added lines are kept, each a warning.

A file that does not parse stops mypy (a blocking error): the run is then one line saying so,
never fatal. mypy is not a dependency of codejury but its optional extra (``typecheck``): it comes
from its PyPI wheel (the program beside the Python interpreter, else on PATH); where it is missing,
a change with Python gets one line saying so, as for any analyzer whose tool is not installed.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from codejury.analyzers.base import AnalyzerFailed, added_lines, on_changed_lines, read_head_text, run_tool
from codejury.analyzers.toolkit import ProgramAnalyzer, relative
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence

SUFFIXES = (".py", ".pyi")
ERROR_CODES = frozenset({
    "name-defined", "attr-defined", "union-attr", "call-arg", "arg-type", "call-overload", "return-value",
    "func-returns-value", "unused-coroutine", "truthy-function", "str-format", "abstract", "typeddict-item",
    "typeddict-unknown-key",
})  # fmt: skip
"""mypy's default error codes that name code failing at run time (see the module docstring)."""
_STAR_IMPORT = re.compile(r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+\*", re.MULTILINE)


def config_text(root: Path) -> str:
    """Our own configuration (the repository's is not read): ``src/`` on the module path for a src layout."""
    src = root / "src"
    layout = src.is_dir() and not src.is_symlink() and not (src / "__init__.py").exists()
    return "[mypy]\nmypy_path = src\n" if layout else "[mypy]\n"


def is_python(path: str) -> bool:
    return path.lower().endswith(SUFFIXES)


class MypyAnalyzer(ProgramAnalyzer):
    """mypy's run-time type errors on the changed Python files; ``binary`` overrides the lookup (tests)."""

    name = "mypy"

    package = "mypy"
    wants = staticmethod(is_python)

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        program = self.program_for(change)
        if program is None:
            return []
        binary, root, files = program
        with tempfile.TemporaryDirectory(prefix="codejury-mypy-") as tmp:
            config = Path(tmp) / "mypy.ini"
            config.write_text(config_text(root), encoding="utf-8")
            argv: list[str | Path] = [
                binary, "--config-file", config, "--no-incremental", "--cache-dir", os.devnull,
                "--follow-imports=silent", "--explicit-package-bases", "--no-site-packages", "--ignore-missing-imports",
                "--output", "json", "--no-error-summary", "--hide-error-context", "--no-pretty",
                "--", *files,
            ]  # fmt: skip
            run = await run_tool(  # mypy is a Python program: it may need the interpreter's own path settings
                argv, cwd=root, name=self.name, timeout_s=self.timeout_s, inherit=("PYTHONPATH", "PYTHONHOME")
            )
        rows = [self._row(line) for line in run.stdout.decode("utf-8", "replace").splitlines() if line.strip()]
        if run.returncode == 2:  # a blocking error (a file that does not parse) or a crash: nothing else was checked
            first = next((r for r in rows if r.get("severity") == "error"), None)
            where = f"{first.get('file')}:{first.get('line')}: {first.get('message')}" if first else run.stderr_line()
            raise AnalyzerFailed(f"mypy stopped before checking the change: {where}")
        if run.returncode not in (0, 1):  # 1: errors were found
            raise AnalyzerFailed(f"mypy exited with {run.returncode}: {run.stderr_line()}")
        evidence: dict[tuple[str, int, str], Evidence] = {}
        for row in rows:
            item = self._evidence(row, root)
            if item is not None:
                evidence.setdefault((item.path, item.start_line, item.message), item)
        kept = on_changed_lines(evidence.values(), added_lines(change))
        return [e for e in kept if e.rule != "name-defined" or not _star_import(root, e.path)]

    def _row(self, line: str) -> dict[str, object]:
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise AnalyzerFailed(f"mypy printed a line that is not JSON: {exc}") from exc
        if not isinstance(row, dict):
            raise AnalyzerFailed("mypy printed JSON that is not an error object")
        return row

    def _evidence(self, row: dict[str, object], root: Path) -> Evidence | None:
        code, line = row.get("code"), row.get("line")
        if row.get("severity") != "error" or code not in ERROR_CODES or not isinstance(line, int) or line < 1:
            return None  # a note, or an error about annotations rather than about what runs
        path = relative(root, str(row.get("file", "")))
        if path is None:
            return None
        message = " ".join(str(row.get("message") or "").split())
        return Evidence(
            analyzer=self.name, rule=str(code), path=path, start_line=line, end_line=line,
            severity="warning", message=message or str(code),
        )  # fmt: skip


def _star_import(root: Path, path: str) -> bool:
    """Whether ``path`` has ``from X import *``: the names it brings from a package mypy does not read are unknown
    to mypy, so its "not defined" there is no evidence."""
    text = read_head_text(root, path)
    return text is None or _STAR_IMPORT.search(text) is not None
