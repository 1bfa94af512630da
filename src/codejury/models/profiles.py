"""Capabilities of a model, as data: how the engine must talk to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pydantic_ai.models import Model

OutputMode = Literal["tool", "native", "prompted"]


@dataclass(frozen=True)
class CapabilityProfile:
    """What a model can do reliably.

    ``supports_tools`` False means reviewers get their patches inline and answer in JSON
    constrained by the schema (``output_mode='native'``), with no function tools.
    ``caches_across_runs`` True (cloud providers) puts static prompt parts first;
    False (the embedded model, which caches only its last prompt) orders prompts
    ``[shared rules][this change][reviewer focus]`` and runs reviewers one after another.
    """

    context_window: int = 128_000
    supports_tools: bool = True
    output_mode: OutputMode = "tool"
    parallel_requests: int = 8
    caches_across_runs: bool = True
    max_output_tokens: int = 4096
    weak: bool = False
    """A model whose claims need proof: its findings are verified by a separate call, and its
    critical blocks only with analyzer evidence or a passed verification (the embedded model)."""


@dataclass(frozen=True)
class ResolvedModel:
    """A ready model: the pydantic-ai model, its string, and its profile."""

    spec: str
    model: Model
    profile: CapabilityProfile
