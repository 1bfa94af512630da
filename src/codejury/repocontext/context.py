"""One review's repository context: the index built once, on first use, and what the reviewers ask of it.

Tool-capable models call ``search_code`` and ``find_references``; models that get the change
inline get ``related_section``. The index is built the first time any of them needs it (in the
caller's worker thread, one build at a time) and never fails the review: a build that fails
leaves the tools answering with an ``error: ...`` line and the inline prompt without the section.
With ``[retrieval]`` models the chunks are embedded then too, and ``search_code`` is hybrid
(``retrieval.py``); each search is a ``search_code`` event and a ``codejury.search_code`` span
carrying its BM25, vector, fused and reranked lists and the reranker that ran. With ``rerank_model =
"reviewer"`` each reviewer's run gets its own reranker (``model_reranker``), handed to its searches.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codejury.change.head_tree import HeadTree
from codejury.change.types import FileChange
from codejury.repocontext import store
from codejury.repocontext.index import RepoIndex, build_index
from codejury.repocontext.related import Piece, fitted, related_pieces
from codejury.repocontext.retrieval import (
    DocumentReranker,
    RetrievalConfig,
    Retriever,
    as_attributes,
    open_retriever,
)
from codejury.repocontext.store import IndexCache
from codejury.telemetry.tracing import span

if TYPE_CHECKING:
    import asyncio

    from codejury.models.profiles import ResolvedModel
    from codejury.repocontext.model_rerank import ModelReranker

CHARS_PER_TOKEN = 3
"""How many characters of code one token holds, at the least (the inline prompt budget's estimate)."""
MAX_SEARCH_RESULTS = 20
SNIPPET_LINES = 8
MAX_REFERENCES = 60
_SYMBOL = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*$")
_NO_CHECKOUT = "error: no repository checkout; only the patches are available: use read_patch"

Stop = Callable[[], bool]


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


class RepoContext:
    """The repository index of one review's checkout (``root``) or head commit (``head``), built lazily."""

    def __init__(
        self,
        root: Path | None,
        *,
        head: HeadTree | None = None,
        commit: str | None = None,
        cache_dir: Path | None = None,
        use_cache: bool = True,
        on_event: Callable[..., Any] | None = None,
        retrieval: RetrievalConfig | None = None,
        trace_query: bool = False,
    ) -> None:
        self.root = root
        self.head = head
        self.commit = commit
        self.cache_dir = cache_dir
        self.use_cache = use_cache
        self.on_event = on_event
        """Sees ``repo_index`` (the build) and each ``search_code`` as (type, fields): the review's event log."""
        self.retrieval = retrieval or RetrievalConfig()
        self.trace_query = trace_query
        """The query text goes on the trace span too (``record.prompts``); events always carry it."""
        self._lock = threading.Lock()
        self._index: RepoIndex | None = None
        self._retriever: Retriever | None = None
        self._error: str | None = None
        self._pieces: list[Piece] | None = None
        self._related_lock = threading.Lock()

    def index(self) -> RepoIndex | None:
        """The index (built on the first call); None without a checkout or when the build failed."""
        if self.root is None and self.head is None:
            return None
        with self._lock:
            if self._index is None and self._error is None:
                try:
                    cache_dir = self.cache_dir or store.default_cache_dir()
                    cache = IndexCache(cache_dir) if self.use_cache else None
                    index = build_index(self.root, head=self.head, commit=self.commit, cache=cache)
                    vector_cache: Path | str | None = cache_dir / store.VECTOR_FILE if self.use_cache else None
                    if self.retrieval.vector_store:
                        vector_cache = self.retrieval.vector_store
                    try:
                        self._retriever = open_retriever(index, self.retrieval, vector_cache)
                    except Exception as exc:  # vectors are help too: BM25 goes on without them
                        self._retriever = Retriever(index, notes=[f"vectors off: {_one_line(exc)}"])
                    self._index = index
                except Exception as exc:  # the index is help, never a reason to fail the review
                    self._error = _one_line(exc)
                self._report()
            return self._index

    @property
    def error(self) -> str | None:
        """Why the index could not be built (None: it was, or it was not asked for yet)."""
        return self._error

    def retriever(self) -> Retriever | None:
        """The index's retriever (built with it); None where ``index()`` is None."""
        return self._retriever if self.index() is not None else None

    def model_reranker(
        self, model: ResolvedModel, *, loop: asyncio.AbstractEventLoop | None = None, deadline: float | None = None
    ) -> ModelReranker | None:
        """A reranker of the searches made by a reviewer on ``model`` (its run's ``loop`` and ``deadline``), when
        ``rerank_model = "reviewer"``; None otherwise."""
        if not self.retrieval.reranks_with_model:
            return None
        from codejury.repocontext.model_rerank import ModelReranker

        return ModelReranker(model, budget_tokens=self.retrieval.rerank_prompt_tokens, loop=loop, deadline=deadline)

    def _report(self) -> None:
        if self.on_event is None:
            return
        if self._index is not None:
            s = self._index.stats
            vectors = self._retriever.vectors if self._retriever is not None else None
            notes = list(self._retriever.notes) if self._retriever is not None else []
            self.on_event(
                "repo_index",
                files=s.files,
                chunks=s.chunks,
                parsed=s.parsed,
                reused=s.reused,
                loaded=s.loaded,
                skipped=dict(s.skipped),
                seconds=round(s.seconds, 3),
                vectors=None
                if vectors is None
                else {
                    "model": vectors.model,
                    "embedded": vectors.stats.embedded,
                    "reused": vectors.stats.reused,
                    "missing": vectors.stats.missing,
                    "dimensions": vectors.stats.dimensions,
                    "seconds": round(vectors.stats.seconds, 3),
                },
                reranker=self.retrieval.rerank_model,
                notes=notes,
            )
        else:
            self.on_event("repo_index", error=self._error)

    def _unavailable(self) -> str:
        if self.root is None and self.head is None:
            return _NO_CHECKOUT
        return f"error: the repository index is unavailable ({self._error}); use grep instead"

    # ---- tools -------------------------------------------------------------------------

    def search_code(
        self, query: str, k: int = 8, stop: Stop | None = None, reranker: DocumentReranker | None = None
    ) -> str:
        """The best chunks for ``query`` as 'path:start-end kind name' headers with their first lines;
        ``reranker``: this call's (the calling reviewer's model), else the configured one."""
        if not query.strip():
            return "error: give a query: words or identifiers, e.g. 'parse config file'"
        index = self.index()
        if index is None:
            return self._unavailable()
        k = max(1, min(int(k), MAX_SEARCH_RESULTS))
        retriever = self._retriever
        assert retriever is not None  # built with the index
        with span("search_code") as traced:
            answer = retriever.search(query[:500], k, stop=stop, reranker=reranker)
            fields = as_attributes(index, answer)
            traced.set_attributes({f"codejury.search.{name}": value for name, value in fields.items()})
            if self.trace_query:
                traced.set_attribute("codejury.search.query", query[:200])
        if self.on_event is not None:
            self.on_event(
                "search_code",
                query=query[:200],
                k=k,
                cache_hits=retriever.cache_hits,
                cache_misses=retriever.cache_misses,
                **fields,
            )
        hits = answer.final
        if not hits:
            return f"no code matches {query[:100]!r}"
        out: list[str] = []
        for rank, (cid, score) in enumerate(hits, start=1):
            if stop is not None and stop():
                out.append("… stopped: the time limit of this call was reached")
                break
            chunk, path = index.chunks[cid], index.path_of(cid)
            label = f"{chunk.kind} {chunk.name}" if chunk.name else "top-level code"
            out.append(f"{rank}. {path}:{chunk.start}-{chunk.end} {label} (score {score:.3g})")
            lines = index.read_lines(path) or []
            last = min(chunk.end, chunk.start + SNIPPET_LINES - 1, len(lines))
            out += [f"{n:>5} | {lines[n - 1][:200]}" for n in range(chunk.start, last + 1)]
            if chunk.end > last:
                out.append(f"      … read_file {path} start_line={last + 1} for the rest")
        return "\n".join(out)

    def find_references(self, symbol: str, stop: Stop | None = None) -> str:
        """Where ``symbol`` is defined, and every line of other code that names it (capped)."""
        symbol = symbol.strip()
        if not _SYMBOL.match(symbol) or len(symbol) > 200:
            return f"error: not an identifier: {symbol[:80]!r}; give a name such as 'load_config' or 'Cart.total'"
        index = self.index()
        if index is None:
            return self._unavailable()
        name = symbol.rsplit(".", 1)[-1]
        defined = index.definitions(symbol) or index.definitions(name)
        out = ["definitions:"] if defined else [f"definitions: none found for {symbol}"]
        for cid in defined:
            chunk = index.chunks[cid]
            out.append(f"  {index.path_of(cid)}:{chunk.start}-{chunk.end} {chunk.kind} {chunk.name}")
        word = re.compile(rf"(?<![A-Za-z0-9_$]){re.escape(name)}(?![A-Za-z0-9_$])")
        found: list[str] = []
        files: set[str] = set()
        own = set(defined)
        for cid in index.mentioning(name):
            if stop is not None and stop():
                found.append("… stopped: the time limit of this call was reached")
                break
            chunk, path = index.chunks[cid], index.path_of(cid)
            lines = index.read_lines(path) or []
            first = chunk.start + 1 if cid in own else chunk.start  # the definition's own line is not a use
            for n in range(first, min(chunk.end, len(lines)) + 1):
                if word.search(lines[n - 1]):
                    found.append(f"  {path}:{n}: {lines[n - 1].strip()[:200]}")
                    files.add(path)
            if len(found) >= MAX_REFERENCES:
                found = found[:MAX_REFERENCES] + [f"  … more references not shown (at most {MAX_REFERENCES})"]
                break
        if not found:
            out.append(f"references: none found for {name}")
        else:
            out.append(f"references ({len(files)} files):")
            out += found
        return "\n".join(out)

    # ---- inline models -----------------------------------------------------------------

    def related_section(self, files: Sequence[FileChange], budget_tokens: int, room_chars: int) -> str:
        """The related-code section, at most ``budget_tokens`` and ``room_chars``; the same for equal arguments."""
        budget = min(budget_tokens * CHARS_PER_TOKEN, room_chars)
        if budget <= 0 or (self.root is None and self.head is None):
            return ""
        with self._related_lock:  # reviewers ask at once, each from a thread: the first finds the pieces
            if self._pieces is None:  # found once per review, then cut to each reviewer's room
                index = self.index()
                self._pieces = related_pieces(index, files) if index is not None else []
        return fitted(self._pieces, budget)
