"""Clients of a provider's embeddings and rerank endpoints (OpenAI-compatible ``/embeddings``, Cohere/Jina-style
``/rerank``), through the openai SDK: its auth, base URL, timeouts and error classes.

A model string is resolved the way a reviewer's is (``models.registry.model_request``): the provider's
base URL and the key from the variable it names. Only ``openai`` and ``openai-compatible`` providers
have these endpoints (Ollama, vLLM, llama.cpp servers, LM Studio, gateways); any other kind is refused
in one line. Every failure is an ``EmbeddingsError`` with one line that never carries a key.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from codejury.errors import CodejuryError, ModelSetupError
from codejury.models.registry import model_request

if TYPE_CHECKING:
    from openai import OpenAI

    from codejury.models.providers import ProviderSpec

Vectors = npt.NDArray[np.float32]

EMBED_BATCH = 64
"""Texts per ``/embeddings`` request."""
EMBED_PARALLEL = 4
"""Requests in flight at once while a repository is embedded."""
TIMEOUT_S = 60.0
_KINDS = ("openai", "openai-compatible")


class EmbeddingsError(CodejuryError):
    """An embeddings or rerank call failed (unreachable server, refused request, malformed answer)."""


def _client(spec: str, providers: Mapping[str, ProviderSpec], env: Mapping[str, str], what: str) -> tuple[OpenAI, str]:
    """The SDK client of ``spec``'s provider and the model's name there."""
    try:
        request, _ = model_request(spec, providers, env=env, timeout_s=TIMEOUT_S)
    except ModelSetupError as exc:
        raise EmbeddingsError(f"{what} {spec!r}: {exc}") from None
    if request.provider.kind not in _KINDS:
        raise EmbeddingsError(
            f"{what} {spec!r}: provider {request.provider.name!r} is of kind {request.provider.kind!r}; "
            "only openai and openai-compatible providers serve this endpoint"
        )
    from openai import OpenAI

    return OpenAI(
        api_key=request.api_key, base_url=request.base_url, max_retries=1, timeout=TIMEOUT_S
    ), request.model_name


def _failure(what: str, exc: Exception) -> EmbeddingsError:
    from openai import APIStatusError

    if isinstance(exc, APIStatusError):
        body: Any = exc.body
        message = body.get("message") if isinstance(body, dict) and body.get("message") else exc.message
        detail = f"HTTP {exc.status_code}: {' '.join(str(message).split())[:200]}"
    else:
        detail = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return EmbeddingsError(f"{what} failed ({detail})")


def normalised(rows: Any) -> Vectors:
    """``rows`` as a float32 matrix with unit-length rows (a zero row stays zero)."""
    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim != 2:
        raise EmbeddingsError("the embeddings endpoint answered something that is not a list of vectors")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: Vectors = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit


class Embedder:
    """``embed(texts)``: unit vectors from a provider's ``/embeddings``; ``name`` ("provider:model") keys them."""

    def __init__(self, spec: str, providers: Mapping[str, ProviderSpec], env: Mapping[str, str]) -> None:
        self.name = spec.strip()
        self._client, self.model = _client(self.name, providers, env, "embeddings model")
        self._dim: int | None = None
        self._lock = threading.Lock()

    def _batch(self, texts: Sequence[str]) -> Vectors:
        # The SDK asks for base64 (float32 bytes: a quarter of JSON's size, decoded with NumPy), as OpenAI,
        # Ollama, vLLM and llama.cpp servers all answer.
        try:
            answer = self._client.embeddings.create(model=self.model, input=list(texts))
        except Exception as exc:  # the SDK's errors, and whatever the transport raises
            raise _failure(f"embeddings ({self.name})", exc) from None
        data = sorted(answer.data, key=lambda d: d.index)
        if len(data) != len(texts) or any(not d.embedding for d in data):
            raise EmbeddingsError(f"embeddings ({self.name}): {len(data)} vectors for {len(texts)} texts")
        matrix = normalised([d.embedding for d in data])
        with self._lock:
            if self._dim is None:
                self._dim = matrix.shape[1]
            elif matrix.shape[1] != self._dim:
                raise EmbeddingsError(
                    f"embeddings ({self.name}): vectors of {matrix.shape[1]} dimensions after {self._dim}"
                )
        return matrix

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, in order (several requests, ``EMBED_PARALLEL`` at a time)."""
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        batches = [texts[i : i + EMBED_BATCH] for i in range(0, len(texts), EMBED_BATCH)]
        if len(batches) == 1:
            return self._batch(batches[0])
        with ThreadPoolExecutor(max_workers=EMBED_PARALLEL, thread_name_prefix="codejury-embed") as pool:
            return np.vstack(list(pool.map(self._batch, batches)))

    def close(self) -> None:
        self._client.close()


class Reranker:
    """``rerank(query, documents)``: relevance scores from a Cohere/Jina-style ``/rerank`` endpoint."""

    def __init__(self, spec: str, providers: Mapping[str, ProviderSpec], env: Mapping[str, str]) -> None:
        self.name = spec.strip()
        self._client, self.model = _client(self.name, providers, env, "rerank model")

    def rerank(self, query: str, documents: Sequence[str]) -> list[tuple[int, float]]:
        """(document index, relevance score) for every document, best first."""
        if not documents:
            return []
        body = {"model": self.model, "query": query, "documents": list(documents), "top_n": len(documents)}
        try:
            answer: Any = self._client.post("/rerank", body=body, cast_to=object)
        except Exception as exc:
            raise _failure(f"rerank ({self.name})", exc) from None
        results = answer.get("results") if isinstance(answer, dict) else None
        try:
            scored = [(int(r["index"]), float(r["relevance_score"])) for r in results or ()]
        except (KeyError, TypeError, ValueError):
            scored = []
        if not scored or any(not 0 <= i < len(documents) for i, _ in scored):
            raise EmbeddingsError(f"rerank ({self.name}): the answer has no usable results")
        return sorted(scored, key=lambda r: (-r[1], r[0]))

    def close(self) -> None:
        self._client.close()
