"""What ``FakeProviderServer`` answers on ``/v1/embeddings`` (OpenAI) and ``/v1/rerank`` (Cohere/Jina style).

Vectors are deterministic: a text's words (identifiers split at camelCase and ``_``, lower-cased)
are each hashed into four of ``dimensions`` signed buckets, so texts sharing words are near each
other and the same text always gets the same vector. Rerank scores are the share of the query's words a document
holds. Neither is a language model: they exercise the plumbing (batching, caching, fusion, the
wire format), not the quality of a real model.

Requests are refused the way the real services refuse them: no ``Authorization`` header (401), a
model the server does not serve (404 ``model_not_found``), a missing or empty ``input``, more than
2,048 inputs, an input over 8,192 tokens, an unknown ``encoding_format``, a bad ``dimensions``,
an empty ``query`` or ``documents``, a bad ``top_n`` (400).
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

MAX_INPUTS = 2048
MAX_INPUT_TOKENS = 8192
MAX_DOCUMENTS = 1000
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


@dataclass(frozen=True)
class EmbeddingsModel:
    dimensions: int
    latency_s: float


@dataclass(frozen=True)
class RerankModel:
    latency_s: float


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


_SPREAD = 4
"""Buckets each word adds to: two words share all of them (look the same) only by a rare accident."""


@lru_cache(maxsize=65_536)
def _buckets(word: str, dimensions: int) -> tuple[tuple[int, float], ...]:
    digest = hashlib.blake2b(word.encode(), digest_size=5 * _SPREAD).digest()
    parts = (digest[i * 5 : i * 5 + 5] for i in range(_SPREAD))
    return tuple((int.from_bytes(p[:4], "little") % dimensions, 1.0 if p[4] & 1 else -1.0) for p in parts)


def fake_vector(text: str, dimensions: int) -> npt.NDArray[np.float64]:
    """The deterministic unit vector of ``text`` (all zeros for a text with no words)."""
    vector = np.zeros(dimensions, dtype=np.float64)
    for word in words(text):
        for bucket, sign in _buckets(word, dimensions):
            vector[bucket] += sign
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def _error(status: int, message: str, kind: str = "invalid_request_error", code: str | None = None) -> Any:
    return status, {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _authorised(headers: dict[str, str]) -> bool:
    return headers.get("authorization", "").lower().startswith("bearer ") and len(headers["authorization"]) > 7


def _unauthorised() -> Any:
    return _error(401, "You didn't provide an API key. Provide it in an Authorization header (Bearer).")


def _inputs(given: Any) -> list[str] | None:
    """The texts of an ``input`` (a string, strings, token ids or lists of token ids); None: not valid."""
    if isinstance(given, str):
        return [given] if given else None
    if not isinstance(given, list) or not given:
        return None
    if all(isinstance(t, int) and not isinstance(t, bool) for t in given):
        return [" ".join(f"t{t}" for t in given)]
    texts: list[str] = []
    for item in given:
        if isinstance(item, str) and item:
            texts.append(item)
        elif isinstance(item, list) and item and all(isinstance(t, int) and not isinstance(t, bool) for t in item):
            texts.append(" ".join(f"t{t}" for t in item))
        else:
            return None
    return texts


def answer_embeddings(models: dict[str, EmbeddingsModel], headers: dict[str, str], body: Any) -> tuple[int, Any, float]:
    """(status, JSON body, seconds to wait first) for one ``/embeddings`` request."""
    if not _authorised(headers):
        return (*_unauthorised(), 0.0)
    if not isinstance(body, dict):
        return (*_error(400, "We could not parse the JSON body of your request."), 0.0)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return (*_error(400, "you must provide a model parameter"), 0.0)
    served = models.get(model)
    if served is None:
        message = f"The model `{model}` does not exist or you do not have access to it."
        return (*_error(404, message, code="model_not_found"), 0.0)
    if "input" not in body:
        return (*_error(400, "'input' is a required property"), 0.0)
    texts = _inputs(body["input"])
    if texts is None:
        return (
            *_error(
                400,
                "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
            ),
            0.0,
        )
    if len(texts) > MAX_INPUTS:
        return (*_error(400, f"'$.input' is too long: at most {MAX_INPUTS} inputs per request"), 0.0)
    too_long = next((t for t in texts if _tokens(t) > MAX_INPUT_TOKENS), None)
    if too_long is not None:
        message = (
            f"This model's maximum context length is {MAX_INPUT_TOKENS} tokens, however you requested "
            f"{_tokens(too_long)} tokens in the input. Please reduce your input."
        )
        return (*_error(400, message), 0.0)
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        return (*_error(400, f"'{encoding}' is not one of ['float', 'base64'] - 'encoding_format'"), 0.0)
    dimensions = body.get("dimensions", served.dimensions)
    if not isinstance(dimensions, int) or isinstance(dimensions, bool) or not 1 <= dimensions <= served.dimensions:
        return (*_error(400, f"'dimensions' must be an integer from 1 to {served.dimensions}"), 0.0)
    data = []
    for i, text in enumerate(texts):
        vector = fake_vector(text, served.dimensions)[:dimensions]
        vector = vector / (float(np.linalg.norm(vector)) or 1.0)
        shown: Any = [float(x) for x in vector]
        if encoding == "base64":
            shown = base64.b64encode(vector.astype("<f4").tobytes()).decode()
        data.append({"object": "embedding", "index": i, "embedding": shown})
    tokens = sum(_tokens(t) for t in texts)
    reply = {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
    return 200, reply, served.latency_s


def answer_rerank(models: dict[str, RerankModel], headers: dict[str, str], body: Any) -> tuple[int, Any, float]:
    """(status, JSON body, seconds to wait first) for one ``/rerank`` request."""
    if not _authorised(headers):
        return (*_unauthorised(), 0.0)
    if not isinstance(body, dict):
        return (*_error(400, "We could not parse the JSON body of your request."), 0.0)
    model = body.get("model")
    served = models.get(model) if isinstance(model, str) else None
    if served is None:
        return (*_error(404, f"The model `{model}` does not exist.", code="model_not_found"), 0.0)
    query, documents = body.get("query"), body.get("documents")
    if not isinstance(query, str) or not query.strip():
        return (*_error(400, "'query' must be a non-empty string"), 0.0)
    if (
        not isinstance(documents, list)
        or not documents
        or len(documents) > MAX_DOCUMENTS
        or not all(isinstance(d, str) for d in documents)
    ):
        return (*_error(400, f"'documents' must be a list of 1 to {MAX_DOCUMENTS} strings"), 0.0)
    top_n = body.get("top_n", len(documents))
    if not isinstance(top_n, int) or isinstance(top_n, bool) or top_n < 1:
        return (*_error(400, "'top_n' must be a positive integer"), 0.0)
    wanted = set(words(query))
    scored = []
    for i, document in enumerate(documents):
        held = set(words(document))
        share = len(wanted & held) / len(wanted) if wanted else 0.0
        scored.append((round(share + 0.001 * len(held & wanted) / (1 + len(held)), 6), i))
    scored.sort(key=lambda s: (-s[0], s[1]))
    results = [{"index": i, "relevance_score": score} for score, i in scored[:top_n]]
    tokens = _tokens(query) + sum(_tokens(d) for d in documents)
    return 200, {"model": model, "results": results, "usage": {"total_tokens": tokens}}, served.latency_s
