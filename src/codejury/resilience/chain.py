"""Failback chains: one pydantic-ai model that tries a family's models in turn, with breakers and watchdogs.

``ResilientModel`` wraps ``[newest, previous generation, ...]`` of one provider. For each request
it walks the chain: a model whose breaker refuses is skipped, and so is a model of a provider the
routing document disabled (``LiveRouting``, brought up to date before each request); an attempt streams when the model
can (so a silent model is killed after ``stall_timeout_s``, and a heartbeat line goes out every
``heartbeat_s``); a retryable error counts against the breaker and either waits for a short
Retry-After and tries the same model once more, or fails back to the next model; a fatal or quota
error goes straight up, because another model will not fix it. Output cut off at the token limit
is retried once on the same model with a larger budget. No retry or failback starts with less
than ``min_retry_window_s`` before the agent's deadline.

What one agent run tells its models (its deadline, where heartbeats go) and learns from them
(which model answered) travels in an explicit ``AgentWatch``: ``model.watched(watch)`` is a
wrapper for that run only, sharing the chain and its breakers; no context variables.

It is a ``HookedModel`` (``models.hooked``: a pydantic-ai ``WrapperModel``) around the chain's first model, so
name, profile, request preparation, tool definitions and output schemas are the first model's and
pass through unchanged; each model's own ``request`` applies its settings. A chain never crosses
providers (``build_chain``), so the first model's message preparation fits every model in it.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai.exceptions import ContentFilterError, OutputTokenLimitExceeded, UnexpectedModelBehavior
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import Model
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.settings import ModelSettings, merge_model_settings

from codejury.errors import CodejuryError, ConfigError
from codejury.models.hooked import HookedModel, ModelCall
from codejury.models.profiles import ResolvedModel
from codejury.resilience.breaker import BreakerBoard, CircuitBreaker
from codejury.resilience.errors import ChainExhausted, Classified, ModelStalled, classify
from codejury.retrying import Hint, RetryPolicy


@dataclass
class AgentWatch:
    """One agent run's side of its model: the deadline, where heartbeats go, which models answered."""

    deadline: float | None = None
    """Monotonic time by which the run must finish; no retry or failback starts too close to it."""
    heartbeat: Callable[[str], None] | None = None
    """Where heartbeat lines go (stderr in the CLI); None: nowhere."""
    answered: list[str] = field(default_factory=list)
    """Every answered request appends the model that answered it (a failback model when the first failed)."""

    @property
    def last_answered(self) -> str | None:
        return self.answered[-1] if self.answered else None


DEFAULT_FAILBACK: dict[str, str | None] = {
    # Anthropic retired claude-opus-4 / 4-1, claude-sonnet-4 / 4-5 and claude-3-5-haiku: chains end
    # before them (a retired model answers 404, which fails back, but only wastes a request).
    "anthropic:claude-opus-4-6": "anthropic:claude-opus-4-5",
    "anthropic:claude-opus-4-5": None,
    "anthropic:claude-sonnet-4-6": None,
    "anthropic:claude-haiku-4-5": None,
    "openai:gpt-5.1": "openai:gpt-5",
    "openai:gpt-5": "openai:gpt-4.1",
    "openai:gpt-4.1": None,
    "openai:gpt-5-mini": "openai:gpt-4.1-mini",
    "openai:gpt-4.1-mini": None,
    "openai:gpt-5-nano": "openai:gpt-4.1-nano",
    "openai:gpt-4.1-nano": None,
}
"""Newer → previous generation of the same family; None ends a chain."""

EventSink = Callable[..., None]


@dataclass
class LiveRouting:
    """What the routing document, re-read while a review runs, disables now: a chain skips the models of
    these providers, and these models, as it skips a model whose circuit is open (``codejury.remote_config``).

    ``freshen`` (set while a document is watched) brings these fields up to date; every request awaits
    it before walking its chain, so a request never goes out on a document older than the request."""

    disabled_providers: frozenset[str] = frozenset()
    disabled_models: frozenset[str] = frozenset()
    """``provider:model`` strings, as ``model_key`` writes them."""
    stopped: str | None = None
    """Why no model may be called any more (a kill switch that now covers the review); None: they may."""
    freshen: Callable[[], Awaitable[None]] | None = None

    async def fresh(self) -> None:
        """Bring the routing up to date (nothing to do without a watched document)."""
        if self.freshen is not None:
            await self.freshen()

    def refusal(self, spec: str) -> str | None:
        """Why ``spec`` may not be called now (one line), or None."""
        if self.stopped is not None:
            return self.stopped
        if _provider(spec) in self.disabled_providers:
            return "provider disabled by the routing document"
        if model_key(spec) in self.disabled_models:
            return "model disabled by the routing document"
        return None


def model_key(spec: str) -> str:
    """``spec`` as routing documents compare it: the provider in lower case, the model as written."""
    provider, _, model = spec.partition(":")
    return f"{provider.strip().lower()}:{model.strip()}"


@dataclass(frozen=True)
class ResilienceSettings:
    """Watchdog and retry limits of one chain (docs/architecture.md, "Models and resilience")."""

    stall_timeout_s: float = 60.0
    heartbeat_s: float = 30.0
    min_retry_window_s: float = 120.0
    max_retry_after_s: float = 30.0
    """The longest Retry-After waited for on the same model (once); a longer one fails back at once."""
    truncation_budget_factor: float = 2.0

    @property
    def retry(self) -> RetryPolicy:
        """One wait on the same model, only when the provider names one (``codejury.retrying``)."""
        return RetryPolicy(max_retries=1, backoff_s=None, max_wait_s=self.max_retry_after_s)


def build_chain(
    spec: str, failback: Mapping[str, str | None], *, disabled_providers: Collection[str] = ()
) -> list[str]:
    """``[spec, failback[spec], failback[that], ...]`` up to None or a cycle, minus disabled providers' models."""
    chain = [spec]
    while (nxt := failback.get(chain[-1])) is not None and nxt not in chain:
        if _provider(nxt) != _provider(chain[-1]):
            raise ConfigError(f"failback chains never cross providers: {chain[-1]} -> {nxt}")
        chain.append(nxt)
    disabled = {p.lower() for p in disabled_providers}
    return [m for m in chain if _provider(m) not in disabled]


def _provider(spec: str) -> str:
    return spec.partition(":")[0].strip().lower()


class _NoStreaming(CodejuryError):
    """The model cannot stream: use its plain ``request``."""


class ResilientModel(HookedModel):
    """A failback chain of one provider's models behind one pydantic-ai model."""

    replays_streams = True

    def __init__(
        self,
        chain: Sequence[ResolvedModel],
        *,
        board: BreakerBoard,
        settings: ResilienceSettings = ResilienceSettings(),  # noqa: B008 - frozen
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_event: EventSink | None = None,
        watch: AgentWatch | None = None,
        routing: LiveRouting | None = None,
    ) -> None:
        if not chain:
            raise ValueError("a failback chain needs at least one model")
        super().__init__(chain[0].model)
        self.chain: tuple[ResolvedModel, ...] = tuple(chain)
        self.board = board
        self.resilience = settings
        self._clock = clock
        self._sleep = sleep
        self._on_event = on_event
        self.watch = watch if watch is not None else AgentWatch()
        self.routing = routing

    def watched(self, watch: AgentWatch) -> ResilientModel:
        """This chain for one agent run: same models and breakers, the run's own deadline and heartbeat."""
        run = copy.copy(self)
        run.watch = watch
        return run

    def __repr__(self) -> str:
        return f"ResilientModel({', '.join(m.spec for m in self.chain)})"

    # -- the request ------------------------------------------------------------------------------
    async def _request(self, call: ModelCall) -> ModelResponse:
        """Walk the chain until a model answers; raise a fatal error at once, ``ChainExhausted`` at the end.

        A stream is this, replayed (``replays_streams``): failback cannot happen once events were handed out."""
        history: list[tuple[str, str]] = []
        last_error: BaseException | None = None
        attempted = False
        previous: tuple[str, str] | None = None  # (model, why we left it)
        if self.routing is not None:
            await self.routing.fresh()  # never a request on a routing document older than this request
        for resolved in self.chain:
            if attempted and not self._window_allows():
                raise ChainExhausted(history, last_error, stopped=self._no_time_left()) from last_error
            if self.routing is not None and (refused := self.routing.refusal(resolved.spec)) is not None:
                history.append((resolved.spec, f"skipped, {refused}"))
                previous = (resolved.spec, refused)
                continue
            breaker = self.board.get(resolved.spec)
            if not breaker.allow():
                history.append((resolved.spec, "skipped, circuit open"))
                previous = (resolved.spec, "circuit open")
                continue
            if previous is not None:
                self._emit("model_failback", from_model=previous[0], to_model=resolved.spec, reason=previous[1])
            attempted = True
            outcome = await self._try_model(resolved, breaker, call)
            if isinstance(outcome, ModelResponse):
                self.watch.answered.append(resolved.spec)
                return outcome
            error, reason, stopped = outcome
            history.append((resolved.spec, reason))
            last_error, previous = error, (resolved.spec, reason)
            if stopped is not None:
                raise ChainExhausted(history, last_error, stopped=stopped) from last_error
        raise ChainExhausted(history, last_error) from last_error

    # -- one model of the chain -------------------------------------------------------------------
    async def _try_model(
        self, resolved: ResolvedModel, breaker: CircuitBreaker, call: ModelCall
    ) -> ModelResponse | tuple[BaseException, str, str | None]:
        """A response, or (error, reason, why the chain must stop here or None) after a retryable failure."""
        waits, truncation_retried = 0, False
        while True:
            try:
                response = await self._attempt(resolved, call)
            except Exception as exc:
                found = self._classify(exc)
                self._emit("model_attempt_failed", model=resolved.spec, kind=found.kind, reason=found.reason)
                if found.kind == "truncated" and not truncation_retried and self._window_allows():
                    breaker.release()
                    call, truncation_retried = self._bigger_budget(resolved, call), True
                    continue
                if found.kind != "retryable":
                    breaker.release()  # not the model's health: a held probe goes back
                    raise
                breaker.record_failure()
                policy = self.resilience.retry
                wait = policy.wait_s(waits, Hint(found.retry_after_s))
                if wait is not None and policy.allows(waits, wait) and self._window_allows(wait) and breaker.allow():
                    waits += 1
                    await self._sleep(wait)
                    continue
                stopped = None if self._window_allows() else self._no_time_left()
                return exc, found.reason, stopped
            except BaseException:
                breaker.release()
                raise
            breaker.record_success()
            if response.finish_reason == "length" and not truncation_retried and self._window_allows():
                self._emit("model_attempt_failed", model=resolved.spec, kind="truncated", reason="output cut off")
                call, truncation_retried = self._bigger_budget(resolved, call), True
                continue
            return response

    def _classify(self, exc: BaseException) -> Classified:
        found = classify(exc)
        plain_bad_output = isinstance(exc, UnexpectedModelBehavior) and not isinstance(
            exc, OutputTokenLimitExceeded | ContentFilterError
        )
        if found.kind == "fatal" and plain_bad_output:
            # Raised inside the model's own request, so it is the server's body, not our schema after repair.
            return Classified("retryable", "malformed response from the server")
        return found

    def _bigger_budget(self, resolved: ResolvedModel, call: ModelCall) -> ModelCall:
        """``call`` with a larger output budget, for output that was cut off."""
        merged = merge_model_settings(resolved.model.settings, call.settings) or {}
        current = merged.get("max_tokens") or resolved.profile.max_output_tokens
        bigger = max(current + 1, int(current * self.resilience.truncation_budget_factor))
        self._emit("model_truncated", model=resolved.spec, max_tokens=bigger)
        settings = merge_model_settings(call.settings, ModelSettings(max_tokens=bigger))
        return replace(call, settings=settings or ModelSettings(max_tokens=bigger))

    # -- one attempt, watched ---------------------------------------------------------------------
    async def _attempt(self, resolved: ResolvedModel, call: ModelCall) -> ModelResponse:
        model = resolved.model
        if _can_stream(model):
            try:
                return await self._watch(resolved.spec, lambda touch: _streamed(model, call, touch), stall=True)
            except _NoStreaming:
                pass
        return await self._watch(resolved.spec, lambda touch: call.to(model), stall=False)

    async def _watch(
        self,
        spec: str,
        work: Callable[[Callable[[], None]], Awaitable[ModelResponse]],
        *,
        stall: bool,
    ) -> ModelResponse:
        """Run ``work`` in a task it owns: heartbeats while waiting, killed after ``stall_timeout_s`` of silence.

        A heartbeat says what the model did since the previous one: silent, "thinking… (Ns since
        last output)"; streaming output, "writing… (Ns since the request started)". (Saying
        "thinking… (0s since last output)" of a model that is busy answering told the user nothing.)
        """
        started = last_output = last_beat = self._clock()
        next_beat = started + self.resilience.heartbeat_s

        def touch() -> None:
            nonlocal last_output
            last_output = self._clock()

        async def run() -> ModelResponse:
            return await work(touch)

        task = asyncio.create_task(run(), name=f"model-attempt:{spec}")
        try:
            while True:
                now = self._clock()
                due = [next_beat]
                if stall:
                    due.append(last_output + self.resilience.stall_timeout_s)
                done, _ = await asyncio.wait({task}, timeout=max(0.0, min(due) - now))
                if task in done:
                    return task.result()
                now = self._clock()
                if stall and now - last_output >= self.resilience.stall_timeout_s:
                    raise ModelStalled(spec, self.resilience.stall_timeout_s)
                if now >= next_beat:
                    if last_output > last_beat:
                        self._heartbeat(spec, f"model is writing… ({int(now - started)}s since the request started)")
                    else:
                        self._heartbeat(spec, f"model is thinking… ({int(now - last_output)}s since last output)")
                    last_beat, next_beat = now, now + self.resilience.heartbeat_s
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait({task})
            if not task.cancelled():
                task.exception()  # retrieved: a killed attempt's error is expected

    def _heartbeat(self, spec: str, what: str) -> None:
        sink = self.watch.heartbeat
        if sink is not None:
            sink(f"{spec}: {what}")

    # -- helpers ----------------------------------------------------------------------------------
    def _window_allows(self, wait_s: float = 0.0) -> bool:
        deadline = self.watch.deadline
        return deadline is None or deadline - self._clock() - wait_s >= self.resilience.min_retry_window_s

    def _no_time_left(self) -> str:
        deadline = self.watch.deadline
        left = 0.0 if deadline is None else max(0.0, deadline - self._clock())
        window = self.resilience.min_retry_window_s
        return f"stopped: {left:.0f}s left before the deadline, under the {window:g}s retry window"

    def _emit(self, event: str, **fields: Any) -> None:
        if self._on_event is not None:
            self._on_event(event, **fields)


def _can_stream(model: Model) -> bool:
    """False for models that do not implement ``request_stream`` (the embedded model, a FunctionModel without one)."""
    if isinstance(model, FunctionModel):
        return model.stream_function is not None
    return type(model).request_stream is not Model.request_stream


async def _streamed(model: Model, call: ModelCall, touch: Callable[[], None]) -> ModelResponse:
    """Consume the model's stream, touching the watchdog on every event; the assembled response."""
    async with AsyncExitStack() as stack:
        try:
            stream = await stack.enter_async_context(model.request_stream(call.messages, call.settings, call.params))
        except NotImplementedError as exc:
            raise _NoStreaming from exc
        touch()
        async for _ in stream:
            touch()
    return stream.get()
