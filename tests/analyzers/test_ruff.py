"""ruff's security and bugbear rules on the changed lines of the head side."""

from __future__ import annotations

from pathlib import Path

import pytest

from codejury.analyzers import AnalyzerFailed, AnalyzerSkipped
from codejury.analyzers.ruff import RuffAnalyzer
from tests.analyzers.helpers import hits, make_change

OLD = "import sqlite3\n\n\ndef old(conn, name):\n    return conn.execute(\"SELECT * FROM t WHERE n = '%s'\" % name)\n"
NEW = OLD + (
    "\n\ndef find(conn, term):\n"
    "    query = f\"SELECT id FROM products WHERE name LIKE '%{term}%'\"\n"
    "    return conn.execute(query).fetchall()\n"
    "\n\ndef append(item, into=[]):\n"
    "    into.append(item)\n"
    "    return into\n"
)


async def test_reports_sql_and_mutable_default_on_added_lines_only(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"shop/q.py": (OLD, NEW)})
    evidence = await RuffAnalyzer().analyze(change)
    found = hits(evidence)
    assert ("S608", "shop/q.py", 9) in found
    assert ("B006", "shop/q.py", 13) in found
    assert not any(line == 5 for _, _, line in found), "unchanged line 5: not the change's"
    sql = next(e for e in evidence if e.rule == "S608")
    assert sql.severity == "critical" and sql.analyzer == "ruff"


async def test_the_repository_ruff_config_cannot_switch_rules_off(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"q.py": ("", 'import hashlib\nh = hashlib.md5(b"x")\n')})
    (tmp_path / "head" / "pyproject.toml").write_text('[tool.ruff.lint]\nignore = ["S"]\n', encoding="utf-8")
    assert ("S324", "q.py", 2) in hits(await RuffAnalyzer().analyze(change))


async def test_an_added_unused_import_is_a_hit_except_in_a_package_init(tmp_path: Path) -> None:
    body = "import os\nimport json\n\n\ndef f():\n    return json.dumps({})\n"
    change = make_change(tmp_path, {"app/util.py": ("", body), "app/__init__.py": ("", "from app.util import f\n")})
    found = hits(await RuffAnalyzer().analyze(change))
    assert ("F401", "app/util.py", 1) in found
    assert not any(path == "app/__init__.py" for _, path, _ in found), "a package re-exports what it imports"


async def test_a_missing_binary_is_a_skip(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"q.py": ("", "x = 1\n")})
    with pytest.raises(AnalyzerSkipped, match="ruff skipped: not installed"):
        await RuffAnalyzer(binary=tmp_path / "no-such-ruff").analyze(change)


async def test_a_change_without_a_tree_is_a_skip_with_its_reason(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"q.py": ("", "x = 1\n")}, with_root=False)
    with pytest.raises(AnalyzerSkipped, match="no head-side tree"):
        await RuffAnalyzer().analyze(change)


async def test_no_python_files_means_no_run_and_no_skip_line(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"README.md": ("", "hello\n")})
    assert await RuffAnalyzer(binary=tmp_path / "missing").analyze(change) == []


@pytest.mark.waits
@pytest.mark.parametrize(
    ("script", "needle"),
    [("echo boom >&2; exit 2", "exited with 2: boom"), ("echo '{not json'", "not JSON"), ("sleep 30", "limit")],
)
async def test_a_broken_ruff_fails_with_one_line(tmp_path: Path, script: str, needle: str) -> None:
    fake = tmp_path / "fake-ruff"
    fake.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    fake.chmod(0o755)
    change = make_change(tmp_path, {"q.py": ("", "x = 1\n")})
    with pytest.raises(AnalyzerFailed, match=needle):
        await RuffAnalyzer(binary=fake, timeout_s=1).analyze(change)
