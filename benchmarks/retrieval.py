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

Recall (``_recall.py``): with ``--dataset DIR`` (a ``cases.jsonl`` with git bundles, such as aacr-dev)
and a real embeddings server (``--embeddings-url``, ``--embeddings-model``: the OpenAI-compatible
``/embeddings`` a user configures), prints recall@k of the commented code by context level (Diff, File,
Repo) for BM25 alone, vectors alone, hybrid and, with ``--rerank-model``, hybrid + rerank. Vectors are
kept in ``--vector-store`` (a ``postgresql://`` URL: pgvector, shared by every worker) or in the SQLite
file under ``--work``, so a second run embeds nothing again. ``--recall-only`` skips the plumbing
figures. Without ``--dataset`` the recall table is printed for the 20 changed files of the generated
repository, on the fake's hashed-word vectors (plumbing, not quality).
``--smoke``: 60 files, 20 queries.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _recall import QUESTIONS, Case, Tally, Target, load_cases, queries_of, score, table  # noqa: E402
from codejury_fakes import FakeProviderServer  # noqa: E402
from index import WORDS, change, generate  # noqa: E402

from codejury.models.providers import ProviderSpec  # noqa: E402
from codejury.repocontext.embeddings import Embedder, Vectors  # noqa: E402
from codejury.repocontext.index import RepoIndex, build_index  # noqa: E402
from codejury.repocontext.retrieval import RetrievalConfig, Retriever, open_retriever  # noqa: E402
from codejury.repocontext.store import VECTOR_FILE, IndexCache, default_cache_dir  # noqa: E402
from codejury.repocontext.vectors import ChunkVectors, VectorStore, embed_index, open_vector_cache  # noqa: E402

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


def _synthetic_case(repo: Path, before: dict[Path, str]) -> Case:
    """The generated repository's change as a case: one query and one commented place (Diff Level) per
    function ``change`` appended."""
    case = Case("generated", repo, [], [])
    for path, old in before.items():
        new = path.read_text(encoding="utf-8")
        if new == old:
            continue
        rel = path.relative_to(repo).as_posix()
        first = old.count("\n") + 1
        added = new.splitlines()[first - 1 :]
        diff = f"--- a/{rel}\n+++ b/{rel}\n@@ -{first - 1},0 +{first},{len(added)} @@\n"
        case.queries += queries_of(diff + "".join(f"+{line}\n" for line in added))
        case.targets += [Target(rel, first, first + len(added) - 1, "Diff Level")]
    return case


def _print_recall(tally: Tally, k: int, reranks: bool) -> None:
    for question in QUESTIONS:
        print()
        print("\n".join(table(tally, question, k, reranks)))


def plumbing(args: argparse.Namespace) -> int:
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
            f"(64 texts each, 4 in flight); rerank {args.rerank_ms:g} ms per request. Its vectors are hashed "
            "words: these figures measure plumbing, not retrieval quality (--dataset measures that)."
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
        before = {path: path.read_text(encoding="utf-8") for path in paths}
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
        with_rerank = open_retriever(index, reranked, vector_dir / VECTOR_FILE)
        timed = {"BM25": Retriever(index), "hybrid": retriever, "hybrid+rerank": with_rerank}
        for name, searcher in timed.items():
            p50, p99 = _latency(searcher, queries)
            print(f"search latency, {name}: p50 {p50:.1f} ms, p99 {p99:.1f} ms ({len(queries)} queries)")
        print(
            f"update embeds only the changed chunks ({CHANGED} new functions):",
            "yes" if ok else f"NO ({embedded_again})",
        )
        if not args.dataset:
            tally = Tally()
            fresh = partial(Retriever, index, vectors=with_rerank.vectors, embedder=with_rerank.embedder)
            score(_synthetic_case(repo, before), partial(fresh, reranker=with_rerank.reranker), args.k, tally, True)
            print("\nrecall on the generated change (fake vectors: plumbing, not quality):", end="")
            _print_recall(tally, args.k, True)
        return 0 if ok else 1


class _Remembered:
    """An embedder whose answers are kept in the vector store too (queries included): a second run of the
    recall embeds nothing it embedded before."""

    def __init__(self, embedder: Embedder, store: VectorStore) -> None:
        self.embedder, self.store = embedder, store
        self.name = embedder.name

    def embed(self, texts: Sequence[str]) -> Vectors:
        digests = [hashlib.sha256(t.encode("utf-8", errors="surrogatepass")).digest()[:16] for t in texts]
        known = dict(self.store.vectors(self.name, list(set(digests))))
        missing = [(d, t) for d, t in zip(digests, texts, strict=True) if d not in known]
        if missing:
            fresh = self.embedder.embed([t for _, t in missing])
            rows = [(d, v.astype(np.float32).tobytes()) for (d, _), v in zip(missing, fresh, strict=True)]
            self.store.save(self.name, (), rows)
            known.update(rows)
        return np.vstack([np.frombuffer(known[d], dtype=np.float32) for d in digests])


def recall(args: argparse.Namespace) -> int:
    """Recall on a dataset of reviewed pull requests with a real embeddings server."""
    from codejury.repocontext import embeddings
    from codejury.repocontext.embeddings import Reranker

    # A model on a few busy CPU cores embeds about a chunk a second: one request at a time, each allowed
    # --embed-timeout (a review's own limits stay as they are).
    embeddings.EMBED_PARALLEL = 1
    embeddings.TIMEOUT_S = args.embed_timeout
    work = Path(args.work) if args.work else default_cache_dir().parent / "retrieval-bench"
    work.mkdir(parents=True, exist_ok=True)
    server = ProviderSpec("bench", "openai-compatible", base_url=args.embeddings_url)
    embedder = Embedder(f"bench:{args.embeddings_model}", {"bench": server}, {})
    reranker = None
    if args.rerank_model:
        rerank_server = ProviderSpec("rerank", "openai-compatible", base_url=args.rerank_url or args.embeddings_url)
        reranker = Reranker(f"rerank:{args.rerank_model}", {"rerank": rerank_server}, {})
    store = args.vector_store or str(work / VECTOR_FILE)
    cache = open_vector_cache(store)
    where = "pgvector (PostgreSQL)" if store.startswith("postgresql") else "SQLite + NumPy"
    print(f"embeddings: {args.embeddings_model} at {args.embeddings_url}; vectors in {where}; k = {args.k}")
    tally, skipped, embed_s, chunks, done = Tally(), [], 0.0, 0, []
    remembered = _Remembered(embedder, cache)
    indexed = [(case, build_index(case.corpus)) for case in load_cases(Path(args.dataset), work, args.case or ())]
    indexed.sort(key=lambda pair: len(pair[1].chunks))  # the smallest first: a run cut short has measured the most
    for case, index in indexed:
        if args.max_chunks and len(index.chunks) > args.max_chunks:
            skipped.append(f"{case.name} ({len(index.chunks):,} chunks)")
            continue
        vectors: ChunkVectors = embed_index(index, embedder, cache)
        embed_s += vectors.stats.seconds
        chunks += len(index.chunks)
        fresh = partial(Retriever, index, vectors=vectors, embedder=remembered, reranker=reranker)
        score(case, fresh, args.k, tally, reranker is not None)
        done.append(case.name)
        so_far = [f"{len(done)} cases: {', '.join(done)}"]
        for question in QUESTIONS:
            so_far += ["", *table(tally, question, args.k, reranker is not None)]
        (work / "recall-so-far.txt").write_text("\n".join(so_far) + "\n", encoding="utf-8")
        print(
            f"{case.name}: {len(index.chunks):,} chunks ({vectors.stats.embedded:,} embedded now, "
            f"{vectors.stats.seconds:.0f} s), {len(case.queries)} queries, {len(case.targets)} comments",
            flush=True,
        )
    cache.close()
    measured = tally.cell("own hunk", "all", "BM25")[1] + tally.cell("other hunks", "all", "BM25")[1]
    print(f"\n{chunks:,} chunks indexed and embedded ({embed_s:.0f} s embedding this run); {measured} counted")
    if skipped:
        print(f"cases left out (over --max-chunks {args.max_chunks:,}): " + ", ".join(skipped))
    _print_recall(tally, args.k, reranker is not None)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, help="files to generate (default 10,000; 60 with --smoke)")
    ap.add_argument("--queries", type=int, help="distinct queries timed per mode (default 200; 20 with --smoke)")
    ap.add_argument("--dimensions", type=int, default=384, help="vector size the fake serves (default 384)")
    ap.add_argument("--embed-ms", type=float, default=20.0, help="fixed latency of one /embeddings request")
    ap.add_argument("--rerank-ms", type=float, default=50.0, help="fixed latency of one /rerank request")
    ap.add_argument("--smoke", action="store_true", help="smoke size: seconds; only a wrong update sets the status")
    ap.add_argument("--dataset", help="a folder with cases.jsonl and bundles (aacr-dev): measure recall on it")
    ap.add_argument("--embeddings-url", default="http://127.0.0.1:8000/v1", help="the OpenAI-compatible base URL")
    ap.add_argument("--embeddings-model", default="multilingual-e5-small", help="the model name sent to it")
    ap.add_argument("--rerank-url", help="base URL of a /rerank endpoint (default: the embeddings URL)")
    ap.add_argument("--rerank-model", help="a model served at /rerank: adds the hybrid + rerank column")
    ap.add_argument("--vector-store", help="postgresql:// URL (pgvector) or a SQLite file (default: under --work)")
    ap.add_argument("--work", help="clones, corpora and vectors kept between runs (default: under the cache dir)")
    ap.add_argument("--case", action="append", help="only this case (repeatable)")
    ap.add_argument("--max-chunks", type=int, default=0, help="leave out cases with more chunks (0: none)")
    ap.add_argument("--embed-timeout", type=float, default=600.0, help="seconds one /embeddings request may take")
    ap.add_argument("--k", type=int, default=5, help="chunks each query returns (default 5)")
    ap.add_argument("--recall-only", action="store_true", help="with --dataset: skip the plumbing figures")
    args = ap.parse_args()
    status = 0 if args.recall_only and args.dataset else plumbing(args)
    if args.dataset:
        status = recall(args) or status
    return status


if __name__ == "__main__":
    sys.exit(main())
