"""Clients of a provider's embeddings and rerank endpoints (OpenAI-compatible ``/embeddings``, Cohere/Jina-style
``/rerank``), through the openai SDK: its auth, base URL, timeouts and error classes.

A model string is resolved the way a reviewer's is (``models.registry.model_request``): the provider's
base URL and the key from the variable it names. Only ``openai`` and ``openai-compatible`` providers
have these endpoints (Ollama, vLLM, llama.cpp servers, LM Studio, gateways); any other kind is refused
in one line. Every failure is an ``EmbeddingsError`` with one line that never carries a key.

A plugin registers more embeddings providers by name (``codejury_register_embeddings``): with
``embeddings_model = "NAME:MODEL"`` naming one, its factory builds the client (``EmbeddingsRequest``
in, an object with ``embed(texts)`` out, sync or async) and ``PluginEmbedder`` gives it the same
batches, bounds and checks as the built-in client. A registered name is chosen before a configured
provider of the same name, and its vectors are kept under their own key (``plugin NAME:MODEL``).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from codejury.errors import CodejuryError, ModelSetupError
from codejury.models.embeddings import EmbeddingsFactory, EmbeddingsRequest
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


class _Batched:
    """``embed(texts)`` in batches of ``EMBED_BATCH`` texts, ``EMBED_PARALLEL`` at a time; every batch's vectors
    of the size the first had. Subclasses set ``name`` and answer one batch in ``_batch``."""

    name: str

    def __init__(self) -> None:
        self._dim: int | None = None
        self._lock = threading.Lock()

    def _batch(self, texts: Sequence[str]) -> Vectors:
        raise NotImplementedError

    def _same_size(self, matrix: Vectors) -> Vectors:
        with self._lock:
            if self._dim is None:
                self._dim = matrix.shape[1]
            elif matrix.shape[1] != self._dim:
                raise EmbeddingsError(
                    f"embeddings ({self.name}): vectors of {matrix.shape[1]} dimensions after {self._dim}"
                )
        return matrix

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, in order (several calls, ``EMBED_PARALLEL`` at a time)."""
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        batches = [texts[i : i + EMBED_BATCH] for i in range(0, len(texts), EMBED_BATCH)]
        if len(batches) == 1:
            return self._batch(batches[0])
        with ThreadPoolExecutor(max_workers=EMBED_PARALLEL, thread_name_prefix="codejury-embed") as pool:
            return np.vstack(list(pool.map(self._batch, batches)))


class Embedder(_Batched):
    """``embed(texts)``: unit vectors from a provider's ``/embeddings``; ``name`` ("provider:model") keys them."""

    def __init__(self, spec: str, providers: Mapping[str, ProviderSpec], env: Mapping[str, str]) -> None:
        super().__init__()
        self.name = spec.strip()
        self._client, self.model = _client(self.name, providers, env, "embeddings model")

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
        return self._same_size(matrix)

    def close(self) -> None:
        self._client.close()


class Reranker:
    """``rerank(query, documents)``: relevance scores from a Cohere/Jina-style ``/rerank`` endpoint."""

    kind = "endpoint"

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


# ---- embeddings providers registered by plugins ------------------------------------------------


def _line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}".rstrip(": ")


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _within(seconds: float, call: Callable[[Sequence[str]], Any], texts: Sequence[str]) -> Any:
    """``call(texts)`` in a daemon thread, waited for at most ``seconds`` (TimeoutError after): a plugin's
    call that hangs is left behind, and never holds up the review or the process's exit."""
    done = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call(texts)
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="codejury-embed-call", daemon=True).start()
    if not done.wait(seconds):
        raise TimeoutError
    if "error" in box:
        raise box["error"]
    return box["value"]


class PluginEmbedder(_Batched):
    """A registered provider's client as an embedder: ``EMBED_BATCH`` texts a call, ``EMBED_PARALLEL`` at once,
    each call bounded by ``TIMEOUT_S``, the answer checked (one vector per text, one size) and normalised."""

    def __init__(self, spec: str, factory: EmbeddingsFactory, env: Mapping[str, str]) -> None:
        super().__init__()
        self.name = spec.strip()
        provider, _, model = self.name.partition(":")
        self.key = f"plugin {self.name}"
        """The vectors' key in the cache: never the same as a configured provider's ``NAME:MODEL``."""
        try:
            self._client = factory(EmbeddingsRequest(provider.strip().lower(), model.strip(), env))
        except Exception as exc:  # the plugin's own code: a missing key, a bad setting
            raise EmbeddingsError(f"embeddings provider {provider!r} could not start ({_line(exc)})") from None

    def _call(self, texts: Sequence[str]) -> Any:
        answer = self._client.embed(list(texts))
        if inspect.isawaitable(answer):  # an async client: run to its end in this thread, within the time
            return asyncio.run(asyncio.wait_for(_awaited(answer), TIMEOUT_S))
        return answer

    def _batch(self, texts: Sequence[str]) -> Vectors:
        try:
            rows = _within(TIMEOUT_S, self._call, texts)
        except TimeoutError:
            raise EmbeddingsError(f"embeddings ({self.name}) failed (no answer within {TIMEOUT_S:g} s)") from None
        except Exception as exc:  # whatever the plugin's client raises
            raise EmbeddingsError(f"embeddings ({self.name}) failed ({_line(exc)})") from None
        try:
            count = len(rows)
            matrix = normalised(rows)
        except (TypeError, ValueError, EmbeddingsError):
            raise EmbeddingsError(f"embeddings ({self.name}): the answer is not a list of vectors") from None
        if count != len(texts) or matrix.shape[1] == 0:
            raise EmbeddingsError(f"embeddings ({self.name}): {count} vectors for {len(texts)} texts")
        return self._same_size(matrix)

    def close(self) -> None:
        closer = getattr(self._client, "close", None)
        if callable(closer):
            try:
                result = closer()
                if inspect.isawaitable(result):
                    asyncio.run(_awaited(result))
            except Exception:  # closing is best effort
                return


def open_embedder(
    spec: str,
    providers: Mapping[str, ProviderSpec],
    env: Mapping[str, str],
    registered: Mapping[str, EmbeddingsFactory] | None = None,
) -> Embedder | PluginEmbedder:
    """The embedder of ``spec``: a registered provider's when NAME is registered, else the configured provider's."""
    name = spec.strip().partition(":")[0].strip().lower()
    factories = {k.lower(): v for k, v in (registered or {}).items()}
    if name in factories:
        return PluginEmbedder(spec, factories[name], env)
    return Embedder(spec, providers, env)
