"""Build small changes for the analyzer tests: the head side on disk, the diff parsed."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path

from codejury.change.diffparse import parse_diff
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence


def make_change(tmp_path: Path, files: Mapping[str, tuple[str, str]], *, with_root: bool = True) -> ChangeSet:
    """A change of ``{path: (old, new)}``; the head side is written under ``tmp_path/head``."""
    root = tmp_path / "head"
    root.mkdir(exist_ok=True)
    diff = ""
    for path, (old, new) in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(new, encoding="utf-8")
        body = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))
        diff += f"diff --git a/{path} b/{path}\n{body}"
    return ChangeSet(files=parse_diff(diff.encode()), root=root if with_root else None)


def hits(evidence: Iterable[Evidence]) -> set[tuple[str, str, int]]:
    """(rule, path, line) of each item, for compact assertions."""
    return {(e.rule, e.path, e.start_line) for e in evidence}
