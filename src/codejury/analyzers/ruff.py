"""ruff on the head side of the changed Python files: security, bugbear and a few precise error rules.

The repository's own ruff configuration is ignored (``--isolated``): a team that turned ``S`` off
for its own lint still gets the security hits here, and a configuration in the change cannot
switch them off. Only hits on added lines are kept. Audit-only rules that fire on ordinary code
(``assert``, ``random``, importing ``subprocess``, any ``urlopen``) are left out: every hit is a
candidate a reviewer must read, so a noisy rule costs more than it finds.
"""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path
from typing import Any

from codejury.analyzers.base import AnalyzerFailed, AnalyzerSkipped, added_lines, head_files, on_changed_lines, run_tool
from codejury.analyzers.toolkit import ProgramAnalyzer
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence
from codejury.findings import Severity

SELECT = ("S", "B", "F401", "F821", "F822", "F823", "F632", "F50", "PLE", "ASYNC", "RUF006")
"""Security (bandit), bugbear, unused imports, undefined names, broken format strings, pylint errors, async misuse."""
PER_FILE_IGNORES = "__init__.py:F401"
"""A package's ``__init__.py`` imports to re-export."""
IGNORE = (
    "S101",  # assert: everywhere in tests
    "S110", "S112",  # try/except/pass|continue: style
    "S311",  # random: mostly not for secrets
    "S310",  # any urlopen
    "S4",  # importing pickle, subprocess, xml...: an import is not a use
    "S603", "S607",  # subprocess without a shell, partial executable path: audits
    "B007", "B008", "B009", "B010", "B024", "B027", "B028", "B904", "B905",  # style, framework idioms
)  # fmt: skip
CRITICAL_RULES = frozenset({"S602", "S605", "S608", "S307", "S102", "S506", "S501", "S323"})
"""Injection and disabled-TLS rules: exploitable when the input reaches them."""
SUGGESTION_RULES = frozenset({"S104", "S108", "S113"})
"""Security rules whose hit is often deliberate (bind all interfaces, /tmp, no timeout)."""
WARNING_RULES = ("S", "B006", "B012", "B015", "B017", "B018", "B023", "F8", "F632", "PLE", "ASYNC", "RUF006")
"""Mutable defaults, swallowed returns, late-binding closures, undefined names, blocking async calls."""
PYTHON_SUFFIXES = (".py", ".pyi")


def _severity(code: str) -> Severity:
    if code in CRITICAL_RULES:
        return "critical"
    if code not in SUGGESTION_RULES and code.startswith(WARNING_RULES):
        return "warning"
    return "suggestion"


def find_ruff() -> Path | None:
    """The ruff binary shipped with the ``ruff`` package, else the one on PATH."""
    try:
        package = importlib.import_module("ruff")  # the package's own locator (it ships no type hints)
        return Path(package.find_ruff_bin())
    except (ImportError, AttributeError, FileNotFoundError):
        pass
    found = shutil.which("ruff")
    return Path(found) if found else None


class RuffAnalyzer(ProgramAnalyzer):
    """ruff's precise rules on the changed Python files; ``binary`` overrides the lookup (tests)."""

    name = "ruff"

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        if change.root is None:
            if any(f.path.endswith(PYTHON_SUFFIXES) for f in change.files):
                raise AnalyzerSkipped(f"ruff skipped: the change has no head-side tree to read ({change.no_tree})")
            return []
        files = head_files(change, PYTHON_SUFFIXES)
        if not files:
            return []
        binary = self.binary or find_ruff()
        if binary is None or not binary.is_file():
            raise AnalyzerSkipped("ruff skipped: not installed (pip install ruff)")
        argv: list[str | Path] = [
            binary, "check", "--isolated", "--no-cache", "--exit-zero", "--output-format", "json",
            "--select", ",".join(SELECT), "--ignore", ",".join(IGNORE), "--per-file-ignores", PER_FILE_IGNORES,
            "--", *files,
        ]  # fmt: skip
        run = await run_tool(argv, cwd=change.root, name="ruff", timeout_s=self.timeout_s)
        if run.returncode != 0:
            raise AnalyzerFailed(f"ruff exited with {run.returncode}: {run.stderr_line()}")
        try:
            hits = json.loads(run.stdout or b"[]")
        except ValueError as exc:
            raise AnalyzerFailed(f"ruff printed output that is not JSON: {exc}") from exc
        if not isinstance(hits, list):
            raise AnalyzerFailed("ruff printed JSON that is not a list of hits")
        root = change.root.resolve()
        evidence = [e for e in (self._evidence(hit, root) for hit in hits) if e is not None]
        return on_changed_lines(evidence, added_lines(change))

    def _evidence(self, hit: Any, root: Path) -> Evidence | None:
        if not isinstance(hit, dict) or not isinstance(hit.get("code"), str):
            return None  # a syntax error has no code: not a finding about the change's logic
        try:
            path = Path(hit["filename"])
            rel = (path if path.is_absolute() else root / path).resolve().relative_to(root).as_posix()
            start = int(hit["location"]["row"])
            end = max(start, int((hit.get("end_location") or {}).get("row", start)))
        except (KeyError, TypeError, ValueError) as exc:
            raise AnalyzerFailed(f"ruff printed a hit without a file or line: {exc}") from exc
        return Evidence(
            analyzer=self.name, rule=hit["code"], path=rel, start_line=start, end_line=end,
            severity=_severity(hit["code"]), message=str(hit.get("message", "")).strip() or hit["code"],
        )  # fmt: skip
