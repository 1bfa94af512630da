"""Measure the built-in analyzers on the bundled golden set and the demo change.

Usage: python benchmarks/analyzers.py [--smoke]   (prints, per case, which planted problems got
evidence on their lines, how many hits landed elsewhere, and the time per analyzer; ``--smoke``:
the first 3 golden cases and the demo change)
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import sys
import tempfile
from pathlib import Path

from codejury.analyzers import builtin_analyzers, collect_evidence, domain_for
from codejury.change.diffparse import parse_diff
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "src" / "codejury" / "eval"
DEMO = ROOT / "examples" / "demo"


def tree_change(base: Path, head: Path) -> ChangeSet:
    """A change from two directory trees (every file that differs), head side at ``head``."""
    trees = [d for d in (base, head) if d.is_dir()]
    paths = sorted({p.relative_to(d).as_posix() for d in trees for p in d.rglob("*") if p.is_file()})
    diff = ""
    for path in paths:
        old = (base / path).read_text(encoding="utf-8") if (base / path).is_file() else ""
        new = (head / path).read_text(encoding="utf-8") if (head / path).is_file() else ""
        if old == new:
            continue
        body = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))
        diff += f"diff --git a/{path} b/{path}\n{body}"
    return ChangeSet(files=parse_diff(diff.encode()), root=head)


def score(case_id: str, change: ChangeSet, expected: list[dict[str, object]]) -> dict[str, object]:
    report = asyncio.run(collect_evidence(change, builtin_analyzers(), warn=lambda line: print("  !", line)))

    def on(ev: Evidence, e: dict[str, object]) -> bool:
        start, end = int(str(e["start_line"])), int(str(e["end_line"]))
        return ev.path == e["path"] and ev.start_line <= end and ev.end_line >= start

    found = [ev for ev in report.evidence if any(on(ev, e) for e in expected)]
    elsewhere = [ev for ev in report.evidence if ev not in found]
    covered = sum(1 for e in expected if any(on(ev, e) for ev in found))
    print(f"{case_id}: {covered}/{len(expected)} planted problems with evidence, {len(elsewhere)} hits elsewhere")
    for ev in report.evidence:
        mark = "+" if ev in found else "-"
        print(f"  {mark} {ev.analyzer}:{ev.rule} {ev.path}:{ev.start_line} {ev.severity} ({domain_for(ev)})")
    print("  seconds:", report.seconds)
    return {"case": case_id, "expected": len(expected), "covered": covered, "elsewhere": len(elsewhere),
            "seconds": report.seconds}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="smoke size: 3 golden cases and the demo change")
    args = parser.parse_args()
    cases = (GOLDEN / "golden" / "cases.jsonl").read_text().splitlines()
    if args.smoke:
        cases = cases[:3]
        print(f"smoke size: {len(cases)} golden cases and the demo change")
    rows = []
    for line in cases:
        case = json.loads(line)
        tree = GOLDEN / "golden" / case["tree"]
        rows.append(score(case["id"], tree_change(tree / "base", tree / "head"), case["expected"]))
    with tempfile.TemporaryDirectory() as tmp:
        head = Path(tmp) / "head"
        import shutil

        shutil.copytree(DEMO / "base", head)
        shutil.copytree(DEMO / "change", head, dirs_exist_ok=True)
        planted = [
            {"path": "shop/search.py", "start_line": 8, "end_line": 8},
            {"path": "shop/payments.py", "start_line": 6, "end_line": 6},
            {"path": "shop/orders.py", "start_line": 24, "end_line": 24},
            {"path": "shop/orders.py", "start_line": 11, "end_line": 11},
        ]
        rows.append(score("demo", tree_change(DEMO / "base", head), planted))
    clean = [r for r in rows if r["expected"] == 0]
    print(
        f"\ntotal: {sum(int(str(r['covered'])) for r in rows)}/{sum(int(str(r['expected'])) for r in rows)} planted "
        f"problems with evidence; {sum(int(str(r['elsewhere'])) for r in rows)} hits elsewhere "
        f"({sum(int(str(r['elsewhere'])) for r in clean)} on the {len(clean)} clean changes)"
    )


if __name__ == "__main__":
    sys.exit(main())
