"""Measure the repository index on a generated 10,000-file repository.

Usage: python benchmarks/index.py [--files N] [--smoke]

Generates a repository of Python, TypeScript and Go files (about 4 KB each, functions calling
functions of other files), then prints: the first index (empty cache), the update after 20
files change (a new commit key: only those files are parsed again), loading the same commit
again, and the process's peak memory. Targets: first index ≤ 60 s on 2 cores, update ≤ 5 s,
peak memory ≤ 500 MB; exit status 1 when one is missed. ``--smoke``: 200 files; the targets are printed,
and only a wrong update (not exactly the 20 changed files parsed again) sets the exit status.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from codejury.repocontext.index import build_index
from codejury.repocontext.store import IndexCache

_TEXT = (
    "account order cart item price total user session token cache index query parse render load save "
    "update delete create fetch send retry queue worker event stream buffer reader writer config option "
    "limit batch report invoice payment refund customer address shipping stock warehouse product review "
    "rating search filter sort page cursor encode decode hash verify sign"
)
WORDS = _TEXT.split()


def _name(rng: random.Random, style: str) -> str:
    parts = rng.sample(WORDS, 3)
    if style == "snake":
        return "_".join(parts)
    return parts[0] + "".join(p.title() for p in parts[1:])


def _python_file(rng: random.Random, names: list[str], module: int) -> str:
    out = ["import os", "from typing import Any", "", f"LIMIT_{module} = {rng.randint(1, 999)}", ""]
    cls = _name(rng, "camel").title()
    out.append(f"class {cls}:")
    out.append(f'    """{" ".join(rng.sample(WORDS, 8))}."""')
    for _ in range(8):
        fn = _name(rng, "snake")
        callee = rng.choice(names)
        out += [
            "",
            f"    def {fn}(self, {rng.choice(WORDS)}: Any, {rng.choice(WORDS)}_id: int) -> Any:",
            f'        """{" ".join(rng.sample(WORDS, 6))}."""',
            f"        {rng.choice(WORDS)} = {callee}({rng.choice(WORDS)}_id)",
            f"        if {rng.choice(WORDS)} > LIMIT_{module}:",
            f"            return self.{rng.choice(WORDS)}_{rng.choice(WORDS)}",
            f"        for {rng.choice(WORDS)} in range({rng.randint(2, 50)}):",
            f"            os.environ.get('{rng.choice(WORDS).upper()}')",
            f"        return {rng.choice(WORDS)}",
        ]
    for _ in range(8):
        fn = names[module * 8 + rng.randint(0, 7)] if rng.random() < 0.9 else _name(rng, "snake")
        out += [
            "",
            "",
            f"def {fn}({rng.choice(WORDS)}_id: int) -> int:",
            f'    """{" ".join(rng.sample(WORDS, 7))}."""',
            f"    value = {rng.choice(names)}({rng.choice(WORDS)}_id) + {rng.randint(1, 9)}",
            f"    return value * {rng.randint(2, 9)}",
        ]
    return "\n".join(out) + "\n"


def _typescript_file(rng: random.Random, names: list[str], module: int) -> str:
    out = [f'import {{ {rng.choice(names)} }} from "./m{rng.randint(0, 99)}";', ""]
    out.append(f"export interface {_name(rng, 'camel').title()} {{ id: number; {rng.choice(WORDS)}: string; }}")
    cls = _name(rng, "camel").title()
    out.append(f"export class {cls} {{")
    for _ in range(8):
        out += [
            f"  {_name(rng, 'camel')}({rng.choice(WORDS)}: number): number {{",
            f"    const {rng.choice(WORDS)} = {rng.choice(names)}({rng.choice(WORDS)});",
            f"    if ({rng.choice(WORDS)} > {rng.randint(1, 99)}) {{ return {rng.randint(0, 9)}; }}",
            f"    return this.{_name(rng, 'camel')}({rng.randint(0, 9)});",
            "  }",
        ]
    out.append("}")
    for _ in range(8):
        out += [
            "",
            f"export function {names[module * 8 + rng.randint(0, 7)]}({rng.choice(WORDS)}Id: number): number {{",
            f"  return {rng.choice(names)}({rng.choice(WORDS)}Id) * {rng.randint(2, 9)};",
            "}",
            f"export const {_name(rng, 'camel')} = (x: number) => x + {rng.randint(1, 9)};",
        ]
    return "\n".join(out) + "\n"


def _go_file(rng: random.Random, names: list[str], module: int) -> str:
    out = ["package app", "", 'import "fmt"', ""]
    typ = _name(rng, "camel").title()
    out += [f"type {typ} struct {{", f"\t{rng.choice(WORDS).title()} int", "}", ""]
    for _ in range(8):
        out += [
            f"func (r *{typ}) {_name(rng, 'camel').title()}({rng.choice(WORDS)} int) int {{",
            f"\tv := {rng.choice(names)}({rng.choice(WORDS)})",
            f'\tfmt.Println("{rng.choice(WORDS)}", v)',
            f"\treturn v + r.{rng.choice(WORDS).title()}",
            "}",
            "",
        ]
    for _ in range(8):
        out += [
            f"func {names[module * 8 + rng.randint(0, 7)]}({rng.choice(WORDS)} int) int {{",
            f"\treturn {rng.choice(names)}({rng.choice(WORDS)}) * {rng.randint(2, 9)}",
            "}",
            "",
        ]
    return "\n".join(out)


def generate(root: Path, files: int, seed: int = 7) -> list[Path]:
    """Write ``files`` source files under ``root`` (50 % Python, 25 % TypeScript, 25 % Go)."""
    rng = random.Random(seed)
    names = [_name(rng, "snake") for _ in range(files * 8)]
    written: list[Path] = []
    for i in range(files):
        kind = ("py", "py", "ts", "go")[i % 4]
        folder = root / f"pkg{i // 200:03d}" / f"mod{i // 20 % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        maker = {"py": _python_file, "ts": _typescript_file, "go": _go_file}[kind]
        path = folder / f"file{i:05d}.{kind}"
        path.write_text(maker(rng, names, i), encoding="utf-8")
        written.append(path)
    return written


def change(paths: list[Path], count: int, seed: int = 11) -> None:
    """Edit ``count`` files: a new function appended to each."""
    rng = random.Random(seed)
    for path in rng.sample(paths, count):
        body = path.read_text(encoding="utf-8")
        if path.suffix == ".py":
            body += f"\n\ndef added_{rng.randint(0, 10**6)}(x: int) -> int:\n    return x + 1\n"
        elif path.suffix == ".ts":
            body += f"\nexport function added{rng.randint(0, 10**6)}(x: number): number {{ return x + 1; }}\n"
        else:
            body += f"\nfunc added{rng.randint(0, 10**6)}(x int) int {{\n\treturn x + 1\n}}\n"
        path.write_text(body, encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, help="files to generate (default 10,000; 200 with --smoke)")
    ap.add_argument("--smoke", action="store_true", help="smoke size: seconds, targets printed, not enforced")
    args = ap.parse_args()
    args.files = args.files or (200 if args.smoke else 10_000)
    if args.smoke:
        print(f"smoke size: {args.files} files")
    with tempfile.TemporaryDirectory(prefix="codejury-index-bench-") as tmp:
        repo, cache_dir = Path(tmp) / "repo", Path(tmp) / "cache"
        paths = generate(repo, args.files)
        size = sum(p.stat().st_size for p in paths)
        print(f"repository: {len(paths)} files, {size / 1e6:.1f} MB")
        cache = IndexCache(cache_dir)
        t = time.perf_counter()
        first = build_index(repo, commit="c1", cache=cache)
        first_s = time.perf_counter() - t
        print(f"first index:  {first_s:6.2f} s  ({first.stats.summary()}; {first.tokens.size:,} terms)")
        print(f"peak memory so far: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        del first
        change(paths, 20)
        t = time.perf_counter()
        update = build_index(repo, commit="c2", cache=IndexCache(cache_dir))
        update_s = time.perf_counter() - t
        print(f"update (20 files changed): {update_s:6.2f} s  ({update.stats.summary()})")
        updated_ok = update.stats.parsed == 20
        del update
        t = time.perf_counter()
        again = build_index(repo, commit="c2", cache=IndexCache(cache_dir))
        print(f"same commit again: {time.perf_counter() - t:6.2f} s  ({again.stats.summary()})")
        t = time.perf_counter()
        hits = again.search("refund payment customer", k=5)
        print(f"search: {(time.perf_counter() - t) * 1000:.1f} ms, best {again.path_of(hits[0][0]) if hits else '-'}")
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak memory: {peak_mb:.0f} MB")
        ok = first_s <= 60 and update_s <= 5 and peak_mb <= 500 and updated_ok
        print("targets (first ≤ 60 s, update ≤ 5 s with 20 parsed, memory ≤ 500 MB):", "met" if ok else "NOT met")
        if args.smoke:
            return 0 if updated_ok else 1
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
