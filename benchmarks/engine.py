"""Engine benchmarks with the scripted zero-latency model (no real model; part of ``make bench``).

1. Scale: a synthetic change of N files / M changed lines, from diff text to rendered
   markdown and JSON, each size in a fresh process: wall time and peak RSS.
   Target at 500 files / 50,000 lines: at most 3 s and 300 MB.
2. Token economy on a full-tier change (seven reviewers): input tokens of every reviewer's
   first request as laid out (tools read the change on demand), against the same reviewers
   with the whole change context pasted into every prompt. Target: at most one third.
3. Bounds: how long a call that runs into its time budget takes in all, against the budget: a
   read-only tool's (a catastrophic grep pattern, a 70 MB file read whole), and a fetch from a server
   that never answers (the routing document, the organisation's instructions template). Target: the
   budget and a few milliseconds. (The tests check that each budget fires; the figures are here.)

Usage: python benchmarks/engine.py [--smoke] [scale N_FILES LINES | tokens | bounds]
``--smoke``: one small size (10 files / 1,000 lines), the token economy of the full-tier change
alone and the bounds, in seconds; the targets are printed, not enforced.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = [(50, 5_000), (100, 10_000), (250, 25_000), (500, 50_000)]
SMOKE_SIZES = [(10, 1_000)]


def synthetic_diff(n_files: int, lines: int) -> str:
    """``n_files`` new Python files with ``lines`` added lines in all."""
    per_file = lines // n_files
    out = []
    for i in range(n_files):
        path = f"src/pkg{i % 20}/module_{i}.py"
        body = [f"+def function_{i}_{j}(value: int) -> int:  # line {j}" for j in range(per_file)]
        out.append(
            f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n"
            f"+++ b/{path}\n@@ -0,0 +1,{per_file} @@\n" + "\n".join(body) + "\n"
        )
    return "".join(out)


async def scale_once(n_files: int, lines: int) -> dict[str, Any]:
    from codejury.change.diffparse import parse_diff
    from codejury.change.types import ChangeSet
    from codejury.config import Settings
    from codejury.findings import Review
    from codejury.pipeline import ReviewOptions, review
    from codejury.plugins import Plugins
    from codejury.record.events import EventLog
    from codejury.render.jsonout import review_to_json
    from codejury.render.markdown import render_review_markdown
    from codejury.testing.scripted import Final, ScriptedResolver, finding

    text = synthetic_diff(n_files, lines)
    first = "src/pkg0/module_0.py"
    scripts = {"standard": [Final([finding(first, 1, "Example finding")])], "top": [Final([])]}
    started = time.perf_counter()
    change = ChangeSet(files=parse_diff(text))
    with EventLog(None, run_id="bench") as events:
        opts = ReviewOptions(
            settings=Settings(
                models={"top": "scripted:top", "standard": "scripted:standard", "light": "scripted:light"}
            ),
            env={},
            events=events,
            warn=lambda _msg: None,
            plugins=Plugins(ScriptedResolver(scripts).plugin_manager()),
        )
        result = await review(change, opts)
    assert isinstance(result, Review)
    rendered = render_review_markdown(result) + review_to_json(result)
    wall = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "files": n_files,
        "changed_lines": sum(f.changed_lines for f in change.files),
        "diff_mib": round(len(text) / 2**20, 1),
        "wall_s": round(wall, 2),
        "peak_rss_mib": round(peak_mib),
        "rendered_chars": len(rendered),
        "tier": result.tier,
    }


def run_scale(sizes: list[tuple[int, int]]) -> list[dict[str, Any]]:
    results = []
    print("scale (scripted zero-latency model; each size in a fresh process; diff text -> rendered review):")
    print(f"  {'files':>6} {'lines':>7} {'diff MiB':>8} {'wall s':>7} {'peak RSS MiB':>12}")
    for n_files, lines in sizes:
        proc = subprocess.run(
            [sys.executable, __file__, "scale", str(n_files), str(lines)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise SystemExit(f"scale {n_files} {lines} exited {proc.returncode}:\n{proc.stderr.strip()[-3000:]}")
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        results.append(r)
        print(f"  {r['files']:>6} {r['changed_lines']:>7} {r['diff_mib']:>8} {r['wall_s']:>7} {r['peak_rss_mib']:>12}")
    last = results[-1]
    if (last["files"], last["changed_lines"]) == SIZES[-1]:
        ok = last["wall_s"] <= 3 and last["peak_rss_mib"] <= 300
        print(f"  target at 500 files / 50,000 lines: <= 3 s and <= 300 MiB: {'met' if ok else 'NOT met'}")
    else:
        print("  target at 500 files / 50,000 lines: <= 3 s and <= 300 MiB: not measured at this size")
    per_k = [r["wall_s"] / (r["changed_lines"] / 1000) for r in results]
    print("  seconds per 1,000 changed lines: " + ", ".join(f"{x:.3f}" for x in per_k))
    return results


def full_tier_change(tmp: Path, *, extra: bool = False) -> Any:
    """The demo change plus inventory, auth and changelog files; team rules and AGENTS.md on the base side."""
    from codejury.change.sources import GitSource

    repo = tmp / "repo"
    subprocess.run(
        [sys.executable, str(ROOT / "examples/demo/build_repo.py"), str(repo)], check=True, capture_output=True
    )
    env = {
        "GIT_AUTHOR_NAME": "B",
        "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "B",
        "GIT_COMMITTER_EMAIL": "b@example.com",
        "HOME": str(tmp),
        "PATH": "/usr/bin:/bin",
    }

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=repo, env=env, check=True, capture_output=True)

    git("checkout", "-q", "main")
    (repo / ".codejury/rules").mkdir(parents=True)
    (repo / ".codejury/rules/db.md").write_text("If you need a customer, use shop.db.get_customer.\n")
    git("add", "-A")
    git("commit", "-qm", "team rules")
    git("checkout", "-q", "feature/reports-search-payments")
    git("rebase", "-q", "main")
    (repo / "CHANGELOG.md").write_text("# Changelog\n\n## 0.2.0\n- Order report, product search, card payments.\n")
    # more than 100 changed lines and a security-sensitive path: the full tier
    shutil.copy(ROOT / "benchmarks/lite_change/change/shop/inventory.py", repo / "shop/inventory.py")
    (repo / "shop/auth").mkdir()
    (repo / "shop/auth/__init__.py").write_text("")
    (repo / "shop/auth/tokens.py").write_text(
        '"""Session tokens."""\n\nimport hashlib\nimport time\n\n\n'
        "def make_token(user_id: int) -> str:\n"
        '    """A session token for ``user_id``."""\n'
        '    return hashlib.md5(f"{user_id}:{time.time()}".encode()).hexdigest()\n'
    )
    if extra:  # a larger change: two real modules of ours added as new files (~500 lines)
        shutil.copy(ROOT / "src/codejury/pipeline.py", repo / "shop/pipeline.py")
        shutil.copy(ROOT / "src/codejury/judge/dedup.py", repo / "shop/dedup.py")
    git("add", "-A")
    git("commit", "-qm", "changelog")
    source = GitSource(repo, base="main")
    return source, source.load()


async def run_tokens(*, extra: bool) -> dict[str, Any]:
    from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from codejury.agents import prompts
    from codejury.config import Settings
    from codejury.findings import Review
    from codejury.models.pricing import estimate_tokens
    from codejury.models.profiles import CapabilityProfile, ResolvedModel
    from codejury.pipeline import ReviewOptions, configure, review
    from codejury.plugins import Plugins
    from codejury.record.events import EventLog
    from codejury.reviewers.roster import shared_rules
    from codejury.testing.scripted import ScriptedResolver
    from codejury.workspace import numbered_patch

    first_requests: dict[str, int] = {}

    def resolver(spec: str, config: object) -> ResolvedModel:
        name = spec.split(":", 1)[1]

        async def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if name not in first_requests:
                text = (info.instructions or "") + "".join(
                    str(getattr(p, "content", "")) for m in messages for p in m.parts
                )
                tools = json.dumps([t.parameters_json_schema for t in info.function_tools]) + "".join(
                    (t.name + (t.description or "")) for t in info.function_tools
                )
                first_requests[name] = estimate_tokens(text + tools)
            args = {"decisions": []} if name == "coordinator" else {"findings": []}
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])

        return ResolvedModel(spec=spec, model=FunctionModel(fn, model_name=spec), profile=CapabilityProfile())

    names = ["security", "performance", "code_quality", "documentation", "release", "agents_md", "compliance"]
    settings = Settings(
        models={"top": "scripted:top", "standard": "scripted:standard", "light": "scripted:light"},
        reviewer_models={n: f"scripted:{n}" for n in names},
    )

    class Measuring(ScriptedResolver):
        """The scripted-models plugin, with models that measure their first request."""

        def __call__(self, spec: str, config: object) -> ResolvedModel:
            return resolver(spec, config)

    with tempfile.TemporaryDirectory() as tmp:
        source, change = full_tier_change(Path(tmp), extra=extra)
        with source, EventLog(None, run_id="bench") as events:
            pm = Measuring({}).plugin_manager()
            opts = ReviewOptions(settings=settings, env={}, events=events, warn=lambda _m: None, plugins=Plugins(pm))
            result = await review(change, opts)
            config = await configure(change, opts)
        assert isinstance(result, Review)
        # the roster's reviewers that ran (the review also reports grounding's checks, such as "security:check")
        ran = [r.name for r in result.reviewers if r.name in config.reviewers]
        context = prompts.shared_context(
            change, change.files, repo_instructions=config.repo_instructions, custom_rules=config.custom_rules
        )
        everything = context + "".join(numbered_patch(f) for f in change.files)
        pasted = {
            n: estimate_tokens(
                prompts.static_prompt(shared_rules(), config.prompt_sections, config.reviewers[n].prompt)
            )
            + estimate_tokens(everything)
            for n in ran
        }
    laid_out = sum(first_requests[n] for n in ran)
    pasted_total = sum(pasted.values())
    lines = sum(f.changed_lines for f in change.files)
    print(f"\ntoken economy on a full-tier change of {len(change.files)} files, {lines} changed lines")
    print(f"({len(ran)} reviewers: {', '.join(ran)}):")
    print(f"  {'reviewer':<14} {'first request':>13} {'context pasted':>14}")
    for n in ran:
        print(f"  {n:<14} {first_requests[n]:>13} {pasted[n]:>14}")
    ratio = laid_out / pasted_total
    verdict = "met" if ratio <= 0.33 else "NOT met"
    print(f"  {'total':<14} {laid_out:>13} {pasted_total:>14}   ratio {ratio:.2f} (target <= 0.33: {verdict})")
    print("  (tokens estimated at 3.5 characters each, tool definitions included in the first request)")
    return {"reviewers": ran, "first_requests": first_requests, "pasted": pasted, "ratio": round(ratio, 3)}


def run_bounds() -> None:
    """Each bounded call's wall time beside its budget."""
    from codejury_fakes.routing_server import RoutingServer

    from codejury.agents.tools import RepoTools
    from codejury.remote_config import fetch_routing
    from codejury.reviewers.instructions import fetch_template

    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="codejury-bench-bounds-") as tmp:
        root = Path(tmp)
        for i in range(6):
            (root / f"f{i}.txt").write_text("x" * 3000 + "\n")
        with (root / "big.txt").open("wb") as fh:
            for _ in range(64):
                fh.write(b"short line\n" * 100_000)  # 70 MB of short lines
        for name, budget, call in (
            ("grep '(x+x+)+y' over 6 lines of 3,000 x", 0.5, lambda t: t.grep("(x+x+)+y")),
            ("read_file of 70 MB, 6.4 million lines", 0.3, lambda t: t.read_file("big.txt", 50_000_000)),
        ):
            tools = RepoTools(root, {}, time_budget_s=budget)
            started = time.perf_counter()
            answer = call(tools)
            rows.append((name, budget, time.perf_counter() - started))
            assert "time limit" in answer, answer[:200]
    with RoutingServer() as server:
        server.hang_s = 60.0  # silent until it stops
        for name, fetch in (("routing document", fetch_routing), ("instructions template", fetch_template)):
            started = time.perf_counter()
            assert asyncio.run(fetch(server.url, warn=lambda _: None, timeout_s=0.5)) is None
            rows.append((f"{name} from a server that never answers", 0.5, time.perf_counter() - started))
    print("\nbounds (a call that runs into its time budget: wall time in all, against the budget):")
    for name, budget, took in rows:
        print(f"  {name}: {took:.2f} s, budget {budget:g} s, {(took - budget) * 1000:+.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", nargs="?", choices=["scale", "tokens", "bounds"], help="one part only (default: all)")
    parser.add_argument("size", nargs="*", type=int, help="with scale: N_FILES LINES, measured in this process")
    parser.add_argument("--smoke", action="store_true", help="smoke size: seconds, targets printed, not enforced")
    args = parser.parse_args()
    if args.part == "scale" and len(args.size) == 2:
        print(json.dumps(asyncio.run(scale_once(*args.size))))
        return
    if args.smoke:
        print("smoke size: scale at 10 files / 1,000 lines, token economy of the full-tier change alone, bounds")
    if args.part in (None, "scale"):
        run_scale(SMOKE_SIZES if args.smoke else SIZES)
    if args.part in (None, "tokens"):
        asyncio.run(run_tokens(extra=False))
        if not args.smoke:
            asyncio.run(run_tokens(extra=True))
    if args.part in (None, "bounds"):
        run_bounds()


if __name__ == "__main__":
    main()
