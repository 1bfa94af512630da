"""Our rule pack for the classic defects, in many languages, run by ast-grep on the changed files.

The rules are YAML files packaged beside this module (``rules/<language>.yml``, several rules
per file separated by ``---``): SQL and shell commands built from strings, ``eval``, disabled
TLS verification, fast digests for passwords, HTML written from values, secrets written to logs,
a few performance, error-handling and resource rules, and lint-grade suggestions an engineer
leaves in review (``var``, the global ``isNaN``, nested ternaries, TypeScript's ``any`` and double
casts outside tests) (Python, JavaScript/TypeScript, Go, Java, PHP, Rust). A rule
written for ``javascript`` also runs on TypeScript and TSX, one for ``typescript`` also on TSX.
Two hits of one rule on touching lines are one hit (one problem). Severities: ast-grep ``error``
is critical, ``warning`` a warning, ``info``/``hint`` a suggestion. Only hits on added lines are kept.

ast-grep comes from the ``ast-grep-cli`` wheel (its ``ast-grep`` program beside the Python
interpreter, else on PATH).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from codejury.analyzers.base import (
    AnalyzerFailed,
    AnalyzerSkipped,
    added_lines,
    find_program,
    head_files,
    on_changed_lines,
    run_tool,
)
from codejury.analyzers.toolkit import ProgramAnalyzer
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence
from codejury.findings import Severity

SUFFIXES = (".py", ".pyi", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".go", ".java", ".php", ".rs")
"""Files the pack has rules for; other changed files are not handed to ast-grep."""
_ALSO_RUNS_ON = {"javascript": ("typescript", "tsx"), "typescript": ("tsx",)}
_SEVERITY: dict[str, Severity] = {"error": "critical", "warning": "warning", "info": "suggestion", "hint": "suggestion"}


@cache
def load_rules() -> tuple[dict[str, Any], ...]:
    """Every packaged rule, JavaScript rules copied for TypeScript and TSX."""
    rules: list[dict[str, Any]] = []
    folder = resources.files("codejury.analyzers") / "rules"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yml"):
            continue
        for doc in yaml.safe_load_all(entry.read_text(encoding="utf-8")):
            if not doc:
                continue
            rules.append(doc)
            rules.extend({**doc, "language": other} for other in _ALSO_RUNS_ON.get(doc["language"], ()))
    return tuple(rules)


def merge_adjacent(hits: Iterable[Evidence]) -> list[Evidence]:
    """Hits of one rule on touching lines of one file as one hit: two queries on consecutive lines of a loop
    are one N+1 problem, and one finding per problem is what a reviewer wants to read."""
    merged: list[Evidence] = []
    for hit in sorted(hits, key=lambda e: (e.path, e.rule, e.start_line, e.end_line)):
        last = merged[-1] if merged else None
        if last is not None and (last.path, last.rule) == (hit.path, hit.rule) and hit.start_line <= last.end_line + 1:
            merged[-1] = last.model_copy(update={"end_line": max(last.end_line, hit.end_line)})
        else:
            merged.append(hit)
    return merged


class RulePackAnalyzer(ProgramAnalyzer):
    """ast-grep with our packaged rules; ``binary`` overrides the lookup (tests)."""

    name = "rules"

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        if change.root is None:
            if any(f.path.lower().endswith(SUFFIXES) for f in change.files):
                raise AnalyzerSkipped(f"rules skipped: the change has no head-side tree to read ({change.no_tree})")
            return []
        files = head_files(change, SUFFIXES)
        if not files:
            return []
        binary = self.binary or find_program("ast-grep")
        if binary is None or not binary.is_file():
            raise AnalyzerSkipped("rules skipped: ast-grep is not installed (pip install ast-grep-cli)")
        with tempfile.TemporaryDirectory(prefix="codejury-rules-") as tmp:
            rule_file = Path(tmp) / "rules.yml"
            rule_file.write_text("\n---\n".join(json.dumps(rule) for rule in load_rules()), encoding="utf-8")
            argv: list[str | Path] = [
                binary, "scan", "--rule", rule_file, "--json=stream", "--no-ignore", "hidden", "--no-ignore", "vcs",
                "--", *files,
            ]  # fmt: skip
            run = await run_tool(argv, cwd=change.root, name="ast-grep", timeout_s=self.timeout_s)
        if run.returncode not in (0, 1):  # 1: hits of severity error were found
            raise AnalyzerFailed(f"ast-grep exited with {run.returncode}: {run.stderr_line()}")
        root = change.root.resolve()
        evidence: dict[tuple[str, str, int], Evidence] = {}
        for number, line in enumerate(run.stdout.splitlines(), start=1):
            if line.strip():
                item = self._evidence(line, number, root)
                evidence.setdefault((item.rule, item.path, item.start_line), item)  # nested matches: one hit
        return on_changed_lines(merge_adjacent(evidence.values()), added_lines(change))

    def _evidence(self, line: bytes, number: int, root: Path) -> Evidence:
        try:
            hit = json.loads(line)
            path = Path(hit["file"])
            rel = (path if path.is_absolute() else root / path).resolve().relative_to(root).as_posix()
            start = int(hit["range"]["start"]["line"]) + 1
            end = max(start, int(hit["range"]["end"]["line"]) + 1)
            rule, severity, message = str(hit["ruleId"]), str(hit.get("severity", "warning")), str(hit["message"])
        except (ValueError, KeyError, TypeError) as exc:
            raise AnalyzerFailed(f"ast-grep printed an unreadable hit on output line {number}: {exc}") from exc
        return Evidence(
            analyzer=self.name, rule=rule, path=rel, start_line=start, end_line=end,
            severity=_SEVERITY.get(severity, "warning"), message=message.strip() or rule,
        )  # fmt: skip
