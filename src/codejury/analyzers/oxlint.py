"""oxlint on the changed JavaScript and TypeScript files: its ``correctness`` category only.

oxlint's documentation describes ``correctness`` as "code that is outright wrong or useless" and
enables only it by default; its other categories (``suspicious``, ``pedantic``, ``style``,
``restriction``, ``perf``, ``nursery``) are left out. The rules come from its default plugins
(ESLint's core rules, TypeScript, unicorn and oxc's own), e.g. comparing with ``NaN``, an invalid
``typeof`` string, unreachable code, a duplicate key or case, a constant condition, a variable
declared and never used (a suggestion; the others are warnings). The repository's own
``.oxlintrc.json`` is not read (an empty config of ours is passed, nested ones are disabled), so a
config in the change cannot switch the rules off. Only hits on added lines are kept.

oxlint comes from its PyPI wheel (the program beside the Python interpreter, else on PATH); where
it is missing, a change with JavaScript or TypeScript gets one line saying so.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from codejury.analyzers.base import AnalyzerFailed, added_lines, on_changed_lines, run_tool
from codejury.analyzers.toolkit import ProgramAnalyzer, relative, tool_json
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence

SUFFIXES = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".vue", ".svelte", ".astro")
SUGGESTION_RULES = frozenset({"no-unused-vars"})
"""Dead code rather than wrong code: a suggestion."""


def is_script(path: str) -> bool:
    return path.lower().endswith(SUFFIXES) and not path.lower().endswith((".min.js", ".d.ts"))


def rule_name(code: str) -> str:
    """``eslint(no-unused-vars)`` → ``no-unused-vars`` (the plugin named apart: ``typescript/…``)."""
    plugin, _, rest = code.partition("(")
    rule = rest.rstrip(")") or plugin
    return rule if plugin in ("eslint", "") or not rest else f"{plugin}/{rule}"


class OxlintAnalyzer(ProgramAnalyzer):
    """oxlint's correctness rules on the changed scripts; ``binary`` overrides the lookup (tests)."""

    name = "oxlint"

    package = "oxlint"
    wants = staticmethod(is_script)

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        program = self.program_for(change)
        if program is None:
            return []
        binary, root, files = program
        with tempfile.TemporaryDirectory(prefix="codejury-oxlint-") as tmp:
            config = Path(tmp) / "oxlintrc.json"
            config.write_text("{}\n", encoding="utf-8")
            argv: list[str | Path] = [
                binary, "--config", config, "--disable-nested-config", "-A", "all", "-D", "correctness",
                "--format", "json", "--", *files,
            ]  # fmt: skip
            run = await run_tool(argv, cwd=root, name=self.name, timeout_s=self.timeout_s)
        if run.returncode not in (0, 1):  # 1: a rule was broken
            raise AnalyzerFailed(f"oxlint exited with {run.returncode}: {run.stderr_line()}")
        report = tool_json(self.name, run.stdout, {"diagnostics": []})
        diagnostics = report.get("diagnostics") if isinstance(report, dict) else None
        if not isinstance(diagnostics, list):
            raise AnalyzerFailed("oxlint printed JSON without its list of diagnostics")
        root = root
        evidence = [e for e in (self._evidence(d, root) for d in diagnostics) if e is not None]
        return on_changed_lines(evidence, added_lines(change))

    def _evidence(self, hit: Any, root: Path) -> Evidence | None:
        try:
            code = str(hit.get("code") or "")
            labels = hit.get("labels") or []
            if not code or not labels:
                return None  # a parse error names no rule: not a finding about the change's logic
            line = int(labels[0]["span"]["line"])
            path = relative(root, str(hit["filename"]))
            message = " ".join(str(hit.get("message", "")).split())
            help_text = " ".join(str(hit.get("help") or "").split())
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise AnalyzerFailed(f"oxlint printed a diagnostic without a file or line: {exc!r}") from exc
        if path is None or line < 1:
            return None
        rule = rule_name(code)
        return Evidence(
            analyzer=self.name, rule=rule, path=path, start_line=line, end_line=line,
            severity="suggestion" if rule in SUGGESTION_RULES else "warning",
            message=f"{message} {help_text}".strip() or rule,
        )  # fmt: skip
