"""typos on the added lines of every changed text file: misspelled words in identifiers, comments and docs.

typos checks against a list of known misspellings rather than a dictionary of valid words, so an
unusual but correct word, a name or an abbreviation is not flagged (its documentation: "favoring
low false positives"). It reads the repository's own ``_typos.toml`` / ``typos.toml`` /
``.typos.toml`` (or ``[tool.typos]`` in ``pyproject.toml``), where a team lists the words it
accepts. A file name's misspelling has no line and is not reported; only hits on added lines are.
Each hit is a suggestion naming the misspelled word and its correction.

A word the repository itself already uses is one of its terms, not a misspelling (``linera`` in the
linera repository, a ``signins`` table): a hit is dropped when its word, as a whole word or a part
of an identifier (``linera_base``, ``LineraClient``), occurs at least ``PROJECT_TERM_USES`` times in
the head tree outside the change's added lines (``project_terms``). The tree is read from git's
object store when the review has it there (``change.head``), else from ``change.root``; the changed
files first, at most ``TERM_SCAN_FILES`` files and ``TERM_SCAN_BYTES`` bytes, and no further once
every word is settled.

typos comes from its PyPI wheel (the program beside the Python interpreter, else on PATH); where
it is missing, a change gets one line saying so.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

from codejury.analyzers.base import (
    MAX_ANALYZED_FILE_BYTES,
    AnalyzerFailed,
    added_lines,
    read_head_text,
    run_tool,
)
from codejury.analyzers.toolkit import ProgramAnalyzer, relative
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence

_SKIPPED_SUFFIXES = (".lock", ".svg", ".min.js", ".map", ".csv", ".json", ".snap", ".sum")
"""Generated files and data, where a "misspelling" is an id or a hash, not prose."""
PROJECT_TERM_USES = 2
"""Uses outside the change's added lines that make a flagged word one of the repository's own terms."""
TERM_SCAN_FILES = 20_000
"""Files of the head tree read at most to count a flagged word's uses."""
TERM_SCAN_BYTES = 64 * 1024 * 1024
"""Bytes of the head tree read at most to count a flagged word's uses."""
_NOT_THE_PROJECTS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", "dist", "build", "target"}
)
"""Directories of installed dependencies and build output: their words are not the project's."""
_WORD_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")
"""The words of a line, identifiers split at underscores, digits and case changes, as typos splits them."""


def is_prose_or_code(path: str) -> bool:
    return not path.lower().endswith(_SKIPPED_SUFFIXES)


class TyposAnalyzer(ProgramAnalyzer):
    """typos on the changed text files; ``binary`` overrides the lookup (tests)."""

    name = "typos"

    package = "typos"
    wants = staticmethod(is_prose_or_code)

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        program = self.program_for(change)
        if program is None:
            return []
        binary, root, files = program
        argv: list[str | Path] = [binary, "--format", "json", "--color", "never", "--", *files]
        run = await run_tool(argv, cwd=root, name=self.name, timeout_s=self.timeout_s)
        if run.returncode not in (0, 2):  # 2: typos were found
            raise AnalyzerFailed(f"typos exited with {run.returncode}: {run.stderr_line()}")
        evidence: dict[tuple[str, int, str], tuple[str, Evidence]] = {}
        for raw in run.stdout.splitlines():
            if not raw.strip():
                continue
            try:
                hit = json.loads(raw)
            except ValueError as exc:
                raise AnalyzerFailed(f"typos printed a line that is not JSON: {exc}") from exc
            found = self._evidence(hit, root)
            if found is not None:  # a word repeated on a line is one hit
                evidence.setdefault((found[1].path, found[1].start_line, found[1].message), found)
        added = added_lines(change)
        kept = [(word.lower(), item) for word, item in evidence.values() if item.start_line in added.get(item.path, ())]
        if not kept:
            return []
        terms = await asyncio.to_thread(project_terms, change, {word for word, _ in kept}, added)
        return [item for word, item in kept if word not in terms]

    def _evidence(self, hit: object, root: Path) -> tuple[str, Evidence] | None:
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
        return word, Evidence(
            analyzer=self.name, rule="typo", path=path, start_line=line, end_line=line,
            severity="suggestion", message=message,
        )  # fmt: skip


def project_terms(change: ChangeSet, words: set[str], added: Mapping[str, frozenset[int]]) -> set[str]:
    """Those of ``words`` (lower case) the head tree uses ``PROJECT_TERM_USES`` times outside the added lines."""
    uses: Counter[str] = Counter()
    wanted = set(words)
    for path, text in _head_texts(change):
        lower = text.lower()
        present = {w for w in wanted if w in lower}
        if not present:
            continue
        skip = added.get(path, frozenset())
        for number, line in enumerate(text.splitlines(), start=1):
            if number in skip or not any(w in line.lower() for w in present):
                continue
            for part in _WORD_PARTS.findall(line):
                if part.lower() in present:
                    uses[part.lower()] += 1
        wanted = {w for w in wanted if uses[w] < PROJECT_TERM_USES}
        if not wanted:
            break
    return {w for w in words if uses[w] >= PROJECT_TERM_USES}


def _head_texts(change: ChangeSet) -> Iterator[tuple[str, str]]:
    """The head tree's files (path, text), the changed ones first, within the scan's limits."""
    changed = [f.path for f in change.files if f.status != "deleted"]
    first = set(changed)
    read = [0]  # bytes read so far
    if change.head is not None:
        tree = change.head
        listed = [f for f in tree.files_under("") if not f.is_link and not _NOT_THE_PROJECTS & set(f.path.split("/"))]
        ordered = sorted(listed, key=lambda f: f.path not in first)[:TERM_SCAN_FILES]

        def over() -> bool:
            return read[0] >= TERM_SCAN_BYTES

        for file, data in tree.contents(ordered, max_bytes=MAX_ANALYZED_FILE_BYTES, stop=over):
            read[0] += len(data)
            yield file.path, data.decode("utf-8", errors="replace")
        return
    if change.root is None:
        return
    paths = itertools.chain(changed, (p for p in _walk(change.root) if p not in first))
    for path in itertools.islice(paths, TERM_SCAN_FILES):
        text = read_head_text(change.root, path)  # None: a link out of the tree, too large, unreadable
        if text is None:
            continue
        read[0] += len(text)
        yield path, text
        if read[0] >= TERM_SCAN_BYTES:
            return


def _walk(root: Path) -> Iterator[str]:
    """Repository-relative paths of the regular files under ``root`` (sorted), linked directories not followed."""
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in _NOT_THE_PROJECTS)
        base = Path(directory).relative_to(root)
        for name in sorted(names):
            yield (base / name).as_posix()
