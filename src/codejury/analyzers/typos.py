"""typos on the added lines of every changed text file: misspelled words in identifiers, comments and docs.

typos checks against a list of known misspellings rather than a dictionary of valid words, so an
unusual but correct word, a name or an abbreviation is not flagged (its documentation: "favoring
low false positives"). It reads the repository's own ``_typos.toml`` / ``typos.toml`` /
``.typos.toml`` (or ``[tool.typos]`` in ``pyproject.toml``), where a team lists the words it
accepts. A file name's misspelling has no line and is not reported; only hits on added lines are.
Each hit is a suggestion naming the misspelled word and its correction.

typos comes from its PyPI wheel (the program beside the Python interpreter, else on PATH); where
it is missing, a change gets one line saying so.
"""

from __future__ import annotations

import json
from pathlib import Path

from codejury.analyzers.base import AnalyzerFailed, added_lines, on_changed_lines, run_tool
from codejury.analyzers.toolkit import relative, tool_files, tool_program
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence

_SKIPPED_SUFFIXES = (".lock", ".svg", ".min.js", ".map", ".csv", ".json", ".snap", ".sum")
"""Generated files and data, where a "misspelling" is an id or a hash, not prose."""


def is_prose_or_code(path: str) -> bool:
    return not path.lower().endswith(_SKIPPED_SUFFIXES)


class TyposAnalyzer:
    """typos on the changed text files; ``binary`` overrides the lookup (tests)."""

    name = "typos"

    def __init__(self, binary: Path | None = None, timeout_s: float = 60.0) -> None:
        self.binary = binary
        self.timeout_s = timeout_s

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        files = tool_files(change, self.name, is_prose_or_code)
        if change.root is None or not files:
            return []
        binary = tool_program(self.name, "typos", self.binary)
        argv: list[str | Path] = [binary, "--format", "json", "--color", "never", "--", *files]
        run = await run_tool(argv, cwd=change.root, name=self.name, timeout_s=self.timeout_s)
        if run.returncode not in (0, 2):  # 2: typos were found
            raise AnalyzerFailed(f"typos exited with {run.returncode}: {run.stderr_line()}")
        evidence: dict[tuple[str, int, str], Evidence] = {}
        for raw in run.stdout.splitlines():
            if not raw.strip():
                continue
            try:
                hit = json.loads(raw)
            except ValueError as exc:
                raise AnalyzerFailed(f"typos printed a line that is not JSON: {exc}") from exc
            item = self._evidence(hit, change.root)
            if item is not None:  # a word repeated on a line is one hit
                evidence.setdefault((item.path, item.start_line, item.message), item)
        return on_changed_lines(evidence.values(), added_lines(change))

    def _evidence(self, hit: object, root: Path) -> Evidence | None:
        if not isinstance(hit, dict) or hit.get("type") != "typo" or not isinstance(hit.get("line_num"), int):
            return None  # a misspelled file name, or a note about a file typos did not read
        path = relative(root, str(hit.get("path", "")))
        line = int(hit["line_num"])
        word = str(hit.get("typo", "")).strip()
        if path is None or line < 1 or not word:
            return None
        corrections = [str(c) for c in hit.get("corrections") or [] if str(c)]
        fix = f"`{corrections[0]}`" if len(corrections) == 1 else " or ".join(f"`{c}`" for c in corrections)
        message = f"`{word}` is a misspelling of {fix}" if corrections else f"`{word}` is a misspelling"
        return Evidence(
            analyzer=self.name, rule="typo", path=path, start_line=line, end_line=line,
            severity="suggestion", message=message,
        )  # fmt: skip
