"""Benchmarks on the embedded model (``make bench``): wall time, peak memory, tokens, recall.

Measures, on this machine:
1. the review step of ``make demo`` (the bundled example change), run RUNS times: wall time,
   peak RSS, prompt/output tokens per reviewer, and which planted problems were found;
2. a lite-tier review of a ~90-line change (benchmarks/lite_change): wall time and peak RSS
   (target: at most 3 minutes).

Every figure printed is measured; results are also written to bench-results/ as JSON.
Usage: python benchmarks/run.py [--runs N] [--skip-demo] [--skip-lite] [--smoke]

``--smoke`` runs the same two reviews (one demo run) through the same ``codejury review`` command on
the scripted model instead: the embedded model is not loaded, so the figures time the review path
around the model (start-up, change, analyzers, rendering), and recall is not measured; nothing is
written to bench-results/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CODEJURY = Path(sys.executable).parent / "codejury"
RESULTS = ROOT / "bench-results"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}

# ``codejury`` with the scripted model in place of the embedded one (``--smoke``): every reviewer and the
# coordinator answer at once, with no findings.
SCRIPTED_CODEJURY = """\
from codejury.testing.scripted import Final, Raw, ScriptedResolver

resolver = ScriptedResolver({"reviewer": [Final([])], "coordinator": [Raw({"decisions": []})]})
from codejury.cli import main

with resolver.active():  # registered by --plugin codejury.testing.scripted
    main()
"""
SCRIPTED_ARGS = (
    "--plugin", "codejury.testing.scripted", "--model", "scripted:reviewer",
    "--model-for", "coordinator=scripted:coordinator",
)  # fmt: skip

PEAK_WRAPPER = (
    "import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(rc)"
)

# (id, path, line, words any of which in the title/body marks the finding as this problem)
PLANTED = [
    ("sql-injection", "shop/search.py", 8, ("sql", "injection", "query")),
    ("hardcoded-secret", "shop/payments.py", 6, ("key", "secret", "credential", "hardcod", "hard-cod")),
    ("n-plus-one", "shop/orders.py", 24, ("n+1", "n + 1", "query per", "each order", "loop", "queries")),
    ("stale-docstring", "shop/orders.py", 11, ("docstring", "tax")),
]


def _review_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEJURY_")}
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(key, None)
    return env


def run_review(repo: Path, label: str, *, scripted: bool = False) -> dict[str, Any]:
    """Run ``codejury review --format json`` in ``repo`` as a child process and measure it
    (``scripted``: on the scripted model instead of the embedded one). The review's JSON is written beside
    ``repo``, in the temporary folder ``demo_repo`` or ``lite_repo`` made for it (``review_and_remove``)."""
    out = repo.parent / "review.json"
    command = [sys.executable, "-c", SCRIPTED_CODEJURY] if scripted else [str(CODEJURY)]
    model_args = list(SCRIPTED_ARGS) if scripted else []
    started = time.monotonic()
    # a wrapper process per run, so the peak RSS reported is this run's alone
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            PEAK_WRAPPER,
            *command,
            "review",
            "--format",
            "json",
            "--output",
            str(out),
            "--fail-on",
            "never",
            *model_args,
        ],
        cwd=repo,
        env=_review_env(),
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - started
    stderr_lines = proc.stderr.strip().splitlines()
    peak_kib = int(stderr_lines[-1]) if stderr_lines and stderr_lines[-1].isdigit() else 0
    if proc.returncode != 0:
        raise SystemExit(f"{label}: codejury exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    review = json.loads(out.read_text())
    return {"label": label, "wall_s": round(wall, 1), "peak_rss_mib": round(peak_kib / 1024), "review": review}


def review_and_remove(repo: Path, label: str, *, scripted: bool) -> dict[str, Any]:
    """``run_review`` of ``repo``, then its temporary folder (``demo_repo``, ``lite_repo``) is removed, the review's
    JSON with it, whether the review succeeded or not."""
    try:
        return run_review(repo, label, scripted=scripted)
    finally:
        shutil.rmtree(repo.parent, ignore_errors=True)


def demo_repo() -> Path:
    dest = Path(tempfile.mkdtemp(prefix="codejury-demo-")) / "repo"
    subprocess.run(
        [sys.executable, str(ROOT / "examples/demo/build_repo.py"), str(dest)], check=True, stdout=subprocess.DEVNULL
    )
    return dest


def lite_repo() -> Path:
    dest = Path(tempfile.mkdtemp(prefix="codejury-lite-")) / "repo"
    src = ROOT / "benchmarks/lite_change"
    shutil.copytree(src / "base", dest)
    env = {**os.environ, **GIT_ENV}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=dest, env=env, check=True, stdout=subprocess.DEVNULL)

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "Stock items")
    git("checkout", "-q", "-b", "feature/reservations")
    shutil.copytree(src / "change", dest, dirs_exist_ok=True)
    git("add", "-A")
    git("commit", "-q", "-m", "Add reservations with expiry, low-stock report and restock plan")
    return dest


def planted_found(review: dict[str, Any]) -> dict[str, bool]:
    found = {}
    for pid, path, line, words in PLANTED:
        found[pid] = any(
            f["path"] == path
            and f["start_line"] - 3 <= line <= f["end_line"] + 3
            and any(w in (f["title"] + " " + f["body"]).lower() for w in words)
            for f in review["findings"]
        )
    return found


def print_run(result: dict[str, Any]) -> None:
    review = result["review"]
    print(
        f"\n{result['label']}: tier {review['tier']}, verdict {review['verdict']}, "
        f"wall {result['wall_s']} s, peak RSS {result['peak_rss_mib']} MiB, "
        f"{len(review['findings'])} findings"
    )
    print(f"  {'agent':<24} {'status':<7} {'prompt tok':>10} {'cached':>7} {'output tok':>10} {'seconds':>8}")
    rows = [*review["reviewers"], *([review["coordinator"]] if review.get("coordinator") else [])]
    for r in rows:
        print(
            f"  {r['name']:<24} {r['status']:<7} {r['input_tokens']:>10} {r['cache_read_tokens']:>7} "
            f"{r['output_tokens']:>10} {r['duration_s']:>8.1f}"
        )
    u = review["usage"]
    print(
        f"  {'total':<24} {'':<7} {u['input_tokens']:>10} {u['cache_read_tokens']:>7} "
        f"{u['output_tokens']:>10} {u['duration_s']:>8.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="demo review runs (default 3; 1 with --smoke)")
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--skip-lite", action="store_true")
    parser.add_argument(
        "--smoke", action="store_true", help="the scripted model instead of the embedded one; seconds, nothing written"
    )
    args = parser.parse_args()
    runs = 1 if args.smoke else args.runs
    if not CODEJURY.exists():
        raise SystemExit(f"{CODEJURY} not found: run `make install` first")
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    if args.smoke:
        print("smoke size: the scripted model (the embedded model is not loaded), one demo run; recall not measured")
    results: list[dict[str, Any]] = []
    if not args.skip_lite:
        lite = review_and_remove(lite_repo(), "lite-tier review (~90 changed lines)", scripted=args.smoke)
        print_run(lite)
        verdict = "within" if lite["wall_s"] <= 180 else "OVER"
        print(f"  target <= 180 s: {verdict}" + (" (scripted model)" if args.smoke else ""))
        results.append(lite)
    if not args.skip_demo:
        hits: dict[str, int] = {pid: 0 for pid, *_ in PLANTED}
        for i in range(runs):
            result = review_and_remove(demo_repo(), f"demo review, run {i + 1}/{runs}", scripted=args.smoke)
            print_run(result)
            results.append(result)
            if args.smoke:
                continue
            found = planted_found(result["review"])
            result["planted_found"] = found
            print("  planted problems found: " + ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in found.items()))
            for k, v in found.items():
                hits[k] += int(v)
        if not args.smoke:
            print(f"\nplanted problems found over {runs} demo runs:")
            for pid, n in hits.items():
                print(f"  {pid:<18} {n}/{runs}")
        walls = [r["wall_s"] for r in results if r["label"].startswith("demo")]
        print(f"demo review wall time: min {min(walls)} s, max {max(walls)} s")
    if args.smoke:
        return
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (RESULTS / f"bench-{stamp}.json").write_text(json.dumps(results, indent=1))
    print(f"\nraw results: {RESULTS / f'bench-{stamp}.json'}")


if __name__ == "__main__":
    main()
