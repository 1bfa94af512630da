"""Skip rules (``[skip]``): which merge requests a team does not want reviewed, and the rule that says so.

A change is skipped when its forge labels include one of ``labels``, its author's login matches one of
``authors`` (globs: ``dependabot[bot]``, ``renovate*``), its title matches one of ``titles`` (regular
expressions, searched from the title's start: ``^chore\\(deps\\)``), its target branch matches one of
``target_branches``, or every changed file matches one of ``paths``. The review path applies them alike in
CI, with ``--url`` and in the service (``session``'s admission): a skipped change calls no model and is
published as not reviewed, with the rule, never as a success; a writer's ``/codejury review`` overrides it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import Protocol

from codejury.change.types import ChangeMeta, FileChange


class SkipRules(Protocol):
    """The ``[skip]`` table (``config.SkipRules``), as this module reads it."""

    @property
    def labels(self) -> Sequence[str]: ...
    @property
    def authors(self) -> Sequence[str]: ...
    @property
    def titles(self) -> Sequence[str]: ...
    @property
    def target_branches(self) -> Sequence[str]: ...
    @property
    def paths(self) -> Sequence[str]: ...


def skipped_by(rules: SkipRules, meta: ChangeMeta, files: Sequence[FileChange]) -> str | None:
    """The first rule that skips this change, in words (``skipped by [skip] labels: skip-review``), or None."""
    labels = {label.casefold() for label in meta.labels}
    for label in rules.labels:
        if label.casefold() in labels:
            return f"skipped by [skip] labels: the label {label}"
    if meta.author:
        for pattern in rules.authors:
            login, wanted = meta.author.casefold(), pattern.casefold()
            if login == wanted or fnmatchcase(login, wanted):  # ``dependabot[bot]`` as written, not as a [set]
                return f"skipped by [skip] authors: {meta.author} matches {pattern}"
    for pattern in rules.titles:
        if re.match(pattern, meta.title):
            return f"skipped by [skip] titles: the title matches {pattern}"
    if meta.base_ref:
        for pattern in rules.target_branches:
            if fnmatchcase(meta.base_ref, pattern):
                return f"skipped by [skip] target_branches: {meta.base_ref} matches {pattern}"
    if rules.paths and files and all(_matches_any(f, rules.paths) for f in files):
        return f"skipped by [skip] paths: every changed file matches {', '.join(rules.paths)}"
    return None


def _matches_any(file: FileChange, patterns: Sequence[str]) -> bool:
    names = [file.path, *([file.old_path] if file.old_path else [])]  # a move out of a skipped path is reviewed
    return all(any(fnmatchcase(name, p) or _under(name, p) for p in patterns) for name in names)


def _under(path: str, pattern: str) -> bool:
    """``docs/**`` also matches ``docs/a/b.md`` and a bare directory name matches what is under it."""
    if pattern.endswith("/**"):
        return path.startswith(pattern[:-2])
    return path.startswith(pattern.rstrip("/") + "/") and not any(c in pattern for c in "*?[")
