"""Hybrid search over one index: BM25 and vectors side by side, fused, reranked, with every step kept.

``Retriever.search`` runs BM25 (always) and, when the index has vectors, a cosine search of the
query's embedding; the two lists are merged by reciprocal rank fusion (``RRF_K``), and the fused
candidates are reordered by the reranker when one is configured: a provider's ``/rerank`` endpoint
(``rerank_model = "provider:model"``), or the model of the reviewer making the call as a listwise
reranker (``rerank_model = "reviewer"``, ``model_rerank.py``), handed to ``search`` for that call.
The answer (``Retrieval``) keeps the four lists with their scores and which reranker ran, so
``codejury search --explain``, the ``search_code`` event and its trace span all show why a chunk
came back.

A semantic cache per retriever (one per review): a query whose embedding is within
``CACHE_SIMILARITY`` (cosine) of an earlier one's gets that query's answer again, counted as a hit;
without vectors only the same words hit. A vector or rerank step that fails is left out of that one
search with a note, never fatal: BM25 always answers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from codejury.repocontext.embeddings import EmbeddingsError, Vectors
from codejury.repocontext.terms import terms
from codejury.repocontext.vectors import chunk_text

if TYPE_CHECKING:
    from codejury.models.embeddings import EmbeddingsFactory
    from codejury.models.providers import ProviderSpec
    from codejury.repocontext.index import RepoIndex
    from codejury.repocontext.vectors import ChunkVectors, TextEmbedder

RRF_K = 60
"""Reciprocal rank fusion's constant: a chunk scores the sum of 1 / (RRF_K + rank) over the lists."""
CANDIDATES = 50
"""Chunks taken from each of BM25 and the vector search before fusion."""
CACHE_SIMILARITY = 0.95
CACHE_SIZE = 64
"""Queries a semantic cache remembers (the oldest is forgotten first)."""
EXPLAIN_TOP = 10
"""Entries of each list shown by an event, a span or ``--explain`` unless asked for more."""

Hits = list[tuple[int, float]]


REVIEWER_RERANKER = "reviewer"
"""``rerank_model`` value: the reviewer's own model reranks its searches (``model_rerank.ModelReranker``)."""


class DocumentReranker(Protocol):
    name: str
    kind: str
    """``endpoint`` (a provider's /rerank) or ``model`` (a reviewer's model, listwise)."""

    def rerank(self, query: str, documents: Sequence[str]) -> list[tuple[int, float]]: ...


@dataclass(frozen=True)
class Retrieval:
    """One search and its steps: each list is (chunk id, score), best first."""

    query: str
    bm25: Hits
    vector: Hits | None
    """None: no vectors (none configured, or the query could not be embedded: see ``notes``)."""
    fused: Hits
    reranked: Hits | None
    """None: no reranker configured, or it failed (``notes``)."""
    cached: bool = False
    notes: tuple[str, ...] = ()
    reranker: str | None = None
    """The reranker this search asked (``kind name``: ``model openai:gpt-5-mini``); None: none."""
    rerank_error: str | None = None
    """Why that reranker's order is not used (the fused order stands); None: it answered, or none ran."""
    seconds: float = 0.0
    steps: dict[str, float] = field(default_factory=dict)
    """Seconds per step (bm25, embed, vector, rerank)."""

    @property
    def final(self) -> Hits:
        return self.reranked if self.reranked is not None else self.fused

    def lists(self) -> dict[str, Hits | None]:
        return {"bm25": self.bm25, "vector": self.vector, "fused": self.fused, "reranked": self.reranked}


def reciprocal_rank_fusion(lists: Sequence[Hits], k: int = RRF_K) -> Hits:
    """Chunks of every list scored by the sum of 1 / (k + rank), best first (ties: the lower chunk id)."""
    scores: dict[int, float] = {}
    for hits in lists:
        for rank, (cid, _) in enumerate(hits, start=1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda h: (-h[1], h[0]))


class Retriever:
    """Search one index; ``vectors`` and ``embedder`` go together (both None: BM25 alone)."""

    def __init__(
        self,
        index: RepoIndex,
        *,
        vectors: ChunkVectors | None = None,
        embedder: TextEmbedder | None = None,
        reranker: DocumentReranker | None = None,
        rerank_candidates: int = 30,
        notes: Sequence[str] = (),
    ) -> None:
        self.index = index
        self.vectors = vectors if embedder is not None else None
        self.embedder = embedder
        self.reranker = reranker
        self.rerank_candidates = rerank_candidates
        self.notes = tuple(notes)
        """Said once about every search (why vectors are off)."""
        self.cache_hits = 0
        self.cache_misses = 0
        self._lock = threading.Lock()
        self._cache: list[tuple[str, Vectors | None, Retrieval]] = []

    def _cached(self, query: str, vector: Vectors | None, reranker: str | None) -> Retrieval | None:
        with self._lock:
            for words, seen, answer in reversed(self._cache):
                same = words == query if vector is None or seen is None else float(seen @ vector) >= CACHE_SIMILARITY
                if same and answer.reranker == reranker:  # another reviewer's model ranks for itself
                    self.cache_hits += 1
                    return answer
            self.cache_misses += 1
        return None

    def _remember(self, query: str, vector: Vectors | None, answer: Retrieval) -> None:
        with self._lock:
            self._cache.append((query, vector, answer))
            del self._cache[:-CACHE_SIZE]

    def search(
        self,
        query: str,
        k: int = 10,
        stop: Callable[[], bool] | None = None,
        reranker: DocumentReranker | None = None,
    ) -> Retrieval:
        """The steps of one search; ``final`` holds the answer (at most ``k`` chunks). ``reranker``: this
        call's (a reviewer's model), in place of the retriever's own."""
        started = time.monotonic()
        reranker = reranker or self.reranker
        label = f"{reranker.kind} {reranker.name}" if reranker is not None else None
        steps: dict[str, float] = {}
        notes = list(self.notes)
        words = " ".join(terms(query)) or query.strip().lower()
        qvec: Vectors | None = None
        if self.embedder is not None:
            t = time.monotonic()
            try:
                qvec = self.embedder.embed([query])[0]
            except EmbeddingsError as exc:
                notes.append(f"vector search skipped: {exc}")
            steps["embed"] = time.monotonic() - t
        hit = self._cached(words, qvec, label)
        if hit is not None:
            return replace(_cut(hit, k), query=query, cached=True, seconds=time.monotonic() - started, steps=steps)
        t = time.monotonic()
        bm25 = self.index.search(query, CANDIDATES)
        steps["bm25"] = time.monotonic() - t
        vector: Hits | None = None
        if qvec is not None and self.vectors is not None and qvec.shape[-1] != self.vectors.matrix.shape[1]:
            notes.append(
                f"vector search skipped: {self.vectors.model} now answers vectors of {qvec.shape[-1]} dimensions, "
                f"the index holds {self.vectors.matrix.shape[1]}"
            )
            qvec = None
        if qvec is not None and self.vectors is not None:
            t = time.monotonic()
            vector = self.vectors.search(qvec, CANDIDATES)
            steps["vector"] = time.monotonic() - t
        fused = reciprocal_rank_fusion([bm25, vector]) if vector is not None else list(bm25)
        reranked: Hits | None = None
        failed: str | None = None
        if reranker is not None and fused and stop is not None and stop():
            failed = "the time limit of this call was reached"
        elif reranker is not None and fused:
            t = time.monotonic()
            try:
                reranked = self._rerank(reranker, query, fused[: self.rerank_candidates])
            except EmbeddingsError as exc:
                failed = str(exc)
            steps["rerank"] = time.monotonic() - t
        if failed is not None:  # said once, for this search: its answer is the fused order
            notes.append(f"rerank skipped, fused order kept: {failed}")
        answer = Retrieval(
            query, bm25, vector, fused, reranked, notes=tuple(notes), reranker=label, rerank_error=failed
        )
        whole = failed is None and (self.embedder is None or vector is not None)
        if whole:  # a search with a step skipped is not kept: the next one may get every step
            self._remember(words, qvec, answer)
        return replace(_cut(answer, k), seconds=time.monotonic() - started, steps=steps)

    def _rerank(self, reranker: DocumentReranker, query: str, candidates: Hits) -> Hits:
        index = self.index
        documents: list[str] = []
        lines_of: dict[str, list[str]] = {}
        for cid, _ in candidates:
            path = index.path_of(cid)
            if path not in lines_of:
                lines_of[path] = index.read_lines(path) or []
            c = index.chunks[cid]
            language = index.languages[index.file_of[cid]]
            documents.append(chunk_text(path, language, c.kind, c.name, lines_of[path], c.start, c.end))
        return [(candidates[i][0], score) for i, score in reranker.rerank(query, documents)]


def _cut(answer: Retrieval, k: int) -> Retrieval:
    """``answer`` with its final list cut to ``k`` (the other lists keep their candidates)."""
    if answer.reranked is not None:
        return replace(answer, reranked=answer.reranked[:k])
    return replace(answer, fused=answer.fused[:k])


def described(index: RepoIndex, hits: Hits | None, top: int = EXPLAIN_TOP) -> list[str]:
    """``path:start-end name score`` for the first ``top`` hits (what events, spans and ``--explain`` show)."""
    out: list[str] = []
    for cid, score in (hits or [])[:top]:
        chunk = index.chunks[cid]
        name = chunk.name or "top-level code"
        out.append(f"{index.path_of(cid)}:{chunk.start}-{chunk.end} {name} {score:.4g}")
    return out


def explain(index: RepoIndex, answer: Retrieval, top: int = EXPLAIN_TOP) -> str:
    """The four lists of one search, side by side as sections, with their scores."""
    out = [f"query: {answer.query!r}" + (" (semantic cache hit)" if answer.cached else "")]
    out += [f"note: {n}" for n in answer.notes]
    by_model = answer.reranker is not None and answer.reranker.startswith("model ")
    titles = {
        "bm25": "BM25 (score)",
        "vector": "vector (cosine)",
        "fused": f"fused (reciprocal rank fusion, k={RRF_K})",
        "reranked": f"reranked ({answer.reranker}: its order, scored by place)"
        if by_model
        else "reranked (relevance score)",
    }
    for name, hits in answer.lists().items():
        if hits is None:
            why = "no embeddings model" if name == "vector" else "no reranker"
            if name == "reranked" and answer.rerank_error is not None:
                why = f"{answer.reranker} failed; fused order kept"
            out.append(f"\n{titles[name]}: off ({why})")
            continue
        out.append(f"\n{titles[name]}: {len(hits)} candidates" + (f", first {top}" if len(hits) > top else ""))
        for rank, line in enumerate(described(index, hits, top), start=1):
            out.append(f"  {rank:>2}. {line}")
    timing = ", ".join(f"{step} {seconds * 1000:.1f} ms" for step, seconds in answer.steps.items())
    out.append(f"\n{answer.seconds * 1000:.1f} ms" + (f" ({timing})" if timing else ""))
    return "\n".join(out)


def as_attributes(index: RepoIndex, answer: Retrieval) -> dict[str, list[str] | str | bool | int | float]:
    """The steps as span or event fields: each list's first ``EXPLAIN_TOP`` entries, bounded strings; which
    reranker ran, and why its order was not used when it was not."""
    fields: dict[str, list[str] | str | bool | int | float] = {
        "cached": answer.cached,
        "results": len(answer.final),
        "seconds": round(answer.seconds, 4),
    }
    if answer.reranker is not None:
        fields["reranker"] = answer.reranker
    if answer.rerank_error is not None:
        fields["rerank_error"] = answer.rerank_error[:300]
    for name, hits in answer.lists().items():
        if hits is not None:
            fields[name] = [line[:300] for line in described(index, hits)]
    return fields


VECTORS_OFF = "vectors off: no [retrieval] embeddings_model configured; BM25 alone"
EMBED_BUDGET_S = 120.0
"""A review embeds for at most this long; the chunks left are embedded by the next reviews (cached)."""


@dataclass(frozen=True)
class RetrievalConfig:
    """``[retrieval]`` with what resolving its models needs: the providers and the environment (keys)."""

    embeddings_model: str | None = None
    rerank_model: str | None = None
    """A ``provider:model`` with a /rerank endpoint, or ``REVIEWER_RERANKER`` (each search's own model)."""
    rerank_candidates: int = 30
    providers: Mapping[str, ProviderSpec] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    embed_budget_s: float | None = EMBED_BUDGET_S
    """Seconds a review spends embedding chunks the cache lacks (None: no limit, as ``codejury search``)."""
    rerank_prompt_tokens: int = 4_000
    """The whole prompt of a model rerank call (``rerank_model = "reviewer"``), instructions included."""
    embeddings_providers: Mapping[str, EmbeddingsFactory] = field(default_factory=dict)
    """Embeddings providers plugins registered (``codejury_register_embeddings``), by name."""
    vector_store: str | None = None
    """A ``postgresql://`` URL: the vectors live in its pgvector tables (``pgvectors.py``), shared by every worker;
    None: in the SQLite file of the index cache."""

    @property
    def reranks_with_model(self) -> bool:
        """Whether each search is reranked by the model of the reviewer making it."""
        return self.rerank_model == REVIEWER_RERANKER


def open_retriever(index: RepoIndex, config: RetrievalConfig, vector_cache: Path | str | None) -> Retriever:
    """A retriever over ``index``: its chunks embedded (``vector_cache``: the SQLite file, or a ``postgresql://``
    URL whose pgvector tables every worker of a service shares; None: no cache) and the reranker opened when
    configured; a model that cannot be used is a note and that step is off."""
    from codejury.repocontext.embeddings import Embedder, PluginEmbedder, Reranker, open_embedder
    from codejury.repocontext.vectors import embed_index, open_vector_cache

    notes: list[str] = []
    embedder: Embedder | PluginEmbedder | None = None
    vectors: ChunkVectors | None = None
    if config.embeddings_model is None:
        notes.append(VECTORS_OFF)
    else:
        cache = open_vector_cache(vector_cache)
        store_error = getattr(cache, "error", None)
        if store_error:
            notes.append(f"vector store off: {store_error}; every chunk is embedded again")
        try:
            embedder = open_embedder(config.embeddings_model, config.providers, config.env, config.embeddings_providers)
            vectors = embed_index(index, embedder, cache, budget_s=config.embed_budget_s)
            missing = vectors.stats.missing
            if missing and vectors.stats.dimensions:
                notes.append(
                    f"vectors partial: {missing:,} of {len(index.chunks):,} chunks not embedded within "
                    f"{config.embed_budget_s:g} s; the next index embeds them"
                )
            elif missing:
                notes.append(f"vectors off: no chunk embedded within {config.embed_budget_s:g} s")
                vectors, embedder = None, None
        except EmbeddingsError as exc:
            notes.append(f"vectors off: {exc}")
            embedder = None
        finally:
            cache.close()
    reranker: Reranker | None = None
    if config.rerank_model is not None and not config.reranks_with_model:
        try:
            reranker = Reranker(config.rerank_model, config.providers, config.env)
        except EmbeddingsError as exc:
            notes.append(f"rerank off: {exc}")
    return Retriever(
        index,
        vectors=vectors,
        embedder=embedder,
        reranker=reranker,
        rerank_candidates=config.rerank_candidates,
        notes=notes,
    )


__all__ = [
    "CACHE_SIMILARITY",
    "REVIEWER_RERANKER",
    "DocumentReranker",
    "Retrieval",
    "RetrievalConfig",
    "Retriever",
    "as_attributes",
    "explain",
    "open_retriever",
    "reciprocal_rank_fusion",
]
