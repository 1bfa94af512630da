"""Loading eval datasets: paths resolve against the file; a bad line is a one-line error naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codejury.errors import InputError
from codejury.eval.dataset import load_cases

GOOD = {
    "id": "c1",
    "language": "Go",
    "repo": "bundles/c1.bundle",
    "base": "main",
    "head": "feature",
    "expected": [
        {
            "path": "a.go",
            "start_line": 3,
            "end_line": 4,
            "note": "n",
            "category": "Code Defect",
            "context": "Diff Level",
        }
    ],
}


def write(tmp_path: Path, *lines: object) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_relative_repo_and_diff_paths_resolve_against_the_dataset(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        GOOD,
        {"id": "c2", "diff": "diffs/c2.diff", "tests": ["ci/junit.xml", "/abs/report.xml"]},
        {"id": "c3", "repo": "https://example.com/r.git", "base": "a", "head": "b"},
    )
    cases = load_cases(path)
    assert cases[1].tests == (str(tmp_path / "ci/junit.xml"), "/abs/report.xml")  # given to the review as --tests
    assert cases[0].repo == str(tmp_path / "bundles/c1.bundle")
    assert cases[0].expected[0].end_line == 4
    assert cases[1].diff == str(tmp_path / "diffs/c2.diff")
    assert cases[2].repo == "https://example.com/r.git" and cases[2].repo_is_url


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ({"id": "x"}, "exactly one of 'repo'"),
        ({"id": "x", "diff": "d", "tree": "t"}, "exactly one of"),
        ({"id": "x", "repo": "r"}, "'base' and 'head'"),
        ({**GOOD, "expected": [{"path": "a.go", "start_line": 5, "end_line": 2}]}, "before start_line"),
        ({**GOOD, "expected": [{"path": "a.go", "start_line": 0, "end_line": 2}]}, "expected.0.start_line"),
        (GOOD, "duplicate case id"),
    ],
)
def test_a_malformed_line_names_its_number(tmp_path: Path, bad: object, needle: str) -> None:
    path = write(tmp_path, GOOD, bad)
    with pytest.raises(InputError) as err:
        load_cases(path)
    assert "cases.jsonl:2:" in str(err.value)
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_an_empty_dataset_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no cases"):
        load_cases(write(tmp_path, ""))


def test_the_shared_dev_set_shape_loads(tmp_path: Path) -> None:
    dev = Path(__file__).resolve().parents[3] / "shared/evalsets/aacr-dev/cases.jsonl"
    if not dev.exists():
        pytest.skip(f"no dev set at {dev}")
    cases = load_cases(dev)
    assert len(cases) == 31 and all(Path(c.repo or "").exists() for c in cases)
