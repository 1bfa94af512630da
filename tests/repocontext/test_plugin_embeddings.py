"""Embeddings providers a plugin registers (``codejury_register_embeddings``): chosen by ``embeddings_model =
"NAME:MODEL"``, used by the search, keyed apart in the vector cache, bounded and failing soft like the built-in
client; an unknown NAME is a one-line configuration error.

This module is also the plugin (``--plugin tests.repocontext.test_plugin_embeddings``): deterministic vectors from
hashed words, so a chunk and a query that share words are near.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from codejury.cli import cli
from codejury.errors import ConfigError
from codejury.models.providers import BUILTIN_PROVIDERS
from codejury.plugin import EmbeddingsRequest, hookimpl
from codejury.repocontext import RepoContext, build_index
from codejury.repocontext.embeddings import EmbeddingsError, PluginEmbedder, open_embedder
from codejury.repocontext.retrieval import RetrievalConfig, open_retriever
from tests.timing import bounded

from .conftest import write_repo

PLUGIN = __name__
DIMENSIONS = 64
CALLS: list[tuple[str, str, int]] = []
"""(provider, model, texts) of every embed call the plugin's clients answered."""


class HashedWords:
    """One vector per text: each word adds 1 at its hash (the provider's name salts it: two providers, two spaces)."""

    def __init__(self, request: EmbeddingsRequest) -> None:
        self.provider, self.model = request.provider, request.model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        CALLS.append((self.provider, self.model, len(texts)))
        rows = []
        for text in texts:
            row = [0.0] * DIMENSIONS
            for word in re.findall(r"[a-z]+", text.lower()):
                row[zlib.crc32(f"{self.provider}/{word}".encode()) % DIMENSIONS] += 1.0
            rows.append(row)
        return rows


class AsyncHashedWords(HashedWords):
    async def embed(self, texts: Sequence[str]) -> list[list[float]]:  # type: ignore[override]
        await asyncio.sleep(0)
        return HashedWords.embed(self, texts)


@hookimpl
def codejury_register_embeddings(register: Callable[[str, Any], None]) -> None:
    register("hashvec", HashedWords)
    register("hashvec2", HashedWords)
    register("asyncvec", AsyncHashedWords)


FACTORIES: dict[str, Any] = {"hashvec": HashedWords, "hashvec2": HashedWords, "asyncvec": AsyncHashedWords}


def _config(spec: str, factories: dict[str, Any] | None = None) -> RetrievalConfig:
    return RetrievalConfig(
        spec, providers=BUILTIN_PROVIDERS, embeddings_providers=FACTORIES if factories is None else factories
    )


def test_the_hook_is_a_registry_and_the_built_in_plugin_registers_none() -> None:
    from codejury.plugins import collect_registry, load_plugins, make_plugin_manager

    assert collect_registry(make_plugin_manager(), "codejury_register_embeddings") == {}
    assert dict(load_plugins([PLUGIN]).embeddings) == FACTORIES


def test_the_search_uses_the_registered_providers_vectors(repo: Path, tmp_path: Path) -> None:
    write_repo(repo, {"shop/ledger.py": "def settle(book):\n    # charge the card of each customer\n    return book\n"})
    index = build_index(repo)
    CALLS.clear()
    retriever = open_retriever(index, _config("hashvec:words-1"), tmp_path / "v.sqlite3")
    assert retriever.vectors is not None and retriever.notes == ()
    assert retriever.vectors.model == "hashvec:words-1" and retriever.vectors.stats.dimensions == DIMENSIONS
    assert {(p, m) for p, m, _ in CALLS} == {("hashvec", "words-1")}
    assert sum(n for _, _, n in CALLS) == len(index.chunks)
    answer = retriever.search("each customer", k=3)
    assert answer.vector is not None
    assert [index.chunks[cid].name for cid, _ in answer.vector][0] == "settle"  # its comment's words
    assert "vector" in answer.steps and answer.final[0] == answer.fused[0]
    assert CALLS[-1] == ("hashvec", "words-1", 1)  # the query, embedded by the same provider


def test_switching_provider_embeds_again_and_never_mixes_vectors(repo: Path, tmp_path: Path) -> None:
    index = build_index(repo)
    cache = tmp_path / "v.sqlite3"
    first = open_retriever(index, _config("hashvec:m"), cache).vectors
    again = open_retriever(index, _config("hashvec:m"), cache).vectors
    other = open_retriever(index, _config("hashvec2:m"), cache).vectors
    assert first is not None and again is not None and other is not None
    assert (first.stats.embedded, again.stats.embedded, again.stats.reused) == (len(index.chunks), 0, len(index.chunks))
    assert (other.stats.embedded, other.stats.reused) == (len(index.chunks), 0)
    assert not (first.matrix == other.matrix).all()
    with sqlite3.connect(cache) as db:
        keys = {m for (m,) in db.execute("SELECT DISTINCT model FROM vectors")}
    assert keys == {"plugin hashvec:m", "plugin hashvec2:m"}


def test_a_registered_name_comes_before_a_configured_provider_and_keys_its_own_vectors() -> None:
    embedder = open_embedder("OLLAMA:nomic-embed-text", BUILTIN_PROVIDERS, {}, {"ollama": HashedWords})
    assert isinstance(embedder, PluginEmbedder)
    assert (embedder.name, embedder.key) == ("OLLAMA:nomic-embed-text", "plugin OLLAMA:nomic-embed-text")
    assert embedder.embed(["a b", "a b", "c"]).shape == (3, DIMENSIONS)


def test_an_async_provider_is_awaited(repo: Path) -> None:
    retriever = open_retriever(build_index(repo), _config("asyncvec:m"), None)
    assert retriever.vectors is not None and retriever.search("unit price").vector


class _Broken:
    def __init__(self, request: EmbeddingsRequest) -> None:
        self.key = request.env["HASHVEC_KEY"]  # a provider that reads its key from the environment

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0]]  # one vector, whatever it was given


class _Hanging(HashedWords):
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(30)  # in the daemon thread the call is left behind in
        return super().embed(texts)


def test_a_provider_that_fails_leaves_bm25_working_with_one_note(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from codejury.repocontext import embeddings

    index = build_index(repo)
    no_key = open_retriever(index, _config("broken:m", {"broken": _Broken}), None)
    assert no_key.notes == ("vectors off: embeddings provider 'broken' could not start (KeyError: 'HASHVEC_KEY')",)
    keyed = RetrievalConfig("broken:m", env={"HASHVEC_KEY": "k"}, embeddings_providers={"broken": _Broken})
    miscounted = open_retriever(index, keyed, None)
    assert miscounted.vectors is None
    assert miscounted.notes[0].startswith("vectors off: embeddings (broken:m): 1 vectors for")
    monkeypatch.setattr(embeddings, "TIMEOUT_S", 0.2)
    with bounded(0.2, hung_s=30, what="opening the retriever"):  # the call is left behind, not waited for
        hanging = open_retriever(index, _config("slow:m", {"slow": _Hanging}), None)
    assert hanging.notes == ("vectors off: embeddings (slow:m) failed (no answer within 0.2 s)",)
    for retriever in (no_key, miscounted, hanging):
        assert retriever.search("unit price").final  # BM25 answers


def test_an_embedder_refuses_answers_that_are_not_vectors() -> None:
    class Words:
        def __init__(self, request: EmbeddingsRequest) -> None:
            pass

        def embed(self, texts: Sequence[str]) -> Any:
            return ["not", "vectors"][: len(texts)]

    with pytest.raises(EmbeddingsError, match=r"embeddings \(w:m\): the answer is not a list of vectors"):
        PluginEmbedder("w:m", Words, {}).embed(["a", "b"])


def test_an_unknown_provider_is_a_one_line_configuration_error_at_the_cli(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEJURY_CACHE_DIR", str(tmp_path / "cache"))
    config = tmp_path / "vectors.toml"
    config.write_text('[retrieval]\nembeddings_model = "hashvec:m"\n', encoding="utf-8")
    args = ["search", "unit price", "--repo", str(repo), "--config", str(config)]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 2
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith(f"codejury: {config}: retrieval.embeddings_model: no provider named 'hashvec'")
    assert "a plugin's provider needs its plugin loaded" in line
    done = CliRunner().invoke(cli, [*args, "--plugin", PLUGIN, "--format", "json"])
    assert done.exit_code == 0, done.output
    found = json.loads(done.stdout)
    assert found["vector"] and found["final"][0]["name"] == "unit_price"


async def test_a_review_embeds_with_the_plugins_provider_and_refuses_an_unknown_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codejury.config import RetrievalSettings
    from codejury.findings import Review
    from codejury.testing.scripted import Final, Raw, ToolCall
    from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings

    monkeypatch.setenv("CODEJURY_CACHE_DIR", str(tmp_path / "cache"))
    change = make_change(tmp_path, {"app/auth/users.py": (AUTH_OLD, AUTH_NEW)})
    settings = scripted_settings(retrieval=RetrievalSettings(embeddings_model="hashvec:m"))
    scripts = {
        "security": [ToolCall("search_code", {"query": "look up a user by name"}), Final([])],
        "coordinator": [Raw({"decisions": []})],
    }
    review, _, events = await run_review(change, scripts, settings=settings, plugins=[PLUGIN])
    assert isinstance(review, Review)
    (built,) = [e for e in events.events if e["type"] == "repo_index"]
    assert built["vectors"]["model"] == "hashvec:m" and built["vectors"]["embedded"] > 0 and built["notes"] == []
    (search,) = [e for e in events.events if e["type"] == "search_code"]
    assert search["vector"] and search["fused"]
    with pytest.raises(ConfigError, match="retrieval.embeddings_model: no provider named 'hashvec'"):
        await run_review(change, scripts, settings=settings)  # without the plugin: refused before any model
    context = RepoContext(tmp_path / "repo", cache_dir=tmp_path / "c2", retrieval=_config("hashvec:m"))
    assert "1. app/auth/users.py:" in context.search_code("user name")


def test_the_documented_embeddings_provider_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/plugins.md's plugin (its Python blocks, in order) registers ``voyage``; pointed at the fake server's
    ``/v1/embeddings`` (the same request and answer shape), it embeds through codejury's bounded client."""
    import importlib
    import sys

    from codejury_fakes import FakeProviderServer

    from codejury.plugins import load_plugins

    doc = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
    blocks = re.findall(r"^```python\n(.*?)^```$", doc.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    (tmp_path / "house_embeddings.py").write_text("\n\n".join(blocks), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "house_embeddings", raising=False)
    importlib.invalidate_caches()
    factory = load_plugins(["house_embeddings"]).embeddings["voyage"]
    with FakeProviderServer() as server:
        server.serve_embeddings("voyage-code-3", dimensions=32)
        env = {"VOYAGE_API_KEY": "voyage-key", "VOYAGE_BASE_URL": server.openai_base_url}
        vectors = PluginEmbedder("voyage:voyage-code-3", factory, env).embed(["parse config", "parse config", "pay"])
        sent = [r for r in server.requests if r.path.endswith("/embeddings")]
    assert vectors.shape == (3, 32) and float(vectors[0] @ vectors[1]) == pytest.approx(1.0)
    assert sent[0].headers["authorization"] == "Bearer voyage-key"
    with pytest.raises(EmbeddingsError, match=r"'voyage' could not start \(KeyError: 'VOYAGE_API_KEY'\)"):
        PluginEmbedder("voyage:voyage-code-3", factory, {})
