"""What a plugin's lifecycle hooks receive: one context object per hook.

A leaf module (it imports nothing of codejury at run time), so hookspecs, the plugin manager,
the built-in plugin and third-party plugins can all import it without a cycle. Plugins only
contribute through these objects; the core assembles the ``ReviewConfig`` from what they
contributed, so no plugin reads another plugin's settings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codejury.change.types import ChangeSet
    from codejury.config import ReviewConfig
    from codejury.models.providers import ProviderSpec
    from codejury.models.registry import ModelKind
    from codejury.reviewers.instructions import RenderedInstructions
    from codejury.reviewers.roster import ReviewerSpec

Warn = Callable[[str], None]


@dataclass
class Contributions:
    """Everything plugins contributed during configure, in order."""

    reviewers: dict[str, ReviewerSpec] = field(default_factory=dict)
    providers: dict[str, ProviderSpec] = field(default_factory=dict)
    prompt_sections: list[tuple[str, str]] = field(default_factory=list)
    tool_env: dict[str, str] = field(default_factory=dict)
    tool_permissions: dict[str, frozenset[str]] = field(default_factory=dict)
    custom_rules: list[str] = field(default_factory=list)
    repo_instructions: list[str] = field(default_factory=list)
    model_kinds: dict[str, ModelKind] = field(default_factory=dict)
    """Provider kinds registered through ``codejury_register_model_kinds``."""
    embeddings: dict[str, Any] = field(default_factory=dict)
    """Embeddings providers registered through ``codejury_register_embeddings``."""


@dataclass
class BootstrapContext:
    """What a plugin may look at while bootstrapping (no contributions yet)."""

    settings: Mapping[str, Any]
    warn: Warn


@dataclass
class ConfigureContext:
    """The only way a plugin contributes to a review's configuration."""

    plugin: str
    settings: Mapping[str, Any]
    change: ChangeSet
    _into: Contributions

    def add_reviewer(self, spec: ReviewerSpec) -> None:
        """Register a reviewer (a later plugin with the same name overrides an earlier one)."""
        self._into.reviewers[spec.name] = spec

    def add_provider(self, spec: ProviderSpec) -> None:
        """Register a provider: the ``NAME`` of ``NAME:model`` strings (a later one overrides)."""
        self._into.providers[spec.name] = spec

    def add_prompt_section(self, title: str, text: str) -> None:
        """Append a section to every reviewer's static prompt."""
        self._into.prompt_sections.append((title, text))

    def set_tool_env(self, name: str, value: str) -> None:
        self._into.tool_env[name] = value

    def set_tool_permissions(self, reviewer: str, tools: Iterable[str]) -> None:
        self._into.tool_permissions[reviewer] = frozenset(tools)

    def add_custom_rules(self, text: str) -> None:
        """Rules for the compliance reviewer ("if you need X, use Y")."""
        self._into.custom_rules.append(text)

    def add_repo_instructions(self, text: str) -> None:
        """Repository instructions (AGENTS.md and the like) for every reviewer."""
        self._into.repo_instructions.append(text)


@dataclass
class PostConfigureContext:
    """Adjust an assembled configuration (remote routing, provider outages)."""

    plugin: str
    settings: Mapping[str, Any]
    config: ReviewConfig
    warn: Warn
    model_overrides: dict[str, str] = field(default_factory=dict)
    disabled_providers: set[str] = field(default_factory=set)
    failback: dict[str, str | None] = field(default_factory=dict)
    change: ChangeSet | None = None
    """The change under review (its base side is where repository instructions are read)."""
    instructions: RenderedInstructions | None = None
    stopped: str | None = None
    """Why no model may be called for this review (a kill switch); None: it runs."""

    def override_model(self, reviewer: str, spec: str) -> None:
        self.model_overrides[reviewer] = spec

    def disable_provider(self, name: str) -> None:
        self.disabled_providers.add(name)

    def set_failback(self, model: str, next_model: str | None) -> None:
        self.failback[model] = next_model

    def stop_review(self, reason: str) -> None:
        """A kill switch: no model is called for this review, which is published as not reviewed (``reason``)."""
        self.stopped = reason

    def set_instructions(self, rendered: RenderedInstructions) -> None:
        """Replace the review's instructions: the repository's, the organisation's, and what was cut."""
        self.instructions = rendered
