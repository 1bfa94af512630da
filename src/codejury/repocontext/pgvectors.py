"""Chunk vectors in PostgreSQL with pgvector: one store that every worker of a review service shares.

The same contract as the SQLite file (``vectors.VectorCache``): vectors keyed by (embeddings model,
digest of the embedded text), places (a chunk's path, blob, lines and name) mapped to the digest of
their text, and every failure counted in ``errors`` and read as a miss. Vectors are pgvector
``vector`` values, so the one database the service already runs on (its job queue and review
store) holds them, and a repository embedded by one worker is never embedded again by another.
The column has no fixed size: two embeddings models of different sizes share the table, each row
keyed by its model. A commit's nearest chunks are searched in NumPy over that commit's matrix
(``vectors.ChunkVectors``), read from here once per index.

Needs ``psycopg`` (the ``postgres`` extra) and the ``vector`` extension: created when the role may
create it, else it must be there already (``error`` says which is missing).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

_LOOKUP_BATCH = 1_000
_SCHEMA = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE TABLE IF NOT EXISTS codejury_chunk_vectors (model text NOT NULL, digest bytea NOT NULL, "
    "embedding vector NOT NULL, PRIMARY KEY (model, digest))",
    "CREATE TABLE IF NOT EXISTS codejury_chunk_places (place bytea PRIMARY KEY, digest bytea NOT NULL)",
)


def _literal(blob: bytes) -> str:
    """float32 bytes as pgvector's text form (``[0.25,-1.5]``); every float32 is written exactly."""
    return "[" + ",".join(repr(x) for x in np.frombuffer(blob, dtype=np.float32).tolist()) + "]"


def _from_binary(data: bytes) -> bytes:
    """pgvector's binary form (dimensions int16, unused int16, big-endian float32s) as native float32 bytes."""
    dimensions = int.from_bytes(data[:2], "big")
    return np.frombuffer(data, dtype=">f4", count=dimensions, offset=4).astype(np.float32).tobytes()


class PgVectorCache:
    """Vectors and places in PostgreSQL (``url``: ``postgresql://…``); every failure counts in ``errors``."""

    def __init__(self, url: str) -> None:
        self.errors = 0
        self.error: str | None = None
        """Why the store cannot be used (one line); None: it opened."""
        self._lock = threading.Lock()
        self._db: Any = None
        try:
            import psycopg
        except ImportError:
            self.errors += 1
            self.error = "psycopg is not installed (the postgres extra)"
            return
        try:
            db = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            self.errors += 1
            self.error = f"PostgreSQL unreachable ({type(exc).__name__})"
            return
        try:
            for statement in _SCHEMA:
                db.execute(statement)
        except psycopg.Error as exc:
            db.close()
            self.errors += 1
            first = " ".join(str(exc).split())[:200]
            self.error = f"the pgvector extension is not usable in this database ({first})"
            return
        self._db = db

    def _select(self, sql: str, keys: list[bytes], *first: str) -> dict[bytes, bytes]:
        found: dict[bytes, bytes] = {}
        if self._db is None or not keys:
            return found
        import psycopg

        try:
            with self._lock, self._db.cursor(binary=True) as cur:
                for i in range(0, len(keys), _LOOKUP_BATCH):
                    cur.execute(sql, (*first, keys[i : i + _LOOKUP_BATCH]))
                    found.update((bytes(k), bytes(v)) for k, v in cur.fetchall())
        except psycopg.Error:
            self.errors += 1
        return found

    def places(self, places: list[bytes]) -> dict[bytes, bytes]:
        """place → the digest of the text last embedded for it."""
        return self._select("SELECT place, digest FROM codejury_chunk_places WHERE place = ANY(%s)", places)

    def vectors(self, model: str, digests: list[bytes]) -> Iterator[tuple[bytes, bytes]]:
        """(digest, float32 bytes) of ``model`` for the ``digests`` it has, a batch at a time."""
        sql = "SELECT digest, embedding FROM codejury_chunk_vectors WHERE model = %s AND digest = ANY(%s)"
        for i in range(0, len(digests), _LOOKUP_BATCH):
            for digest, data in self._select(sql, digests[i : i + _LOOKUP_BATCH], model).items():
                yield digest, _from_binary(data)

    def forget(self, model: str) -> None:
        """Remove every vector of ``model``."""
        self._write(lambda db: db.execute("DELETE FROM codejury_chunk_vectors WHERE model = %s", (model,)))

    def save(self, model: str, places: Iterable[tuple[bytes, bytes]], vectors: Iterable[tuple[bytes, bytes]]) -> None:
        place_rows = list(places)
        vector_rows = [(model, digest, _literal(blob)) for digest, blob in vectors]

        def write(db: Any) -> None:
            with db.transaction(), db.cursor() as cur:
                cur.executemany(
                    "INSERT INTO codejury_chunk_places VALUES (%s, %s) "
                    "ON CONFLICT (place) DO UPDATE SET digest = EXCLUDED.digest",
                    place_rows,
                )
                cur.executemany(
                    "INSERT INTO codejury_chunk_vectors VALUES (%s, %s, %s::vector) "
                    "ON CONFLICT (model, digest) DO UPDATE SET embedding = EXCLUDED.embedding",
                    vector_rows,
                )

        if place_rows or vector_rows:
            self._write(write)

    def _write(self, action: Any) -> None:
        if self._db is None:
            return
        import psycopg

        try:
            with self._lock:
                action(self._db)
        except psycopg.Error:
            self.errors += 1

    def close(self) -> None:
        if self._db is not None:
            import psycopg

            try:
                self._db.close()
            except psycopg.Error:
                self.errors += 1
            self._db = None


__all__ = ["PgVectorCache"]
