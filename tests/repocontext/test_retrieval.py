"""Hybrid retrieval: vectors through a provider's /embeddings, fusion, reranking, the semantic cache, and
every step visible (events, spans, ``codejury search --explain``), against FakeProviderServer."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from codejury_fakes import FakeProviderServer

from codejury.cli import cli
from codejury.models.providers import BUILTIN_PROVIDERS, ProviderSpec
from codejury.repocontext import RepoContext, build_index
from codejury.repocontext.embeddings import Embedder, EmbeddingsError
from codejury.repocontext.retrieval import (
    VECTORS_OFF,
    RetrievalConfig,
    Retriever,
    open_retriever,
    reciprocal_rank_fusion,
)
from codejury.repocontext.vectors import VectorCache, embed_index

from .conftest import write_repo

EMBED = "fake-embed"
RERANK = "fake-rerank"


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        srv.serve_embeddings(EMBED, dimensions=64)
        srv.serve_rerank(RERANK)
        yield srv


def _providers(srv: FakeProviderServer) -> dict[str, ProviderSpec]:
    return {**BUILTIN_PROVIDERS, "team": ProviderSpec("team", "openai-compatible", base_url=srv.openai_base_url)}


def _config(srv: FakeProviderServer, *, rerank: bool = False, embed: str | None = EMBED) -> RetrievalConfig:
    return RetrievalConfig(
        embeddings_model=f"team:{embed}" if embed else None,
        rerank_model=f"team:{RERANK}" if rerank else None,
        providers=_providers(srv),
        env={},
    )


def _embedded_texts(srv: FakeProviderServer) -> list[str]:
    texts: list[str] = []
    for r in srv.requests:
        if r.path.endswith("/embeddings") and r.body:
            given = r.body["input"]
            texts += [given] if isinstance(given, str) else given
    return texts


def test_the_fake_refuses_what_the_embeddings_api_refuses(server: FakeProviderServer) -> None:
    import httpx2 as httpx  # what the openai SDK speaks; a raw client to send what the SDK never would

    url = f"{server.openai_base_url}/embeddings"
    auth = {"Authorization": "Bearer k"}
    assert httpx.post(url, json={"model": EMBED, "input": "x"}).status_code == 401
    assert httpx.post(url, json={"model": "other", "input": "x"}, headers=auth).status_code == 404
    for bad in ({"model": EMBED}, {"model": EMBED, "input": ""}, {"model": EMBED, "input": []},
                {"model": EMBED, "input": ["a", 3]}, {"model": EMBED, "input": ["a"] * 2049},
                {"model": EMBED, "input": "x " * 20_000}, {"model": EMBED, "input": "x", "encoding_format": "hex"},
                {"model": EMBED, "input": "x", "dimensions": 65}):  # fmt: skip
        answer = httpx.post(url, json=bad, headers=auth)
        assert answer.status_code == 400, bad
        assert answer.json()["error"]["type"] == "invalid_request_error"
    ok = httpx.post(url, json={"model": EMBED, "input": ["a b", "a b"]}, headers=auth).json()
    assert ok["data"][0]["embedding"] == ok["data"][1]["embedding"] and len(ok["data"][0]["embedding"]) == 64
    rerank = f"{server.openai_base_url}/rerank"
    assert httpx.post(rerank, json={"model": RERANK, "query": "", "documents": ["a"]}, headers=auth).status_code == 400
    assert httpx.post(rerank, json={"model": RERANK, "query": "a", "documents": []}, headers=auth).status_code == 400


def test_embedder_goes_through_the_configured_provider_and_names_what_failed(server: FakeProviderServer) -> None:
    embedder = Embedder(f"team:{EMBED}", _providers(server), {})
    vectors = embedder.embed(["parse config file", "parse config file", "refund order"])
    assert vectors.shape == (3, 64)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(1.0)
    assert float(vectors[0] @ vectors[2]) < 0.9
    missing = Embedder("team:no-such-model", _providers(server), {})
    with pytest.raises(EmbeddingsError, match=r"HTTP 404: The model `no-such-model` does not exist"):
        missing.embed(["x"])
    with pytest.raises(EmbeddingsError, match="only openai and openai-compatible providers"):
        Embedder("anthropic:claude-x", _providers(server), {"ANTHROPIC_API_KEY": "k"})
    with pytest.raises(EmbeddingsError, match="set OPENAI_API_KEY"):
        Embedder("openai:text-embedding-3-small", _providers(server), {})


def test_chunks_are_embedded_with_their_prefix_and_only_changed_chunks_again(
    server: FakeProviderServer, repo: Path, tmp_path: Path
) -> None:
    cache = VectorCache(tmp_path / "vectors.sqlite3")
    embedder = Embedder(f"team:{EMBED}", _providers(server), {})
    first = embed_index(build_index(repo), embedder, cache)
    texts = _embedded_texts(server)
    assert first.stats.embedded == len(texts) == first.matrix.shape[0] > 0
    assert any(t.startswith("# file: shop/prices.py (python)\n# function unit_price\n") for t in texts)
    # One function of checkout.py changes: that chunk alone is embedded again, not the whole file.
    checkout = (repo / "shop/checkout.py").read_text(encoding="utf-8")
    (repo / "shop/checkout.py").write_text(checkout.replace("round(amount, 2)", "round(amount, 3)"), encoding="utf-8")
    before = len(_embedded_texts(server))
    second = embed_index(build_index(repo), embedder, cache)
    again = _embedded_texts(server)[before:]
    assert len(again) == 1 and "# function charge_card" in again[0] and "round(amount, 3)" in again[0]
    assert (second.stats.embedded, second.stats.reused) == (1, second.matrix.shape[0] - 1)
    # Another model is another key: its vectors are never mixed with the first model's.
    server.serve_embeddings("fake-embed-2", dimensions=32)
    other = embed_index(build_index(repo), Embedder("team:fake-embed-2", _providers(server), {}), cache)
    assert other.stats.embedded == other.matrix.shape[0] and other.matrix.shape[1] == 32
    with sqlite3.connect(tmp_path / "vectors.sqlite3") as db:
        models = {m for (m,) in db.execute("SELECT DISTINCT model FROM vectors")}
    assert models == {f"team:{EMBED}", "team:fake-embed-2"}


def test_a_model_whose_vectors_change_size_is_embedded_again_whole(
    server: FakeProviderServer, repo: Path, tmp_path: Path
) -> None:
    cache = VectorCache(tmp_path / "vectors.sqlite3")
    embedder = Embedder(f"team:{EMBED}", _providers(server), {})
    first = embed_index(build_index(repo), embedder, cache)
    assert first.matrix.shape[1] == 64
    server.serve_embeddings(EMBED, dimensions=32)  # the server now answers another size under the same name
    (repo / "shop/new.py").write_text("def refund(order):\n    return order\n", encoding="utf-8")
    second = embed_index(build_index(repo), Embedder(f"team:{EMBED}", _providers(server), {}), cache)
    assert second.matrix.shape == (first.matrix.shape[0] + 1, 32)
    assert (second.stats.embedded, second.stats.reused) == (second.matrix.shape[0], 0)


def test_embedding_stops_at_its_budget_and_the_next_index_goes_on(
    server: FakeProviderServer, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codejury.repocontext import vectors

    monkeypatch.setattr(vectors, "EMBED_GROUP", 3)
    server.serve_embeddings(EMBED, dimensions=64, latency_s=0.3)
    index = build_index(repo)
    config = RetrievalConfig(f"team:{EMBED}", providers=_providers(server), embed_budget_s=0.1)
    partial = open_retriever(index, config, tmp_path / "v.sqlite3")
    assert partial.vectors is not None
    assert (partial.vectors.stats.embedded, partial.vectors.stats.missing) == (3, len(index.chunks) - 3)
    assert partial.notes[0].startswith(f"vectors partial: {len(index.chunks) - 3} of {len(index.chunks)} chunks")
    assert partial.search("unit price").final  # BM25 still finds what has no vector yet
    server.serve_embeddings(EMBED, dimensions=64)
    rest = open_retriever(index, replace(config, embed_budget_s=None), tmp_path / "v.sqlite3")
    assert rest.vectors is not None and rest.notes == ()
    assert (rest.vectors.stats.embedded, rest.vectors.stats.reused) == (len(index.chunks) - 3, 3)


def test_reciprocal_rank_fusion_rewards_agreement() -> None:
    fused = reciprocal_rank_fusion([[(1, 9.0), (2, 5.0), (3, 1.0)], [(3, 0.9), (1, 0.8), (4, 0.1)]])
    assert [cid for cid, _ in fused] == [1, 3, 2, 4]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)


def test_hybrid_search_finds_by_meaning_what_bm25_ranks_lower_and_reranks(
    server: FakeProviderServer, repo: Path, tmp_path: Path
) -> None:
    write_repo(repo, {"shop/ledger.py": "def settle(book):\n    # charge the card of each customer\n    return book\n"})
    index = build_index(repo)
    retriever = open_retriever(index, _config(server, rerank=True), tmp_path / "v.sqlite3")
    answer = retriever.search("charge card", k=3)
    assert answer.vector is not None and answer.reranked is not None
    names = lambda hits: [index.chunks[c].name for c, _ in hits]  # noqa: E731
    assert "settle" not in names(answer.bm25)[:1]  # BM25 reads identifiers: the comment's words barely count
    assert "settle" in names(answer.vector)[:3]
    assert set(names(answer.final)) <= set(names(answer.fused))
    assert names(answer.final)[0] == "charge_card"
    assert [r.path for r in server.requests if r.path.endswith("/rerank")] == ["/v1/rerank"]


def test_a_similar_query_is_answered_from_the_semantic_cache(server: FakeProviderServer, repo: Path) -> None:
    retriever = open_retriever(build_index(repo), _config(server), None)
    first = retriever.search("unit price tax", k=2)
    again = retriever.search("unit_price tax", k=2)  # other spelling, same words: cosine 1
    other = retriever.search("parse http request", k=2)
    assert (first.cached, again.cached, other.cached) == (False, True, False)
    assert again.final == first.final
    assert (retriever.cache_hits, retriever.cache_misses) == (1, 2)


def test_without_an_embeddings_model_bm25_answers_alone_and_says_so(repo: Path) -> None:
    retriever = Retriever(build_index(repo), notes=[VECTORS_OFF])
    answer = retriever.search("unit price", k=2)
    assert answer.vector is None and answer.reranked is None and answer.final == answer.bm25[:2]
    assert answer.notes == (VECTORS_OFF,)


def test_an_embeddings_server_that_fails_leaves_bm25_working(server: FakeProviderServer, repo: Path) -> None:
    retriever = open_retriever(build_index(repo), _config(server, embed="missing"), None)
    assert retriever.vectors is None
    assert retriever.notes[0].startswith("vectors off: embeddings (team:missing) failed (HTTP 404")
    assert retriever.search("unit price").final


def test_search_code_is_an_event_with_every_list(server: FakeProviderServer, repo: Path, tmp_path: Path) -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    context = RepoContext(
        repo,
        cache_dir=tmp_path / "cache",
        on_event=lambda kind, **fields: events.append((kind, fields)),
        retrieval=_config(server, rerank=True),
    )
    text = context.search_code("unit price", k=2)
    context.search_code("unit_price", k=2)
    built = dict(events)["repo_index"]
    assert built["vectors"]["model"] == f"team:{EMBED}" and built["vectors"]["embedded"] > 0
    searches = [fields for kind, fields in events if kind == "search_code"]
    assert [s["cached"] for s in searches] == [False, True]
    assert searches[1]["cache_hits"] == 1
    first = searches[0]
    assert first["bm25"][0].startswith("shop/prices.py:4-6 unit_price ")
    # What the reviewer reads is the reranked list, in its order.
    shown = [line.split(" ")[1] for line in text.splitlines() if line[:1].isdigit()]
    assert shown == [entry.split(" ")[0] for entry in first["reranked"][:2]]
    assert {"bm25", "vector", "fused", "reranked"} <= set(first) and len(first["fused"]) <= 10


def test_search_code_is_a_span_with_the_lists(server: FakeProviderServer, repo: Path, tmp_path: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from codejury.telemetry.tracing import set_tracer

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    set_tracer(provider.get_tracer("test"))
    try:
        RepoContext(repo, cache_dir=tmp_path / "c", retrieval=_config(server)).search_code("charge card", k=3)
    finally:
        set_tracer(None)
    (found,) = [s for s in exporter.get_finished_spans() if s.name == "codejury.search_code"]
    attributes = dict(found.attributes or {})
    assert attributes["codejury.search.cached"] is False
    assert any("charge_card" in line for line in attributes["codejury.search.vector"])  # type: ignore[union-attr]
    assert "codejury.search.query" not in attributes  # the query's text only with record.prompts


def _cli_config(tmp_path: Path, srv: FakeProviderServer, rerank: bool) -> Path:
    config = tmp_path / "retrieval.toml"
    lines = [
        f'[providers.team]\nbase_url = "{srv.openai_base_url}"\n',
        f'[retrieval]\nembeddings_model = "team:{EMBED}"\n' + (f'rerank_model = "team:{RERANK}"\n' if rerank else ""),
    ]
    config.write_text("\n".join(lines), encoding="utf-8")
    return config


def test_codejury_search_explain_prints_every_list_with_scores(
    server: FakeProviderServer, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEJURY_CACHE_DIR", str(tmp_path / "cache"))
    config = _cli_config(tmp_path, server, rerank=True)
    done = CliRunner().invoke(cli, ["search", "unit price", "--repo", str(repo), "--config", str(config), "--explain"])
    assert done.exit_code == 0, done.output
    out = done.stdout
    for title in ("BM25 (score):", "vector (cosine):", "fused (reciprocal rank fusion, k=60):", "reranked (relevance"):
        assert title in out
    assert " 1. shop/prices.py:4-6 unit_price " in out
    hybrid = _cli_config(tmp_path, server, rerank=False)
    plain = CliRunner().invoke(cli, ["search", "unit price", "--repo", str(repo), "--config", str(hybrid), "-k", "1"])
    assert plain.stdout.startswith("1. shop/prices.py:4-6 function unit_price")
    assert "BM25 (score)" not in plain.stdout


def test_codejury_search_json_and_bm25_alone(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEJURY_CACHE_DIR", str(tmp_path / "cache"))
    done = CliRunner().invoke(cli, ["search", "unit price", "--repo", str(repo), "--format", "json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    assert data["vector"] is None and data["bm25"][0]["path"] == "shop/prices.py"
    assert VECTORS_OFF in done.stderr


def test_codejury_search_refuses_bad_input(repo: Path, tmp_path: Path) -> None:
    empty = CliRunner().invoke(cli, ["search", "  ", "--repo", str(repo)])
    assert empty.exit_code == 2 and "give a query" in empty.stderr
    missing = CliRunner().invoke(cli, ["search", "x", "--repo", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such directory" in missing.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('[retrieval]\nembeddings_model = "no-colon"\n', encoding="utf-8")
    refused = CliRunner().invoke(cli, ["search", "x", "--repo", str(repo), "--config", str(bad)])
    assert refused.exit_code == 2 and "retrieval.embeddings_model" in refused.stderr


async def test_a_reviews_search_code_is_hybrid_and_in_its_events(
    server: FakeProviderServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codejury.config import ProviderSettings, RetrievalSettings
    from codejury.findings import Review
    from codejury.testing.scripted import Final, Raw, ToolCall
    from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings

    monkeypatch.setenv("CODEJURY_CACHE_DIR", str(tmp_path / "cache"))
    path = "app/auth/users.py"
    change = make_change(tmp_path, {path: (AUTH_OLD, AUTH_NEW)})
    settings = scripted_settings(
        providers={"team": ProviderSettings(base_url=server.openai_base_url)},
        retrieval=RetrievalSettings(embeddings_model=f"team:{EMBED}", rerank_model=f"team:{RERANK}"),
    )
    scripts = {
        "security": [ToolCall("search_code", {"query": "look up a user by name"}), Final([])],
        "coordinator": [Raw({"decisions": []})],
    }
    review, resolver, events = await run_review(change, scripts, settings=settings)
    assert isinstance(review, Review)
    assert "1. app/auth/users.py:" in resolver.models["security"].tool_results[0]  # type: ignore[attr-defined]
    logged = events.events
    (built,) = [e for e in logged if e["type"] == "repo_index"]
    assert built["vectors"]["model"] == f"team:{EMBED}" and built["reranker"] == f"team:{RERANK}"
    (search,) = [e for e in logged if e["type"] == "search_code"]
    assert search["query"] == "look up a user by name" and search["cached"] is False
    assert search["vector"] and search["reranked"] and search["fused"]
    assert any(r.path.endswith("/rerank") for r in server.requests)
