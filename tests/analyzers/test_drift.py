"""Changelog and AGENTS.md drift: facts read from the files, each on an added line, and silence otherwise."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from codejury.analyzers import AnalyzerSkipped, domain_for
from codejury.analyzers.drift import DriftAnalyzer
from codejury.change.types import ChangeSet, PrefetchedBase
from codejury.evidence import Evidence
from tests.analyzers.helpers import hits, make_change

CARGO = '[package]\nname = "tide"\nversion = "{v}"\nedition = "2021"\n'
CHANGELOG = "# Changelog\n\n## [0.7.2] - 2026-02-11\n\n- Fixed a thing.\n"
ENTRY = "## [{v}] - 2026-03-04\n\n- Renamed `predictions_for`.\n\n"


def with_base(change: ChangeSet, files: dict[str, str | None]) -> ChangeSet:
    return replace(change, base=PrefetchedBase(files))


async def drift(tmp_path: Path, files: dict[str, tuple[str, str]], base: dict[str, str | None]) -> list[Evidence]:
    os.makedirs(tmp_path, exist_ok=True)  # noqa: ASYNC230 - a test's own temporary directory
    change = with_base(make_change(tmp_path, files), {**{p: old for p, (old, _) in files.items()}, **base})
    return await DriftAnalyzer().analyze(change)


def changelog(v: str) -> str:
    return CHANGELOG.replace("## [0.7.2]", ENTRY.format(v=v) + "## [0.7.2]")


async def test_a_changelog_entry_for_another_version_than_the_manifest(tmp_path: Path) -> None:
    cargo = (CARGO.format(v="0.7.2"), CARGO.format(v="0.8.0"))
    files = {"Cargo.toml": cargo, "CHANGELOG.md": (CHANGELOG, changelog("0.7.3"))}
    evidence = await drift(tmp_path, files, {})
    assert hits(evidence) == {("changelog-version-mismatch", "CHANGELOG.md", 3)}
    assert "0.7.3" in evidence[0].message and "0.8.0" in evidence[0].message
    assert domain_for(evidence[0]) == "release"


@pytest.mark.parametrize(
    ("manifest", "old", "new"),
    [
        ("Cargo.toml", CARGO.format(v="0.7.2"), CARGO.format(v="0.8.0")),
        ("package.json", '{\n  "version": "0.7.2"\n}\n', '{\n  "version": "0.8.0"\n}\n'),
        ("pyproject.toml", '[project]\nname = "x"\nversion = "0.7.2"\n', '[project]\nname = "x"\nversion = "0.8.0"\n'),
    ],
)
async def test_matching_versions_are_silent(tmp_path: Path, manifest: str, old: str, new: str) -> None:
    files = {manifest: (old, new), "CHANGELOG.md": (CHANGELOG, changelog("0.8.0"))}
    assert await drift(tmp_path, files, {}) == []
    files["CHANGELOG.md"] = (CHANGELOG, changelog("0.7.3"))
    assert [e.rule for e in await drift(tmp_path / "again", files, {})] == ["changelog-version-mismatch"]


async def test_a_changelog_beside_another_package_is_not_compared(tmp_path: Path) -> None:
    files = {
        "crates/a/Cargo.toml": (CARGO.format(v="0.7.2"), CARGO.format(v="0.8.0")),
        "CHANGELOG.md": (CHANGELOG, changelog("0.7.3")),
    }
    assert await drift(tmp_path, files, {}) == []


PACKAGE = """{{
  "name": "slugkit",
  "type": "module",{manager}
  "scripts": {{
    "test": "{test}",
    "lint": "eslint ."
  }}
}}
"""
AGENTS = "# Working here\n\n- Install with `npm ci`.\n- Run the tests with `npm test` (Jest).\n"


async def test_agents_md_left_behind_by_a_new_package_manager_and_test_runner(tmp_path: Path) -> None:
    old = PACKAGE.format(manager="", test="jest")
    new = PACKAGE.format(manager='\n  "packageManager": "pnpm@9.12.1",', test="vitest run")
    evidence = await drift(tmp_path, {"package.json": (old, new)}, {"AGENTS.md": AGENTS})
    assert [(e.rule, e.start_line, e.end_line) for e in evidence] == [("agents-md-stale-tooling", 4, 6)]
    assert "pnpm" in evidence[0].message and "npm" in evidence[0].message and "vitest" in evidence[0].message
    assert domain_for(evidence[0]) == "agents_md"


async def test_agents_md_updated_in_the_change_or_already_right_is_silent(tmp_path: Path) -> None:
    old = PACKAGE.format(manager="", test="jest")
    new = PACKAGE.format(manager='\n  "packageManager": "pnpm@9.12.1",', test="vitest run")
    updated = "- Install with `pnpm install`.\n- Run the tests with `pnpm test` (Vitest).\n"
    assert await drift(tmp_path, {"package.json": (old, new), "AGENTS.md": (AGENTS, updated)}, {}) == []
    assert await drift(tmp_path / "2", {"package.json": (old, new)}, {"AGENTS.md": updated}) == []
    assert await drift(tmp_path / "3", {"package.json": (old, new)}, {}) == []  # no AGENTS.md at all


CONFIG_OLD = 'package config\n\nfunc Load() Config {\n\treturn Config{Addr: getenv("APP_ADDR", ":8080")}\n}\n'
CONFIG_NEW = (
    "package config\n\nfunc Load() (Config, error) {\n"
    '\tdbURL := os.Getenv("APP_DATABASE_URL")\n'
    '\tif dbURL == "" {\n\t\treturn Config{}, errors.New("APP_DATABASE_URL is not set")\n\t}\n'
    '\tcache := os.Getenv("APP_CACHE_DIR")\n'
    '\treturn Config{Addr: getenv("APP_ADDR", ":8080"), DB: dbURL, Cache: cache}, nil\n}\n'
)
RUN_DOC = "# Ledger\n\n- `go run ./cmd/ledger` starts it; settings come from environment variables, all optional.\n"


async def test_a_new_required_environment_variable_missing_from_agents_md(tmp_path: Path) -> None:
    evidence = await drift(tmp_path, {"internal/config/config.go": (CONFIG_OLD, CONFIG_NEW)}, {"AGENTS.md": RUN_DOC})
    # APP_CACHE_DIR is read without a failure when unset: optional, not reported.
    assert hits(evidence) == {("agents-md-env-var", "internal/config/config.go", 4)}
    assert "APP_DATABASE_URL" in evidence[0].message


@pytest.mark.parametrize(
    "doc",
    [
        RUN_DOC + "- `APP_DATABASE_URL`: the Postgres URL.\n",  # already documented
        "# Style\n\n- Tabs, gofmt, short functions.\n",  # the instructions do not talk about running it
    ],
)
async def test_an_environment_variable_the_instructions_cover_or_ignore_is_silent(tmp_path: Path, doc: str) -> None:
    assert await drift(tmp_path, {"internal/config/config.go": (CONFIG_OLD, CONFIG_NEW)}, {"AGENTS.md": doc}) == []


async def test_the_nearest_instruction_file_is_the_one_read(tmp_path: Path) -> None:
    base = {"AGENTS.md": RUN_DOC + "- `APP_DATABASE_URL`: the Postgres URL.\n", "services/ledger/CLAUDE.md": RUN_DOC}
    files = {"services/ledger/config.go": (CONFIG_OLD, CONFIG_NEW)}
    evidence = await drift(tmp_path, files, base)
    assert hits(evidence) == {("agents-md-env-var", "services/ledger/config.go", 4)}
    assert "services/ledger/CLAUDE.md" in evidence[0].message


async def test_an_environment_variable_the_base_already_read_is_not_new(tmp_path: Path) -> None:
    old = CONFIG_OLD.replace('getenv("APP_ADDR", ":8080")', 'os.Getenv("APP_DATABASE_URL")')
    assert await drift(tmp_path, {"internal/config/config.go": (old, CONFIG_NEW)}, {"AGENTS.md": RUN_DOC}) == []


async def test_without_a_head_tree_it_is_a_skip(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"Cargo.toml": ("", CARGO.format(v="1.0.0"))}, with_root=False)
    with pytest.raises(AnalyzerSkipped, match="no head-side tree"):
        await DriftAnalyzer().analyze(change)
