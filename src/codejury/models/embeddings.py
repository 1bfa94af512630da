"""The contract of an embeddings provider a plugin registers (``codejury_register_embeddings``).

With ``[retrieval] embeddings_model = "NAME:MODEL"`` and NAME registered, the factory gets an
``EmbeddingsRequest`` and returns a client whose ``embed(texts)`` answers one vector per text, in
order; ``codejury.repocontext.embeddings.PluginEmbedder`` batches, bounds and checks its calls.
Only the standard library here: a plugin importing it loads nothing else.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class EmbeddingsRequest:
    """What a registered embeddings provider's factory gets for ``embeddings_model = "NAME:MODEL"``."""

    provider: str
    """NAME, lower-case."""
    model: str
    """MODEL: the part after the first ':'."""
    env: Mapping[str, str]
    """The review's environment, where the provider reads its key (never a config value)."""


class TextEmbeddings(Protocol):
    """A registered provider's client: ``embed(texts)`` answers one vector per text, in order (may be async)."""

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]] | Awaitable[Sequence[Sequence[float]]]: ...


EmbeddingsFactory = Callable[[EmbeddingsRequest], TextEmbeddings]
"""What ``codejury_register_embeddings`` registers under a name: builds the client for one model."""
