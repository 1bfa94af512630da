"""Intent benchmark: do the reviewers report a linked issue's criterion the change breaks, and only that one?

For each golden-set case (``src/codejury/eval/golden``) the change is opened as a pull request on the fake GitHub,
with ``Fixes #1`` in its description and issue #1 stating two acceptance criteria written from the case's own diff
(never from its expected comments):

- (a) one the change breaks: the file it changes most "is left as it was: the change does not modify it";
- (b) one the change meets: "the change adds `NAME` to that file", NAME a name on an added line that the old file
  does not have.

The review runs as ``codejury review --url`` does (the issue read from the fake forge, fenced, screened and budgeted
as for any linked issue; analyzers off, so only the models speak), and each case prints, per criterion, the findings
that cite it and what the review said of it (unmet, met, not_judged). The totals: how often (a) was cited, how often
(b) was wrongly cited or judged met, and the wall time per review.

Usage: python benchmarks/intent.py [--cases N] [--model SPEC] [--model-for AGENT=SPEC] [--plugin MOD] [--smoke]
(``--smoke``: 2 cases on the scripted model, which cites (a) and claims (b) met, to check the path, not a model.)
On the embedded model: ``python benchmarks/intent.py --model local:qwen2.5-coder-1.5b`` (minutes per case).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "src" / "codejury" / "eval" / "golden" / "cases.jsonl"
REPO = "octo/app"
TOKEN = "ghs_intent_bench_token"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
_COMMON = frozenset(
    {"return", "import", "from", "const", "function", "async", "await", "self", "this", "true", "false", "null",
     "None", "True", "False", "def", "class", "public", "private", "static", "void", "string", "String", "else",
     "elif", "while", "print", "package", "func", "type", "interface", "export", "default", "final", "throw"}
)  # fmt: skip


@dataclass(frozen=True)
class Criteria:
    path: str
    breaks: str
    meets: str
    line: int
    """The first line the change adds to ``path`` (where the smoke run's finding points)."""


def case_files(tree: Path) -> dict[str, tuple[str | None, str | None]]:
    """{path: (base text, head text)} of the files that differ between ``tree/base`` and ``tree/head``."""
    sides = {side: {p.relative_to(tree / side).as_posix(): p for p in (tree / side).rglob("*") if p.is_file()}
             for side in ("base", "head")}  # fmt: skip
    files: dict[str, tuple[str | None, str | None]] = {}
    for path in sorted(set(sides["base"]) | set(sides["head"])):
        old, new = (sides[s][path].read_text(encoding="utf-8") if path in sides[s] else None for s in ("base", "head"))
        if old != new:
            files[path] = (old, new)
    return files


def criteria_for(files: dict[str, tuple[str | None, str | None]]) -> Criteria | None:
    """The two criteria of a case, from its diff alone: the file with the most added lines, and a name those lines
    add that the old file does not have."""
    best: tuple[int, str, list[str], int] | None = None
    for path, (old, new) in files.items():
        if new is None:
            continue
        matcher = difflib.SequenceMatcher(None, (old or "").splitlines(), new.splitlines(), autojunk=False)
        spans = [(j1, j2) for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("insert", "replace")]
        added = [line for j1, j2 in spans for line in new.splitlines()[j1:j2]]
        if spans and (best is None or len(added) > best[0]):
            best = (len(added), path, added, spans[0][0] + 1)
    if best is None:
        return None
    _, path, added, first = best
    before = files[path][0] or ""
    name = next((n for line in added for n in _NAME.findall(line) if n not in _COMMON and n not in before), None)
    if name is None:
        return None
    return Criteria(
        path,
        f"`{path}` is left as it was: the change does not modify this file",
        f"the change adds `{name}` to `{path}`",
        first,
    )


def issue_body(criteria: Criteria) -> str:
    return f"What this pull request is for.\n\n## Acceptance criteria\n- {criteria.breaks}\n- {criteria.meets}\n"


def scripted_resolver(criteria: Criteria) -> Any:
    """The smoke run's models: a reviewer that cites (a), a walkthrough that claims (b) met with its name."""
    from codejury.testing.scripted import Final, Raw, ScriptedResolver
    from codejury.testing.scripted import finding as model_finding

    cited = model_finding(criteria.path, criteria.line, "The change modifies a file the issue says stays as it was",
                          category="intent", body=f'Acceptance criterion "{criteria.breaks}" is not met.')  # fmt: skip
    name = criteria.meets.split("`")[1]
    draft = {"summary": "", "groups": [], "criteria": [{"number": 2, "met": True, "evidence": f"adds `{name}`"}]}
    return ScriptedResolver(
        {"reviewer": [Final([cited])], "coordinator": [Raw({"decisions": []})]},
        walkthroughs={"coordinator": [Raw(draft)]},
    )


def review_case(case: Any, number: int, args: argparse.Namespace, folder: Path) -> dict[str, Any] | None:
    """Open the case as pull request ``number`` with its issue, review it, and return the review's JSON."""
    from click.testing import CliRunner
    from codejury_fakes.github import FakeGitHub

    from codejury.cli import cli

    files = case_files(Path(case.tree))
    criteria = criteria_for(files)
    if criteria is None:
        print(f"  {case.id}: no added name to write criterion (b) from; left out")
        return None
    config = folder / "intent.toml"
    config.write_text("analyzers = false\n", encoding="utf-8")
    flags = [f"--plugin={p}" for p in args.plugin] + ([f"--model={args.model}"] if args.model else [])
    flags += [f"--model-for={m}" for m in args.model_for]
    with FakeGitHub(REPO) as gh:
        gh.add_user("alice")
        gh.add_token(TOKEN, kind="actions", permissions={"contents": "read"})
        gh.add_issue(1, "What the change must do", issue_body(criteria))
        gh.add_pr(number=number, author="alice", files=files, title=case.title or case.id,
                  body=f"{case.description or ''}\n\nFixes #1")  # fmt: skip
        # The repository cache in the run's own folder: the head's tree is not served, so the reviewers read the
        # changed files through the forge's API, as a review does where the cache cannot fetch.
        os.environ |= {
            "GITHUB_TOKEN": TOKEN,
            "CODEJURY_GITHUB_URL": gh.api_url,
            "CODEJURY_REPO_CACHE": str(folder / "repos"),
        }
        command = ["review", *flags, "--url", f"{gh.api_url}/{REPO}/pull/{number}", "--format", "json",
                   "--fail-on", "never", "--config", str(config)]  # fmt: skip
        resolver = scripted_resolver(criteria) if args.smoke else None
        started = time.monotonic()
        if resolver is not None:
            with resolver.active():
                result = CliRunner().invoke(cli, command, catch_exceptions=False)
        else:
            result = CliRunner().invoke(cli, command, catch_exceptions=False)
        wall = time.monotonic() - started
    if result.exit_code != 0:
        print(f"  {case.id}: the review exited {result.exit_code}: {result.stderr.strip().splitlines()[-1:]}")
        return None
    data: dict[str, Any] = json.loads(result.stdout)
    data["_wall_s"] = wall
    data["_criteria"] = criteria
    return data


def report(case_id: str, data: dict[str, Any]) -> tuple[str, str, int, int]:
    """One line per case; returns the status of (a) and (b) and how many findings cite each."""
    criteria: Criteria = data["_criteria"]
    by_text = {c["text"]: c for c in data.get("criteria", [])}
    a, b = by_text.get(criteria.breaks, {}), by_text.get(criteria.meets, {})
    cite_a, cite_b = len(a.get("cited_by", [])), len(b.get("cited_by", []))
    status_a, status_b = a.get("status", "absent"), b.get("status", "absent")
    print(f"  {case_id}: (a) breaks: {cite_a} finding(s) cite it, {status_a}; "
          f"(b) meets: {cite_b} finding(s) cite it, {status_b}; {len(data.get('findings', []))} findings; "
          f"{data['_wall_s']:.1f} s")  # fmt: skip
    return status_a, status_b, cite_a, cite_b


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cases", type=int, help="how many golden cases (default all; 2 with --smoke)")
    parser.add_argument("--model", help="the model of every reviewer, as codejury review --model")
    parser.add_argument("--model-for", action="append", default=[], help="AGENT=SPEC, as codejury review")
    parser.add_argument("--plugin", action="append", default=[], help="a plugin module, as codejury review")
    parser.add_argument("--smoke", action="store_true", help="smoke size: 2 cases on the scripted model")
    args = parser.parse_args(argv)
    from codejury.eval.dataset import load_cases

    cases = [c for c in load_cases(GOLDEN) if c.tree is not None]
    cases = cases[: args.cases or (2 if args.smoke else len(cases))]
    if args.smoke:
        args.plugin = [*args.plugin, "codejury.testing.scripted"]
        args.model = "scripted:reviewer"
        args.model_for = [*args.model_for, "coordinator=scripted:coordinator"]
        print(f"smoke size: {len(cases)} cases on the scripted model")
    else:
        print(f"{len(cases)} golden cases on {args.model or 'the configured models'}")
    statuses: list[tuple[str, str, int, int]] = []
    walls: list[float] = []
    with tempfile.TemporaryDirectory(prefix="codejury-intent-") as tmp:
        for number, case in enumerate(cases, 100):  # issue #1 is not one of the pull requests
            data = review_case(case, number, args, Path(tmp))
            if data is not None:
                statuses.append(report(case.id, data))
                walls.append(data["_wall_s"])
    n = len(statuses)
    if not n:
        print("no case was reviewed")
        return 1
    cited_a = sum(1 for s in statuses if s[2])
    judged_a = sum(1 for s in statuses if s[0] != "not_judged")
    cited_b = sum(1 for s in statuses if s[3])
    met_b = sum(1 for s in statuses if s[1] == "met")
    print(f"breaks: cited in {cited_a}/{n} cases (judged in {judged_a}/{n}; not judged in {n - judged_a}/{n})")
    print(f"meets: cited in {cited_b}/{n} cases (a false finding), judged met in {met_b}/{n}")
    print(f"wall time per review: p50 {statistics.median(walls):.1f} s, max {max(walls):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
