"""Which model each reviewer runs on, and the review's models: failback chains with breakers, scrubbed.

``choose_model`` picks a reviewer's model (its config, the tier's default, the first enabled model
of its failback chain). ``build_review_models`` makes each chosen model once per review: a
``ResilientModel`` over its chain on the breaker board of the review's settings. ``for_agent``
hands one agent run its own view of a model: the run's deadline and heartbeat in an explicit
``AgentWatch``, every request scrubbed of known secrets (``RedactingModel``).
"""

from __future__ import annotations

import asyncio
import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic_ai.models import Model

from codejury.config import ReviewConfig, Settings
from codejury.findings import Tier
from codejury.models.budget import CostBudget, MeteredModel
from codejury.models.pricing import ModelPrice, PriceTable
from codejury.models.profiles import CapabilityProfile, ResolvedModel
from codejury.models.redacting import RedactingModel
from codejury.models.registry import parse_model_string, resolve_model
from codejury.resilience import (
    BOARDS,
    DEFAULT_FAILBACK,
    AgentWatch,
    BreakerBoard,
    LiveRouting,
    ResilienceSettings,
    ResilientModel,
    build_chain,
)
from codejury.secrets import Redactor

Resolver = Callable[[str, ReviewConfig], ResolvedModel]
EventSink = Callable[..., None]


def default_resolver(env: Mapping[str, str]) -> Resolver:
    def resolve(spec: str, config: ReviewConfig) -> ResolvedModel:
        return resolve_model(spec, config.providers, env=env, kinds=config.model_kinds)

    return resolve


def failback_table(config: ReviewConfig) -> dict[str, str | None]:
    """Built-in failback chains, overridden by config and the remote routing document."""
    return {**DEFAULT_FAILBACK, **config.settings.failback}


def model_chain(config: ReviewConfig, spec: str) -> list[str]:
    """``spec`` and its failback models, minus those of disabled providers."""
    disabled = {name for name, p in config.providers.items() if not p.enabled}
    return build_chain(spec, failback_table(config), disabled_providers=disabled)


def choose_model(config: ReviewConfig, name: str, *, tier: Tier) -> str | None:
    """The model for a reviewer: the first of its failback chain whose provider is enabled."""
    if name == "coordinator" and tier == "trivial" and "coordinator" not in config.settings.reviewer_models:
        spec: str | None = config.settings.models["standard"]
    else:
        spec = config.model_for(name)
    if spec is None:
        return None
    parse_model_string(spec)  # a malformed model string is a configuration error, reported here
    chain = model_chain(config, spec)
    return chain[0] if chain else None


def is_weak_spec(config: ReviewConfig, spec: str | None) -> bool:
    """Whether ``spec`` is weak, known before any model is built: an embedded (``local`` kind) model, a provider
    whose profile says weak, or a ``weak_models`` glob. The same answer as the built model's profile gives."""
    if spec is None:
        return False
    name, _ = parse_model_string(spec)
    provider = config.providers.get(name)
    if provider is not None and (provider.kind == "local" or (provider.profile is not None and provider.profile.weak)):
        return True
    return any(fnmatch.fnmatchcase(spec, glob) for glob in config.settings.weak_models)


def price_table(settings: Settings) -> PriceTable:
    return PriceTable(
        {spec: ModelPrice(p.input, p.output, p.cache_read, p.cache_write) for spec, p in settings.prices.items()}
    )


def board_for(settings: Settings) -> BreakerBoard:
    """The process's breaker board for these settings: shared with every review that uses the same ones."""
    return BOARDS.board_for(settings.breaker_failures, settings.breaker_cooldown_s)


@dataclass(frozen=True)
class ReviewModels:
    """The models of one review, each built once, and how many requests each may have in flight."""

    chains: Mapping[str, ResilientModel]
    profiles: Mapping[str, CapabilityProfile]
    gates: Mapping[str, asyncio.Semaphore]
    redactor: Redactor
    budget: CostBudget | None = None
    """The review's cost ceiling (``max_cost_usd``), and how the routing document's kill switch stops the
    model calls mid-run; None: neither applies."""
    routing: LiveRouting = field(default_factory=LiveRouting)
    """The providers and models the routing document, re-read before each request, disables now (every chain
    reads it)."""

    @property
    def callable_specs(self) -> tuple[str, ...]:
        """Every model the review may call: each chosen model and its failback chain."""
        return tuple(dict.fromkeys(m.spec for chain in self.chains.values() for m in chain.chain))

    def for_agent(self, spec: str, watch: AgentWatch) -> ResolvedModel:
        """``spec`` for one agent run: its own deadline and heartbeat, every request scrubbed and,
        under a cost ceiling, metered."""
        chain = self.chains[spec].watched(watch)
        model: Model = RedactingModel(chain, self.redactor)
        if self.budget is not None:
            model = MeteredModel(model, self.budget, spec=spec, watch=watch)
        return ResolvedModel(spec=spec, model=model, profile=self.profiles[spec])


def build_review_models(
    config: ReviewConfig,
    specs: Sequence[str],
    *,
    resolver: Resolver,
    board: BreakerBoard,
    redactor: Redactor,
    on_event: EventSink,
) -> ReviewModels:
    """Each chosen model as a failback chain with breakers, stall watchdog and heartbeats."""
    settings = config.settings
    resilience = ResilienceSettings(
        stall_timeout_s=settings.stall_timeout_s,
        heartbeat_s=settings.heartbeat_s,
        min_retry_window_s=settings.min_retry_window_s,
    )
    cache: dict[str, ResolvedModel] = {}
    chains: dict[str, ResilientModel] = {}
    profiles: dict[str, CapabilityProfile] = {}
    routing = LiveRouting()
    for spec in specs:
        chain = [cache.get(m) or cache.setdefault(m, resolver(m, config)) for m in model_chain(config, spec)]
        chains[spec] = ResilientModel(chain, board=board, settings=resilience, on_event=on_event, routing=routing)
        profiles[spec] = chain[0].profile
    gates = {spec: asyncio.Semaphore(max(1, p.parallel_requests)) for spec, p in profiles.items()}
    ceiling = settings.max_cost_usd
    stoppable = ceiling is not None or settings.remote_config is not None  # a kill switch may come mid-run
    budget = CostBudget(ceiling, price_table(settings), on_event) if stoppable else None
    return ReviewModels(
        chains=chains, profiles=profiles, gates=gates, redactor=redactor, budget=budget, routing=routing
    )
