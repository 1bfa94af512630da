"""The bundled golden set (`codejury eval --builtin`): its shape, its line numbers, and that it installs.

Every expected comment must sit on a line the change adds or modifies (new-side numbering of
``head/``), or a reviewer that comments on the right line could never match it; the trees stay
small so the whole set runs on the embedded model in minutes.
"""

from __future__ import annotations

import difflib
import glob
import os
import subprocess
import tomllib
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from codejury.eval.checkout import checkout
from codejury.eval.dataset import EvalCase, load_cases

GOLDEN = Path(str(resources.files("codejury.eval") / "golden"))
CATEGORIES = {"security", "performance", "code_quality", "documentation", "release", "agents_md", "compliance"}
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cases() -> list[EvalCase]:
    return load_cases(GOLDEN / "cases.jsonl")


def tree_files(root: Path) -> dict[str, list[str]]:
    return {p.relative_to(root).as_posix(): p.read_text().splitlines() for p in root.rglob("*") if p.is_file()}


def changed_new_lines(base: list[str], head: list[str]) -> set[int]:
    """1-based head line numbers that the change adds or modifies."""
    changed: set[int] = set()
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(a=base, b=head, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            changed.update(range(j1 + 1, j2 + 1))
    return changed


def test_the_set_is_big_and_varied_enough(cases: list[EvalCase]) -> None:
    assert len(cases) >= 24
    assert len({c.language for c in cases}) >= 6
    assert sum(1 for c in cases if not c.expected) >= 6
    per_category = Counter(e.category for c in cases for e in c.expected)
    assert set(per_category) == CATEGORIES
    cases_per_category = Counter(cat for c in cases for cat in {e.category for e in c.expected})
    assert all(n >= 2 for n in cases_per_category.values()), cases_per_category
    assert all(c.title and c.description for c in cases)


def test_every_case_is_a_small_change_between_two_trees(cases: list[EvalCase]) -> None:
    for case in cases:
        assert case.tree is not None, case.id
        base, head = Path(case.tree) / "base", Path(case.tree) / "head"
        assert base.is_dir() and head.is_dir(), case.id
        base_files, head_files = tree_files(base), tree_files(head)
        assert 1 <= len(base_files) <= 4, case.id
        assert all(len(lines) <= 80 for lines in [*base_files.values(), *head_files.values()]), case.id
        touched = 0
        for path in base_files.keys() | head_files.keys():
            diff = difflib.unified_diff(base_files.get(path, []), head_files.get(path, []), lineterm="", n=0)
            touched += sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))
        assert 0 < touched <= 40, (case.id, touched)


def test_expected_comments_sit_on_changed_lines(cases: list[EvalCase]) -> None:
    for case in cases:
        assert case.tree is not None
        base, head = Path(case.tree) / "base", Path(case.tree) / "head"
        for expected in case.expected:
            where = f"{case.id}: {expected.path}:{expected.start_line}"
            assert expected.category in CATEGORIES, where
            assert expected.note and expected.context == "Diff Level", where
            head_file = head / expected.path
            assert head_file.is_file(), where
            head_lines = head_file.read_text().splitlines()
            assert expected.end_line <= len(head_lines), where
            base_file = base / expected.path
            base_lines = base_file.read_text().splitlines() if base_file.is_file() else []
            assert expected.start_line in changed_new_lines(base_lines, head_lines), where


def test_a_case_checks_out_as_two_branches_with_a_diff(cases: list[EvalCase], tmp_path: Path) -> None:
    case = next(c for c in cases if c.id == "go-geo-lookup-raw-http")
    repo, base, head = checkout(case, tmp_path / "repo")
    assert (base, head) == ("main", "feature")
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout

    diff = git("diff", "main", "feature")
    assert "+++ b/internal/geo/geo.go" in diff
    assert "http.Get(" in diff
    assert "Team rule" not in diff  # the rule file is in both trees, so the diff does not touch it
    assert git("show", "main:.codejury/rules/outbound-http.md").startswith("# Outbound HTTP")


def test_package_data_ships_every_golden_file() -> None:
    """setuptools expands package-data with glob(), which skips dot-directories unless a pattern names them."""
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["codejury"]
    package_dir = REPO_ROOT / "src" / "codejury"
    shipped = {
        Path(match).resolve()
        for pattern in patterns
        for match in glob.glob(str(package_dir / pattern), recursive=True)
        if Path(match).is_file()
    }
    golden = package_dir / "eval" / "golden"
    missing = [
        p.relative_to(golden).as_posix() for p in golden.rglob("*") if p.is_file() and p.resolve() not in shipped
    ]
    assert not missing
