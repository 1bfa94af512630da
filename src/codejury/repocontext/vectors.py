"""Chunk vectors: every chunk embedded with its contextual prefix, kept per embeddings model in the index cache.

The text embedded for a chunk is its prefix (the file's path and language, the chunk's kind and
qualified name) and then its lines, cut to ``EMBED_CHARS``. Vectors live in one SQLite file beside
the saved BM25 indexes (``vectors.sqlite3`` in the cache directory), as float32 BLOBs keyed by
(model, digest of that text): the model string is part of every key, so changing the model embeds
again and never mixes vectors of two models. A second table maps a chunk's place (path, blob id,
lines, name) to its text's digest, so an unchanged file is never read again, and a changed file
costs one embedding per chunk whose text changed, not one per chunk of the file.

A review service on PostgreSQL keeps the same two tables in its database with pgvector
(``pgvectors.py``, chosen by ``open_vector_cache`` from a ``postgresql://`` URL), so its workers share
one store and a repository is embedded once, whichever worker reviews it.

sqlite-vec is not used: the Python this project runs on is often built without loadable SQLite
extensions (``sqlite3.Connection.enable_load_extension`` missing), so the search is brute-force
cosine over the index's float32 matrix with NumPy (about 10 ms for 50,000 chunks of 384 dimensions),
whichever store the vectors were read from.
The cache is an optimisation: a cache that cannot be opened or written only means more embedding.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from codejury.errors import CodejuryError
from codejury.repocontext.embeddings import EmbeddingsError, Vectors

if TYPE_CHECKING:
    from codejury.repocontext.index import RepoIndex

EMBED_CHARS = 2_000
"""Characters of a chunk (its prefix included) that are embedded; the rest is left out."""
_PREFIX_VERSION = "1"
_LOOKUP_BATCH = 500
EMBED_GROUP = 4096
"""Texts embedded (and saved) together while a repository is indexed."""
_SCHEMA = (
    # Not WITHOUT ROWID: a vector (1 to 12 KB) is far past the row size such a table suits.
    "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, digest BLOB NOT NULL, vector BLOB NOT NULL, "
    "PRIMARY KEY (model, digest))",
    "CREATE TABLE IF NOT EXISTS places (place BLOB PRIMARY KEY, digest BLOB NOT NULL) WITHOUT ROWID",
)


class TextEmbedder(Protocol):
    name: str
    """``provider:model``; the vectors' key in the cache unless the embedder has a ``key`` of its own."""

    def embed(self, texts: Sequence[str]) -> Vectors: ...


@dataclass
class VectorStats:
    """What embedding the index did: chunks embedded afresh, found in the cache, and the time it took."""

    model: str
    embedded: int = 0
    reused: int = 0
    missing: int = 0
    """Chunks left without a vector: the embedding budget ran out before them."""
    dimensions: int = 0
    seconds: float = 0.0
    cache_errors: int = 0


def chunk_text(path: str, language: str, kind: str, name: str, lines: Sequence[str], start: int, end: int) -> str:
    """The text embedded for one chunk: its contextual prefix, then its lines, at most ``EMBED_CHARS``."""
    label = f"{kind} {name}" if name else "top-level code"
    prefix = f"# file: {path} ({language})\n# {label}\n"
    return (prefix + "\n".join(lines[start - 1 : end]))[:EMBED_CHARS]


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).digest()[:16]


class VectorCache:
    """The SQLite file of vectors; every failure counts in ``errors`` and reads as a miss."""

    def __init__(self, path: Path | None) -> None:
        self.errors = 0
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=10, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            for statement in _SCHEMA:
                db.execute(statement)
            self._db = db
        except (OSError, sqlite3.Error):
            self.errors += 1

    def _select(self, sql: str, keys: list[bytes], *first: str) -> dict[bytes, bytes]:
        found: dict[bytes, bytes] = {}
        if self._db is None or not keys:
            return found
        try:
            with self._lock:
                for i in range(0, len(keys), _LOOKUP_BATCH):
                    part = keys[i : i + _LOOKUP_BATCH]
                    marks = ",".join("?" * len(part))
                    found.update(self._db.execute(sql.format(marks=marks), (*first, *part)).fetchall())
        except sqlite3.Error:
            self.errors += 1
        return found

    def places(self, places: list[bytes]) -> dict[bytes, bytes]:
        """place → the digest of the text last embedded for it."""
        return self._select("SELECT place, digest FROM places WHERE place IN ({marks})", places)

    def vectors(self, model: str, digests: list[bytes]) -> Iterator[tuple[bytes, bytes]]:
        """(digest, float32 bytes) of ``model`` for the ``digests`` it has, a batch at a time."""
        sql = "SELECT digest, vector FROM vectors WHERE model = ? AND digest IN ({marks})"
        for i in range(0, len(digests), _LOOKUP_BATCH):
            yield from self._select(sql, digests[i : i + _LOOKUP_BATCH], model).items()

    def forget(self, model: str) -> None:
        """Remove every vector of ``model``."""
        if self._db is None:
            return
        try:
            with self._lock:
                self._db.execute("DELETE FROM vectors WHERE model = ?", (model,))
        except sqlite3.Error:
            self.errors += 1

    def save(self, model: str, places: Iterable[tuple[bytes, bytes]], vectors: Iterable[tuple[bytes, bytes]]) -> None:
        if self._db is None:
            return
        try:
            with self._lock:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO places VALUES (?, ?)", places)
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", ((model, d, v) for d, v in vectors)
                )
                self._db.execute("COMMIT")
        except sqlite3.Error:
            self.errors += 1
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")

    def close(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None


class ChunkVectors:
    """One unit vector per chunk of an index (row = chunk id), all from one embeddings model."""

    def __init__(self, model: str, matrix: Vectors, stats: VectorStats) -> None:
        self.model = model
        self.matrix = matrix
        self.stats = stats

    def search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        """The ``k`` chunks nearest to the unit vector ``query`` as (chunk id, cosine), best first."""
        if not len(self.matrix) or query.shape[-1] != self.matrix.shape[1]:
            return []
        scores = self.matrix @ query.reshape(-1)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        return sorted(((int(i), float(scores[i])) for i in top), key=lambda h: (-h[1], h[0]))


class VectorStore(Protocol):
    """Where chunk vectors are kept: the SQLite file (``VectorCache``) or PostgreSQL (``pgvectors.PgVectorCache``)."""

    errors: int

    def places(self, places: list[bytes]) -> dict[bytes, bytes]: ...

    def vectors(self, model: str, digests: list[bytes]) -> Iterator[tuple[bytes, bytes]]: ...

    def forget(self, model: str) -> None: ...

    def save(
        self, model: str, places: Iterable[tuple[bytes, bytes]], vectors: Iterable[tuple[bytes, bytes]]
    ) -> None: ...

    def close(self) -> None: ...


def open_vector_cache(where: Path | str | None) -> VectorStore:
    """The store at ``where``: a ``postgresql://`` URL (pgvector, shared by every worker of a service), else the
    SQLite file at that path (None: no store, every chunk is embedded)."""
    if isinstance(where, str) and where.startswith(("postgresql://", "postgres://")):
        from codejury.repocontext.pgvectors import PgVectorCache

        return PgVectorCache(where)
    return VectorCache(Path(where) if where is not None else None)


def _place(index: RepoIndex, cid: int) -> bytes:
    chunk, f = index.chunks[cid], index.file_of[cid]
    key = (
        f"{_PREFIX_VERSION}\0{index.paths[f]}\0{index.blobs[f]}\0{chunk.kind}\0{chunk.name}\0{chunk.start}\0{chunk.end}"
    )
    return _digest(key)


class _Rows:
    """The index's matrix, filled row by row as vectors arrive (allocated at the first one's size)."""

    def __init__(self, chunks: int, digests: list[bytes | None]) -> None:
        self.chunks = chunks
        self.rows_of: dict[bytes, list[int]] = {}
        for cid, digest in enumerate(digests):
            if digest is not None:
                self.rows_of.setdefault(digest, []).append(cid)
        self.matrix: Vectors | None = None
        self.have: set[bytes] = set()

    def add(self, digest: bytes, vector: Vectors) -> bool:
        """Put ``vector`` in the rows of ``digest``; False when its size is not the matrix's."""
        if self.matrix is None:
            self.matrix = np.zeros((self.chunks, len(vector)), dtype=np.float32)
        if len(vector) != self.matrix.shape[1]:
            return False
        self.matrix[self.rows_of.get(digest, [])] = vector
        self.have.add(digest)
        return True


class _SizeChanged(CodejuryError):
    """The cache holds vectors of another size under this model's name than the server now gives."""


def embed_index(
    index: RepoIndex,
    embedder: TextEmbedder,
    cache: VectorStore,
    *,
    budget_s: float | None = None,
    retry: bool = True,
) -> ChunkVectors:
    """Every chunk's vector: from the cache where its text was embedded by this model, else embedded now.

    Vectors go straight into the index's matrix as they are read or embedded (``EMBED_GROUP`` texts at
    a time, each group saved at once), so memory holds the matrix and one group, not every vector twice.
    After ``budget_s`` no further group is started: the chunks left have no vector (``stats.missing``)
    and the next index embeds them, the groups already saved being read from the cache.
    """
    started = time.monotonic()
    model = str(getattr(embedder, "key", embedder.name))  # a registered provider's vectors have their own key
    stats = VectorStats(embedder.name)
    places = [_place(index, cid) for cid in range(len(index.chunks))]
    known = cache.places(places)
    digests: list[bytes | None] = [known.get(p) for p in places]
    del known
    rows = _Rows(len(index.chunks), digests)
    try:
        _fill(rows, cache.vectors(model, list(rows.rows_of)))
        # Chunks whose text must be read: no known place, or no vector of this model for its text.
        wanted = [cid for cid, d in enumerate(digests) if d is None or d not in rows.have]
        texts: dict[bytes, str] = {}
        new_places: list[tuple[bytes, bytes]] = []
        by_path: dict[str, list[int]] = {}
        for cid in wanted:
            by_path.setdefault(index.path_of(cid), []).append(cid)
        for path, cids in by_path.items():
            lines = index.read_lines(path) or []
            language = index.languages[index.file_of[cids[0]]]
            for cid in cids:
                c = index.chunks[cid]
                text = chunk_text(path, language, c.kind, c.name, lines, c.start, c.end)
                digest = _digest(text)
                if digests[cid] != digest:
                    rows.rows_of.setdefault(digest, []).append(cid)
                digests[cid] = digest
                new_places.append((places[cid], digest))
                if digest not in rows.have:
                    texts.setdefault(digest, text)
        del places
        _fill(rows, cache.vectors(model, list(texts)))  # a changed file: most of its chunks' texts are known
        order = [d for d in texts if d not in rows.have]
        cache.save(model, new_places, ())
        for i in range(0, len(order), EMBED_GROUP):
            if budget_s is not None and time.monotonic() - started > budget_s:
                stats.missing = sum(len(rows.rows_of[d]) for d in order[i:])
                break
            group = order[i : i + EMBED_GROUP]
            embedded = embedder.embed([texts[d] for d in group])
            for digest, vector in zip(group, embedded, strict=True):
                if not rows.add(digest, vector):
                    raise _SizeChanged
            cache.save(model, (), ((d, v.astype(np.float32).tobytes()) for d, v in zip(group, embedded, strict=True)))
    except _SizeChanged:
        cache.errors += 1
        cache.forget(model)
        if not retry:
            raise EmbeddingsError(f"embeddings ({embedder.name}): vectors keep changing size") from None
        return embed_index(index, embedder, cache, budget_s=budget_s, retry=False)
    matrix = rows.matrix if rows.matrix is not None else np.zeros((len(index.chunks), 0), dtype=np.float32)
    stats.reused = len(index.chunks) - sum(len(rows.rows_of[d]) for d in order)
    stats.embedded = len(index.chunks) - stats.reused - stats.missing
    stats.dimensions = int(matrix.shape[1])
    stats.seconds = time.monotonic() - started
    stats.cache_errors = cache.errors
    return ChunkVectors(embedder.name, matrix, stats)


def _fill(rows: _Rows, found: Iterator[tuple[bytes, bytes]]) -> None:
    for digest, blob in found:
        if not rows.add(digest, np.frombuffer(blob, dtype=np.float32)):
            raise _SizeChanged
