"""Pick and open the change source of a review: ``--source NAME``, else diff with ``--diff``, else git.

Sources are registered by name through the ``codejury_register_sources`` hook; each is a
factory ``(SourceOptions) -> ChangeSource``. The built-in plugin registers ``git`` and ``diff``
the same way a third-party plugin registers its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from codejury.change.types import ChangeSource
from codejury.errors import InputError

SourceFactory = Callable[["SourceOptions"], ChangeSource]


@dataclass(frozen=True)
class SourceOptions:
    """What the user asked about the change: every source gets all of it and uses what it needs."""

    repo: Path | None = None
    """``--repo``: the repository directory (None: the current directory)."""
    base: str | None = None
    head: str | None = None
    working_tree: bool = False
    diff_file: str | None = None
    """``--diff``: a unified diff file, '-' for stdin."""


class SourceFlags(Protocol):
    """The ``codejury review`` flags that choose a source (``cli.ReviewFlags`` has them)."""

    @property
    def source(self) -> str | None: ...
    @property
    def diff_file(self) -> str | None: ...
    @property
    def repo_dir(self) -> Path | None: ...
    @property
    def base_ref(self) -> str | None: ...
    @property
    def head_ref(self) -> str | None: ...
    @property
    def working_tree(self) -> bool: ...


def source_name(flags: SourceFlags) -> str:
    """The source the flags ask for: ``--source``, else ``diff`` when ``--diff`` is given, else ``git``."""
    if flags.source:
        return flags.source
    return "diff" if flags.diff_file is not None else "git"


def open_source(registry: Mapping[str, SourceFactory], flags: SourceFlags) -> ChangeSource:
    """Build the chosen source from the registry (``collect_registry(pm, "codejury_register_sources")``).

    Raises ``InputError`` for a name no plugin registered, and when ``--diff`` is combined with a
    source other than diff (the file would be silently ignored).
    """
    name = source_name(flags)
    factory = registry.get(name)
    if factory is None:
        known = ", ".join(sorted(registry)) or "none"
        raise InputError(f"--source {name}: no such change source; sources: {known} (a plugin's needs --plugin)")
    if flags.diff_file is not None and name != "diff":
        raise InputError(f"--diff cannot be combined with --source {name}")
    options = SourceOptions(
        repo=flags.repo_dir,
        base=flags.base_ref,
        head=flags.head_ref,
        working_tree=flags.working_tree,
        diff_file=flags.diff_file,
    )
    return factory(options)
