"""Measure the built-in analyzers on the bundled golden set and the demo change.

Usage: python benchmarks/analyzers.py [--smoke] [--cases FILE [--whole-files]] [--list]   (prints, per case, which
planted problems got evidence on their lines, how many hits landed elsewhere, and the time per analyzer; ``--smoke``:
the first 3 golden cases and the demo change; ``--cases``: instead, the pull requests of an evaluation
set's ``cases.jsonl`` whose ``repo`` is a git bundle with ``main`` and ``feature`` branches, a hit
matching an expected comment when it is on its lines with one line of slack, and a table per analyzer;
``--whole-files`` with it: every line of each added or modified file counts as added, a larger sample of
real code to hand check a tool's hits on; ``--list``: instead of scoring, every hit with the code on its lines
and none of the expected comments, to hand check each hit before reading what engineers wrote, and a count per analyzer)

Every built-in analyzer runs, those off by default too.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import subprocess
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


def tree_change(base: Path, head: Path, only: list[str] | None = None) -> ChangeSet:
    """A change from two directory trees (every file that differs, or those of ``only``), head side at ``head``."""
    trees = [d for d in (base, head) if d.is_dir()]
    paths = only or sorted({p.relative_to(d).as_posix() for d in trees for p in d.rglob("*") if p.is_file()})
    diff = ""
    for path in paths:
        old = (base / path).read_text(encoding="utf-8") if (base / path).is_file() else ""
        new = (head / path).read_text(encoding="utf-8") if (head / path).is_file() else ""
        if old == new:
            continue
        body = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))
        diff += f"diff --git a/{path} b/{path}\n{body}"
    return ChangeSet(files=parse_diff(diff.encode()), root=head)


def score(case_id: str, change: ChangeSet, expected: list[dict[str, object]], slack: int = 0) -> dict[str, object]:
    report = asyncio.run(collect_evidence(change, builtin_analyzers(), warn=lambda line: print("  !", line)))

    def on(ev: Evidence, e: dict[str, object]) -> bool:
        start, end = int(str(e["start_line"])), int(str(e["end_line"]))
        return ev.path == e["path"] and ev.start_line <= end + slack and ev.end_line >= start - slack

    found = [ev for ev in report.evidence if any(on(ev, e) for e in expected)]
    elsewhere = [ev for ev in report.evidence if ev not in found]
    covered = sum(1 for e in expected if any(on(ev, e) for ev in found))
    print(f"{case_id}: {covered}/{len(expected)} planted problems with evidence, {len(elsewhere)} hits elsewhere")
    for ev in report.evidence:
        mark = "+" if ev in found else "-"
        print(f"  {mark} {ev.analyzer}:{ev.rule} {ev.path}:{ev.start_line} {ev.severity} ({domain_for(ev)})")
        print(f"      {' '.join(ev.message.split())[:160]}")
    print("  seconds:", report.seconds)
    hits = [(ev.analyzer, ev in found) for ev in report.evidence]
    return {"case": case_id, "expected": len(expected), "covered": covered, "elsewhere": len(elsewhere),
            "seconds": report.seconds, "hits": hits}  # fmt: skip


def listing(case_id: str, change: ChangeSet) -> list[str]:
    """Print every hit of every built-in analyzer on ``change`` with the head-side code on its lines; its analyzers."""
    report = asyncio.run(collect_evidence(change, builtin_analyzers(), warn=lambda line: print("  !", line)))
    print(f"== {case_id}: {len(report.evidence)} hits")
    for ev in report.evidence:
        print(f"  {ev.analyzer}:{ev.rule} {ev.path}:{ev.start_line} {ev.severity} ({domain_for(ev)})")
        print(f"      {' '.join(ev.message.split())[:240]}")
        lines = (
            (change.root / ev.path).read_text(encoding="utf-8", errors="replace").splitlines() if change.root else []
        )
        for n in range(ev.start_line, min(ev.end_line, ev.start_line + 4) + 1):
            if 0 < n <= len(lines):
                print(f"      {n:>5} | {lines[n - 1].rstrip()[:200]}")
    return [ev.analyzer for ev in report.evidence]


def print_counts(hits: list[str]) -> None:
    print(f"\n{'analyzer':<12} {'hits':>5}")
    for analyzer in sorted(set(hits)):
        print(f"{analyzer:<12} {hits.count(analyzer):>5}")


def bundle_change(bundle: Path, checkout: Path, *, whole_files: bool = False) -> ChangeSet:
    """The change ``main`` → ``feature`` of a git bundle, cloned (``feature`` checked out) into ``checkout``;
    ``whole_files``: every line of each added or modified file counts as added (a larger sample to hand check)."""
    subprocess.run(["git", "clone", "-q", "-b", "feature", str(bundle), str(checkout)], check=True)
    git = ["git", "-C", str(checkout), "diff", "--no-color", "--no-ext-diff"]
    if not whole_files:
        diff = subprocess.run([*git, "origin/main", "feature"], check=True, capture_output=True).stdout
        return ChangeSet(files=parse_diff(diff), root=checkout)
    names = subprocess.run(
        [*git, "--name-only", "--diff-filter=AM", "origin/main", "feature"], check=True, capture_output=True, text=True
    ).stdout.split()
    names = [n for n in names if _is_text(checkout / n)]
    empty = checkout.parent / "empty"
    empty.mkdir(exist_ok=True)
    return tree_change(empty, checkout, only=names)


def _is_text(path: Path) -> bool:
    try:
        path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return True


def evalset(cases_file: Path, *, whole_files: bool = False, list_hits: bool = False) -> None:
    rows = []
    hits: list[str] = []
    for line in cases_file.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        with tempfile.TemporaryDirectory() as tmp:
            change = bundle_change(cases_file.parent / case["repo"], Path(tmp) / "repo", whole_files=whole_files)
            if list_hits:
                hits += listing(case["id"], change)
            else:
                rows.append(score(case["id"], change, case["expected"], slack=1))
    if list_hits:
        print_counts(hits)
        return
    per_tool: dict[str, list[int]] = {}
    for row in rows:
        for analyzer, matched in row["hits"]:  # type: ignore[attr-defined]
            counts = per_tool.setdefault(analyzer, [0, 0, 0])
            counts[0] += 1
            counts[1] += int(matched)
    for row in rows:
        for analyzer in {a for a, _ in row["hits"]}:  # type: ignore[attr-defined]
            per_tool[analyzer][2] += 1
    print(f"\n{'analyzer':<12} {'hits':>5} {'on an expected comment':>23} {'cases':>6}")
    for analyzer, (n, matched, cases) in sorted(per_tool.items()):
        print(f"{analyzer:<12} {n:>5} {matched:>23} {cases:>6}")
    slowest = max(rows, key=lambda r: max(r["seconds"].values(), default=0.0))  # type: ignore[attr-defined]
    print(f"slowest case {slowest['case']}: seconds per analyzer {slowest['seconds']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="smoke size: 3 golden cases and the demo change")
    parser.add_argument("--cases", type=Path, help="an evaluation set's cases.jsonl of git bundles")
    parser.add_argument(
        "--whole-files", action="store_true", help="with --cases: every line of each changed file counts as added"
    )
    parser.add_argument(
        "--list", action="store_true", help="list every hit with its code, no expected comment shown, and count them"
    )
    args = parser.parse_args()
    if args.cases:
        evalset(args.cases, whole_files=args.whole_files, list_hits=args.list)
        return
    cases = (GOLDEN / "golden" / "cases.jsonl").read_text().splitlines()
    if args.smoke:
        cases = cases[:3]
        print(f"smoke size: {len(cases)} golden cases and the demo change")
    rows = []
    hits: list[str] = []
    for line in cases:
        case = json.loads(line)
        tree = GOLDEN / "golden" / case["tree"]
        change = tree_change(tree / "base", tree / "head")
        if args.list:
            hits += listing(case["id"], change)
        else:
            rows.append(score(case["id"], change, case["expected"]))
    if args.list:
        print_counts(hits)
        return
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
