"""Every benchmark of ``make bench`` runs at its smoke size (``--smoke``): seconds each, the scripted
model and the fake forges and provider only, in a process of its own, as ``make bench`` runs it.

A smoke run checks that the benchmark still runs and measures: it fails when the benchmark exits
non-zero, prints a traceback, or leaves out a figure it prints at full size. Speed targets are
printed at smoke size and not enforced there (the numbers of a few reviews on a busy machine say
nothing about them); guarantees a benchmark checks on every run (no delivery or finding lost,
nothing posted twice) still set its exit status.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
NUMBER = r"\d[\d,]*(?:\.\d+)?"

# benchmark: the figure lines its smoke run must print (regular expressions, searched line by line)
FIGURES: dict[str, list[str]] = {
    "engine": [
        rf"^\s+10\s+1000\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$",  # scale: files, lines, diff MiB, wall s, peak RSS MiB
        rf"seconds per 1,000 changed lines: {NUMBER}",
        rf"^\s+total\s+{NUMBER}\s+{NUMBER}\s+ratio {NUMBER} \(target <= 0\.33: (met|NOT met)\)$",  # token economy
        *(  # bounds
            rf"^\s+{what}.*: {NUMBER} s, budget {NUMBER} s, [+-]{NUMBER} ms$"
            for what in ("grep", "read_file", "routing document", "instructions template")
        ),
    ],
    "publish": [
        rf"^gitlab first review, 5 findings: {NUMBER} API calls, {NUMBER} s",
        rf"^gitlab re-review, 10 earlier threads, 2 fixed: {NUMBER} API calls, {NUMBER} s",
        rf"^github first review, 5 findings: {NUMBER} API calls, {NUMBER} s",
        rf"^github re-review, 10 earlier threads, 2 fixed: {NUMBER} API calls, {NUMBER} s",
    ],
    "run": [
        r"the embedded model is not loaded",
        rf"^lite-tier review .*wall {NUMBER} s, peak RSS {NUMBER} MiB",
        rf"^\s+total\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$",
        rf"^demo review wall time: min {NUMBER} s, max {NUMBER} s",
    ],
    "stats": [
        rf"^codejury stats over 1,000 reviews .*: best {NUMBER} s",
        rf"^recording one review into that store: median {NUMBER} ms, p95 {NUMBER} ms",
        rf"^recording with the store down: hung server {NUMBER} s .*refused port {NUMBER} s",
        rf"^closing the recorder with the store down: {NUMBER} ms",
        rf"^checking the daily caps against the hung server: {NUMBER} s",
    ],
    "dashboard": [
        rf"^codejury dashboard --since all over 1,000 reviews .*best {NUMBER} s",
        rf"^codejury dashboard --since 7d over 1,000 reviews .*best {NUMBER} s",
        rf"^in-process: .*rendering {NUMBER} s",
    ],
    "telemetry": [
        *(rf"^\s+{name}\s+median\s+{NUMBER} ms\s+p90\s+{NUMBER} ms" for name in ("nothing configured", "both")),
        rf"a stage span while tracing is off: {NUMBER} ns",
        rf"a trace collector that refuses: review median {NUMBER} ms, [+-]{NUMBER} ms \(target <= 2 s\)",
        rf"a Pushgateway that never answers: review median {NUMBER} ms, [+-]{NUMBER} ms \(target <= 2 s\)",
    ],
    "index": [
        rf"^first index:\s+{NUMBER} s",
        rf"^update \(20 files changed\):\s+{NUMBER} s .*\(20 parsed",
        rf"^peak memory: {NUMBER} MB",
    ],
    "retrieval": [
        rf"^BM25 alone, first index: {NUMBER} s, {NUMBER} MB on disk",
        rf"^with vectors, first index: {NUMBER} s \(embedding {NUMBER} s, .*\), {NUMBER} MB on disk",
        rf"^with vectors, update \(20 files changed\): {NUMBER} s \(20 chunks embedded again",
        *(
            rf"^search latency, {re.escape(m)}: p50 {NUMBER} ms, p99 {NUMBER} ms"
            for m in ("BM25", "hybrid", "hybrid+rerank")
        ),
        r"^recall@5, queries from the other hunks:$",
        rf"^Diff Level\s+20(\s+{NUMBER} \(\s*\d+\)){{4}}$",  # BM25, vectors, hybrid, hybrid+rerank
    ],
    "analyzers": [
        rf"^demo: {NUMBER}/4 planted problems with evidence",
        rf"^\s+seconds: \{{'\w+': {NUMBER}",
        rf"^total: {NUMBER}/{NUMBER} planted problems with evidence",
    ],
    "service": [
        r"^deliveries lost: 0$",
        r"^reviews run: [1-9]\d* for 6 pushes",
        rf"^webhook response: p50 {NUMBER} ms, p99 {NUMBER} ms",
        r"^merge requests not reviewed at their latest head: 0$",
    ],
    "service_pg": [
        r"^deliveries accepted: 20/20$",
        r"^deliveries lost: 0$",
        r"^reviews run: [1-9]\d* by 1 workers for 20 pushes on 2 merge requests",
        r"^heads reviewed: [1-9]\d*/20;",
        r"^duplicate reviews: \d+ .*; duplicate comments: 0$",
        r"^merge requests not reviewed at their latest head: 0$",
        rf"^webhook response: p50 {NUMBER} ms, p99 {NUMBER} ms",
        rf"^serving process while sending: {NUMBER} ms of CPU per delivery; load average {NUMBER} on \d+ cores",
        rf"^first fetch of a 200-file repository: {NUMBER} s, {NUMBER} MB on disk",
        rf"^update fetch \(1 file changed\): median {NUMBER} s, .*\+{NUMBER} KB each",
        rf"^cache hit rate: {NUMBER}/{NUMBER} reviews \({NUMBER}%\)",
    ],
    "repo_cache": [
        rf"^first fetch of a {NUMBER}-file repository: {NUMBER} s, {NUMBER} MB on disk",
        rf"^update fetch \(20 files changed\): {NUMBER} s, \+{NUMBER} MB \({NUMBER} MB on disk in all\)",
        rf"^cache hit rate: {NUMBER}/{NUMBER} reviews \({NUMBER}%\)",
    ],
    "injection": [
        r"^injection attempts detected: \d+/40 ",
        r"^benign texts flagged: \d+/40 ",
        rf"^time per text: {NUMBER} ms",
    ],
    "intent": [
        r"^  py-report-search-sql: \(a\) breaks: 1 finding\(s\) cite it, unmet; \(b\) meets: 0 .* met",
        r"^breaks: cited in 2/2 cases \(judged in 2/2",
        r"^meets: cited in 0/2 cases \(a false finding\), judged met in 2/2",
        rf"^wall time per review: p50 {NUMBER} s, max {NUMBER} s",
    ],
    "chaos": [
        r"^completion rate: \d+/3 ",
        r"^findings lost from reviewers that succeeded: 0 ",
        rf"^wall time per review: p50 {NUMBER} s, p99 {NUMBER} s",
    ],
}


@pytest.fixture
def scratch() -> Iterator[Path]:
    """The benchmark's temporary directory (its TMPDIR), where it can be seen whether it removed what it made there:
    `make bench` must not fill /tmp run after run. Under the system's own, open to other users to pass through (the
    PostgreSQL server a benchmark starts runs as a user of its own), removed after the test."""
    folder = Path(tempfile.mkdtemp(prefix="codejury-bench-tmp-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_every_benchmark_has_a_smoke_run() -> None:
    """Every ``benchmarks/*.py`` is a benchmark, but for helpers that benchmarks import (``_name.py``)."""
    assert sorted(FIGURES) == sorted(p.stem for p in BENCHMARKS.glob("*.py") if not p.stem.startswith("_"))


@pytest.mark.benchmark
@pytest.mark.parametrize("name", list(FIGURES))
def test_benchmark_runs_at_smoke_size(name: str, tmp_path: Path, scratch: Path) -> None:
    # codejury's cache where a user's would be (no CODEJURY_REPO_CACHE from the suite): a benchmark writes nothing
    # there, as `make bench` must leave the cache of the person running it as it found it.
    cache = tmp_path / "user-cache"
    env = {k: v for k, v in os.environ.items() if k != "CODEJURY_REPO_CACHE"} | {
        "CODEJURY_CACHE_DIR": str(cache),
        "TMPDIR": str(scratch),
    }
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{name}.py"), "--smoke"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    shown = f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
    assert done.returncode == 0, shown
    assert "Traceback (most recent call last)" not in done.stdout + done.stderr, shown
    assert done.stdout.startswith("smoke size:") or "\nsmoke size:" in done.stdout, shown
    unavailable = re.search(r"^PostgreSQL is not available here\b.*$", done.stdout, re.MULTILINE)
    if unavailable:  # a benchmark that needs a server this machine cannot start says so and exits 0 at smoke size
        pytest.skip(unavailable[0])
    missing = [figure for figure in FIGURES[name] if not re.search(figure, done.stdout, re.MULTILINE)]
    assert not missing, f"figures not printed: {missing}\n{shown}"
    assert not cache.exists() or not any(cache.iterdir()), sorted(p.name for p in cache.iterdir())
    assert not any(scratch.iterdir()), f"left in its temporary directory: {sorted(p.name for p in scratch.iterdir())}"
