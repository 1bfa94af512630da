"""Drift between a change and the files that describe the project: the changelog and AGENTS.md.

Deterministic checks of what the release and AGENTS.md reviewers are asked to notice, run on the
head-side tree (``change.root``), each hit on an added line:

- ``changelog-version-mismatch`` (release): the change sets a new package version in a manifest
  (``Cargo.toml``, ``package.json``, ``pyproject.toml``) and adds a changelog entry beside it
  (``CHANGELOG.md``, ``CHANGES.md``, ``HISTORY.md``, ``NEWS.md``) for another version.
- ``agents-md-stale-tooling`` (agents_md): ``package.json`` now declares another package manager
  (``packageManager``) or test runner (``scripts.test``) than the one the nearest AGENTS.md /
  CLAUDE.md tells to use, and that file is not updated by the change (the seed's high tier:
  package manager, test framework).
- ``agents-md-env-var`` (agents_md): the change reads a new environment variable that the code
  requires (it fails, raises or exits when it is unset), and the nearest AGENTS.md / CLAUDE.md,
  which talks about the environment, does not name it (high tier: new required environment
  variables).

Only facts read from the files are compared; nothing here calls a model.
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from codejury.analyzers.base import (
    MAX_ANALYZED_FILE_BYTES,
    AnalyzerSkipped,
    added_text,
    files_with_additions,
    read_head_text,
)
from codejury.change.types import BaseReader, ChangeSet, FileChange
from codejury.evidence import Evidence

CHANGELOG_NAMES = frozenset({"changelog.md", "changes.md", "history.md", "news.md", "changelog"})
INSTRUCTION_NAMES = ("AGENTS.md", "CLAUDE.md")
_VERSION_HEADING = re.compile(r"^#{1,4}\s*\[?v?(\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?)\]?(?:\s|$)")
_MANIFEST_VERSION = {
    "Cargo.toml": re.compile(r'^\s*version\s*=\s*"([^"]+)"'),
    "pyproject.toml": re.compile(r'^\s*version\s*=\s*"([^"]+)"'),
    "package.json": re.compile(r'^\s*"version"\s*:\s*"([^"]+)"'),
}
PACKAGE_MANAGERS: dict[str, re.Pattern[str]] = {
    "npm": re.compile(r"\bnpm\s+(?:ci|install|i|run|test|exec)\b|\bnpx\s"),
    "yarn": re.compile(r"\byarn\s+(?:install|add|run|test|build|dlx)\b|`yarn`"),
    "pnpm": re.compile(r"\bpnpm\s+(?:install|i|add|run|test|exec|dlx)\b|`pnpm`"),
    "bun": re.compile(r"\bbun\s+(?:install|add|run|test|x)\b"),
}
"""How an instruction file tells to use each JavaScript package manager (a command, not a mention)."""
TEST_RUNNERS = ("vitest", "jest", "mocha", "ava", "jasmine", "playwright", "cypress", "uvu")
_ENV_READ = re.compile(
    r"""(?:os\.Getenv|os\.LookupEnv|os\.getenv|os\.environ\.get|os\.environ\[|process\.env\[|env::var|"""
    r"""System\.getenv|ENV\.fetch|ENV\[|getenv)\s*\(?\s*["']([A-Z][A-Z0-9_]{2,})["']"""
    r"""|process\.env\.([A-Z][A-Z0-9_]{2,})"""
)
_REQUIRED_NEAR = re.compile(
    r"""\braise\b|\bthrow\b|panic!?\(|log\.Fatal|\bFatal(?:f|ln)?\(|errors\.New\(|fmt\.Errorf\(|\.expect\(|"""
    r"""\.unwrap\(\)|sys\.exit|process\.exit|os\.Exit|requireNonNull|KeyError|\)\?"""
)
_ENV_WORDS = re.compile(r"environment|\benv\b|\.env\b|configuration|[A-Z][A-Z0-9]+_[A-Z0-9_]+", re.IGNORECASE)
_CODE_SUFFIXES = (".py", ".go", ".rs", ".js", ".mjs", ".cjs", ".ts", ".mts", ".tsx", ".java", ".kt", ".rb", ".php")
REQUIRED_WINDOW = 4
"""Added lines after an environment read that may hold its failure (``if x == "" { return err }``)."""


class DriftAnalyzer:
    """Changelog and AGENTS.md drift, read from the head-side tree."""

    name = "drift"

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        relevant = files_with_additions(change)
        if not relevant:
            return []
        if change.root is None:
            raise AnalyzerSkipped(f"drift skipped: the change has no head-side tree to read ({change.no_tree})")
        tree = _Tree(change.root, {f.path for f in change.files}, change.base)
        return [
            *changelog_mismatches(relevant, tree),
            *stale_tooling(relevant, tree),
            *missing_env_vars(relevant, tree),
        ]


class _Tree:
    """Reads changed files on the head side (bounded, inside the root) and unchanged ones on the base side."""

    def __init__(self, root: Path, changed: set[str], base: BaseReader | None = None) -> None:
        self.root = root.resolve()
        self.changed = changed
        self.base = base

    def read(self, path: str) -> str | None:
        return read_head_text(self.root, path)

    def before(self, file: FileChange) -> str:
        """The file's base-side text when the base can be read, else its removed lines."""
        text = self.base.read_text(file.old_path or file.path) if self.base is not None else None
        return text if text is not None else _removed_text(file)

    def instructions_for(self, path: str) -> tuple[str, str] | None:
        """The nearest AGENTS.md / CLAUDE.md from ``path``'s directory up to the root, and its text.

        None when there is none, or when the change edits it (its author is updating it: the AGENTS.md
        reviewer reads that edit). An unchanged file is the same on both sides: it is read on the base.
        """
        directory = posixpath.dirname(path)
        while True:
            for name in INSTRUCTION_NAMES:
                candidate = posixpath.join(directory, name) if directory else name
                if candidate in self.changed:
                    return None
                text = self.base.read_text(candidate) if self.base is not None else None
                if text is not None:
                    return candidate, text[:MAX_ANALYZED_FILE_BYTES]
            if not directory:
                return None
            directory = posixpath.dirname(directory)


def _drift(rule: str, path: str, start: int, end: int, message: str) -> Evidence:
    """One drift hit: every one is a warning the owning reviewer confirms."""
    return Evidence(
        analyzer="drift", rule=rule, path=path, start_line=start, end_line=end, severity="warning", message=message
    )


def _removed_text(file: FileChange) -> str:
    return "\n".join(line.text for hunk in file.hunks for line in hunk.lines if line.kind == "-")


def _manifest_version(name: str, text: str) -> str | None:
    """The package's own version in a manifest's text, or None (unparseable, a workspace root, none)."""
    try:
        if name == "package.json":
            data = json.loads(text)
            version = data.get("version") if isinstance(data, dict) else None
        else:
            data = tomllib.loads(text)
            poetry = data.get("tool", {}).get("poetry")
            table = data.get("package") if name == "Cargo.toml" else data.get("project") or poetry
            version = table.get("version") if isinstance(table, dict) else None
    except (ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None


def changelog_mismatches(files: list[FileChange], tree: _Tree) -> Iterator[Evidence]:
    bumped: dict[str, tuple[str, str]] = {}  # directory -> (manifest path, new version)
    for file in files:
        name = PurePosixPath(file.path).name
        pattern = _MANIFEST_VERSION.get(name)
        if pattern is None:
            continue
        text = tree.read(file.path)
        version = _manifest_version(name, text) if text is not None else None
        if version and any((m := pattern.match(line)) and m.group(1) == version for _, line in added_text(file)):
            bumped[posixpath.dirname(file.path)] = (file.path, version)
    for file in files:
        if PurePosixPath(file.path).name.lower() not in CHANGELOG_NAMES:
            continue
        manifest = bumped.get(posixpath.dirname(file.path))
        if manifest is None:
            continue
        headings = [(no, m.group(1)) for no, line in added_text(file) if (m := _VERSION_HEADING.match(line))]
        if not headings:
            continue
        line, entry = min(headings)  # the newest entry is the first one
        manifest_path, version = manifest
        if entry != version:
            yield _drift(
                "changelog-version-mismatch", file.path, line, line,
                (
                    f"The new changelog entry is for version {entry}, but {manifest_path} now sets the version "
                    f"to {version}: users and release tooling read different versions for this release. "
                    f"Make the entry and the manifest agree."
                ),
            )  # fmt: skip


def _declared_manager(line: str) -> str | None:
    m = re.match(r'^\s*"packageManager"\s*:\s*"(npm|yarn|pnpm|bun)@', line)
    return m.group(1) if m else None


def _test_runner(line: str) -> str | None:
    m = re.match(r'^\s*"test"\s*:\s*"([^"]*)"', line)
    if not m:
        return None
    return next((r for r in TEST_RUNNERS if re.search(rf"\b{r}\b", m.group(1))), None)


def stale_tooling(files: list[FileChange], tree: _Tree) -> Iterator[Evidence]:
    for file in files:
        if PurePosixPath(file.path).name != "package.json":
            continue
        found = tree.instructions_for(file.path)
        if found is None:
            continue
        doc_path, doc = found
        stale: list[tuple[int, str]] = []
        for no, line in added_text(file):
            manager = _declared_manager(line)
            if manager:
                told = [name for name, how in PACKAGE_MANAGERS.items() if name != manager and how.search(doc)]
                if told and not PACKAGE_MANAGERS[manager].search(doc):
                    stale.append((no, f"package.json now declares {manager} as the package manager, but {doc_path} "
                                      f"still says to use {' and '.join(told)}"))  # fmt: skip
            runner = _test_runner(line)
            if runner and not re.search(rf"\b{runner}\b", doc, re.IGNORECASE):
                told = [r for r in TEST_RUNNERS if r != runner and re.search(rf"\b{r}\b", doc, re.IGNORECASE)]
                if told:
                    names = " and ".join(told)
                    stale.append((no, f"the tests now run with {runner}, but {doc_path} still names {names}"))
        if stale:
            first = min(no for no, _ in stale)
            yield _drift(
                "agents-md-stale-tooling", file.path, first, max(no for no, _ in stale),
                (
                    f"{'; '.join(text for _, text in stale)}. Agents (and people) following {doc_path} will run the "
                    f"old tools: update it in this change."
                ),
            )  # fmt: skip


def missing_env_vars(files: list[FileChange], tree: _Tree) -> Iterator[Evidence]:
    seen: set[str] = set()
    for file in files:
        if not file.path.endswith(_CODE_SUFFIXES):
            continue
        added = list(added_text(file))
        before = tree.before(file)
        for index, (no, line) in enumerate(added):
            for match in _ENV_READ.finditer(line):
                name = match.group(1) or match.group(2)
                if name in seen or name in before:
                    continue
                window = added[index : index + 1 + REQUIRED_WINDOW]
                after = [text for later, text in window if later - no <= REQUIRED_WINDOW]
                if not any(_REQUIRED_NEAR.search(text) for text in after) and "os.environ[" not in line:
                    continue  # optional (it has a default): low materiality
                found = tree.instructions_for(file.path)
                if found is None or name in found[1] or not _ENV_WORDS.search(found[1]):
                    continue
                seen.add(name)
                yield _drift(
                    "agents-md-env-var", file.path, no, no,
                    (
                        f"The code now requires the environment variable {name} (it fails when it is unset), but "
                        f"{found[0]} does not mention it: an agent or a new contributor following it cannot run "
                        f"this. Document {name} (what it is, an example value) in {found[0]}."
                    ),
                )  # fmt: skip
