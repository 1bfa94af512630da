"""Every built-in analyzer over the demo change (examples/demo): the SQL injection, the live key and the N+1 query."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from codejury.analyzers import builtin_analyzers, collect_evidence
from codejury.change.sources import GitSource

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


def _build(dest: Path) -> Path:
    spec = importlib.util.spec_from_file_location("demo_build_repo", DEMO / "build_repo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Path(module.build(dest))


async def test_the_demo_sql_injection_and_committed_key_have_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _build(tmp_path / "demo")
    with GitSource(repo, base="main") as source:
        change = source.load()
        lines: list[str] = []
        report = await collect_evidence(change, builtin_analyzers(), warn=lines.append)
    assert lines == [] and report.skipped == [] and report.failed == []
    found = {(e.analyzer, e.path, e.start_line, e.severity) for e in report.evidence}
    assert ("ruff", "shop/search.py", 8, "critical") in found
    assert ("rules", "shop/search.py", 8, "critical") in found
    assert ("secrets", "shop/payments.py", 6, "critical") in found
    assert ("rules", "shop/orders.py", 24, "warning") in found  # the N+1 query: one customer query per order
    with capsys.disabled():
        others = sorted(f for f in found if (f[1], f[2]) not in {("shop/search.py", 8), ("shop/payments.py", 6)})
        print(f"\n[demo] other evidence: {others or 'none'}; seconds: {report.seconds}")
    assert all(e.severity != "critical" or (e.path, e.start_line) in {("shop/search.py", 8), ("shop/payments.py", 6)}
               for e in report.evidence), "no critical besides the planted ones"  # fmt: skip
