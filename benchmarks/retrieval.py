"""Measure hybrid retrieval: the index with and without vectors, and search latency per step.

Usage: python benchmarks/retrieval.py [--files N] [--queries N] [--dimensions N] [--smoke]

Generates the repository of benchmarks/index.py (default 10,000 files), serves embeddings and a
reranker from FakeProviderServer on loopback (deterministic vectors, a fixed latency per request:
``--embed-ms``, ``--rerank-ms``), then prints:

- the index without vectors (BM25 alone) and with them: first build time and size on disk, and
  the update after 20 files change (only the changed chunks are embedded again);
- search latency p50 and p99 over ``--queries`` distinct queries for BM25 alone, hybrid (the
  query embedded, cosine over every chunk, reciprocal rank fusion) and hybrid + rerank (the 30
  fused candidates read and sent to ``/rerank``).

No real embeddings model is used: the fake's vectors are hashed words, so these figures measure
the plumbing (requests, the vector cache, the NumPy search, fusion), not retrieval quality.
The update must embed exactly the 20 new functions again: any other count sets the exit status.
``--smoke``: 60 files, 20 queries.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from index import WORDS, change, generate  # noqa: E402

from codejury.models.providers import ProviderSpec  # noqa: E402
from codejury.repocontext.index import RepoIndex, build_index  # noqa: E402
from codejury.repocontext.retrieval import RetrievalConfig, Retriever, open_retriever  # noqa: E402
from codejury.repocontext.store import VECTOR_FILE, IndexCache  # noqa: E402
from codejury.testing import FakeProviderServer  # noqa: E402

CHANGED = 20


def _mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p99 * 1000


def _build(repo: Path, cache_dir: Path, commit: str, config: RetrievalConfig) -> tuple[RepoIndex, Retriever, float]:
    started = time.perf_counter()
    index = build_index(repo, commit=commit, cache=IndexCache(cache_dir))
    retriever = open_retriever(index, config, cache_dir / VECTOR_FILE if config.embeddings_model else None)
    return index, retriever, time.perf_counter() - started


def _latency(retriever: Retriever, queries: list[str]) -> tuple[float, float]:
    samples = []
    for query in queries:
        started = time.perf_counter()
        answer = retriever.search(query, k=8)
        samples.append(time.perf_counter() - started)
        if answer.cached:
            raise SystemExit(f"query {query!r} was answered from the semantic cache: the queries must differ")
    return _percentiles(samples)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, help="files to generate (default 10,000; 60 with --smoke)")
    ap.add_argument("--queries", type=int, help="distinct queries timed per mode (default 200; 20 with --smoke)")
    ap.add_argument("--dimensions", type=int, default=384, help="vector size the fake serves (default 384)")
    ap.add_argument("--embed-ms", type=float, default=20.0, help="fixed latency of one /embeddings request")
    ap.add_argument("--rerank-ms", type=float, default=50.0, help="fixed latency of one /rerank request")
    ap.add_argument("--smoke", action="store_true", help="smoke size: seconds; only a wrong update sets the status")
    args = ap.parse_args()
    files = args.files or (60 if args.smoke else 10_000)
    queries_n = args.queries or (20 if args.smoke else 200)
    if args.smoke:
        print(f"smoke size: {files} files, {queries_n} queries")
    rng = random.Random(3)
    # Distinct word sets: the fake's vectors ignore word order, so "a b c" and "c b a" are one query to it.
    sets = dict.fromkeys(frozenset(rng.sample(WORDS, 3)) for _ in range(queries_n * 3))
    queries = [" ".join(sorted(words)) for words in sets][:queries_n]
    with FakeProviderServer() as srv, tempfile.TemporaryDirectory(prefix="codejury-retrieval-bench-") as tmp:
        srv.serve_embeddings("bench-embed", dimensions=args.dimensions, latency_s=args.embed_ms / 1000)
        srv.serve_rerank("bench-rerank", latency_s=args.rerank_ms / 1000)
        team = ProviderSpec("team", "openai-compatible", base_url=srv.openai_base_url)
        bm25_only = RetrievalConfig()
        hybrid = RetrievalConfig("team:bench-embed", providers={"team": team}, embed_budget_s=None)
        reranked = RetrievalConfig(
            "team:bench-embed", "team:bench-rerank", providers={"team": team}, embed_budget_s=None
        )
        repo = Path(tmp) / "repo"
        paths = generate(repo, files)
        print(f"repository: {len(paths)} files, {sum(p.stat().st_size for p in paths) / 1e6:.1f} MB")
        print(
            f"fake embeddings server: {args.dimensions} dimensions, {args.embed_ms:g} ms per request "
            f"(64 texts each, 4 in flight); rerank {args.rerank_ms:g} ms per request. No real embeddings "
            "model is available here: these figures measure plumbing, not retrieval quality."
        )
        plain_dir, vector_dir = Path(tmp) / "cache-bm25", Path(tmp) / "cache-vectors"
        index, _, plain_s = _build(repo, plain_dir, "c1", bm25_only)
        print(
            f"BM25 alone, first index: {plain_s:.2f} s, {_mb(plain_dir):.1f} MB on disk ({index.stats.chunks:,} chunks)"
        )
        index, retriever, vector_s = _build(repo, vector_dir, "c1", hybrid)
        stats = retriever.vectors.stats if retriever.vectors is not None else None
        if stats is None:
            print(f"vectors failed: {retriever.notes}")
            return 1
        requests = sum(1 for r in srv.requests if r.path.endswith("/embeddings"))
        print(
            f"with vectors, first index: {vector_s:.2f} s (embedding {stats.seconds:.2f} s, {stats.embedded:,} "
            f"chunks in {requests:,} requests), {_mb(vector_dir):.1f} MB on disk "
            f"({(vector_dir / VECTOR_FILE).stat().st_size / 1e6:.1f} MB of it vectors)"
        )
        del index, retriever
        change(paths, CHANGED)
        _, _, plain_update = _build(repo, plain_dir, "c2", bm25_only)
        print(f"BM25 alone, update ({CHANGED} files changed): {plain_update:.2f} s")
        index, retriever, vector_update = _build(repo, vector_dir, "c2", hybrid)
        updated = retriever.vectors.stats if retriever.vectors is not None else None
        embedded_again = updated.embedded if updated is not None else -1
        print(
            f"with vectors, update ({CHANGED} files changed): {vector_update:.2f} s "
            f"({embedded_again} chunks embedded again, {updated.reused if updated else 0:,} reused), "
            f"{_mb(vector_dir):.1f} MB on disk"
        )
        ok = embedded_again == CHANGED
        timed = {
            "BM25": Retriever(index),
            "hybrid": retriever,
            "hybrid+rerank": open_retriever(index, reranked, vector_dir / VECTOR_FILE),
        }
        for name, searcher in timed.items():
            p50, p99 = _latency(searcher, queries)
            print(f"search latency, {name}: p50 {p50:.1f} ms, p99 {p99:.1f} ms ({len(queries)} queries)")
        print(
            f"update embeds only the changed chunks ({CHANGED} new functions):",
            "yes" if ok else f"NO ({embedded_again})",
        )
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
