"""Everything a codejury plugin needs, from one module (``docs/plugins.md`` walks through it).

    from codejury.plugin import ConfigureContext, ReviewerSpec, hookimpl

A plugin is a module (or an installed package's entry point in the ``codejury`` group) with
functions marked ``@hookimpl`` and named after the hooks of ``codejury.hookspecs``:

- lifecycle: ``codejury_bootstrap(ctx: BootstrapContext)``, ``codejury_configure(ctx:
  ConfigureContext)`` (add reviewers, providers, prompt sections, rules), and
  ``codejury_post_configure(ctx: PostConfigureContext)`` (override models, disable providers);
- registries, each called with ``register(name, thing)``: ``codejury_register_renderers``
  (a ``Renderer``), ``codejury_register_model_kinds`` (a ``ModelKind``),
  ``codejury_register_sources`` (a ``SourceFactory``), ``codejury_register_analyzers`` (an
  ``Analyzer``), ``codejury_register_recorders`` (a ``RecorderFactory``),
  ``codejury_register_embeddings`` (an ``EmbeddingsFactory``: ``EmbeddingsRequest`` in, an object
  with ``embed(texts)`` out) and ``codejury_register_forges``.

Names imported from here are the supported surface; the modules they come from may move.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from codejury.analyzers.base import Analyzer, AnalyzerFailed, AnalyzerSkipped
from codejury.change.diffparse import parse_diff
from codejury.change.select import SourceFactory, SourceOptions
from codejury.change.types import BaseReader, ChangeMeta, ChangeSet, ChangeSource, FileChange
from codejury.config import ReviewConfig
from codejury.contexts import BootstrapContext, ConfigureContext, PostConfigureContext
from codejury.errors import CodejuryError, ConfigError, InputError, ModelSetupError
from codejury.evidence import Evidence
from codejury.findings import Finding, Plan, Review, Severity, Tier, Verdict
from codejury.hookspecs import hookimpl
from codejury.models.embeddings import EmbeddingsFactory, EmbeddingsRequest, TextEmbeddings
from codejury.models.profiles import CapabilityProfile, ResolvedModel
from codejury.models.providers import NO_KEY_PLACEHOLDER, ProviderSpec
from codejury.models.registry import ModelFactory, ModelKind, ModelRequest
from codejury.record.recorders import Recorder
from codejury.reviewers.roster import ReviewerSpec

Renderer = Callable[[Review], str]
"""A ``--format`` renderer: the review as text (``NAME-plan`` renderers get a ``Plan`` instead)."""
RecorderFactory = Callable[[Mapping[str, Any]], Recorder]
"""Builds a recorder from its own settings table."""
Register = Callable[[str, Any], None]
"""The ``register(name, thing)`` callable every ``codejury_register_*`` hook receives."""

__all__ = [
    "NO_KEY_PLACEHOLDER",
    "Analyzer",
    "AnalyzerFailed",
    "AnalyzerSkipped",
    "BaseReader",
    "BootstrapContext",
    "CapabilityProfile",
    "ChangeMeta",
    "ChangeSet",
    "ChangeSource",
    "CodejuryError",
    "ConfigError",
    "ConfigureContext",
    "EmbeddingsFactory",
    "EmbeddingsRequest",
    "Evidence",
    "FileChange",
    "Finding",
    "InputError",
    "ModelFactory",
    "ModelKind",
    "ModelRequest",
    "ModelSetupError",
    "Plan",
    "PostConfigureContext",
    "ProviderSpec",
    "Recorder",
    "RecorderFactory",
    "Register",
    "Renderer",
    "ResolvedModel",
    "Review",
    "ReviewConfig",
    "ReviewerSpec",
    "Severity",
    "SourceFactory",
    "SourceOptions",
    "TextEmbeddings",
    "Tier",
    "Verdict",
    "hookimpl",
    "parse_diff",
]
