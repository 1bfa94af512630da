"""The cost ceiling of one review (``max_cost_usd``, ``--max-cost``): model calls stop once it is reached.

``CostBudget`` holds a review's running cost. ``MeteredModel`` wraps the model of every agent run
(``ReviewModels.for_agent``: reviewers, verification, reflection, the coordinator): each response
adds its cost, priced from the review's ``PriceTable`` as the model that answered it (a failback
model included; the embedded model and other local models cost nothing). When the total reaches
the ceiling the budget is spent: a request still waiting on a provider is abandoned, and every
later request is refused, both with ``CostCeilingReached``. Each running agent therefore stops
with that reason as its error (its usage so far is kept), and the first time, one ``cost_ceiling``
event goes to the event log. A review that reached its ceiling is partial: it is never approved.

A model with no known price (not in ``[prices]`` nor in genai-prices' data, and not free by design:
``models.pricing``) counts as $0, so no spend cap can count it: ``say_unpriced`` names those of a review's
models in its notes, warns once per process, and says which caps (this ceiling, ``[limits]``' daily spend
caps) cannot count them.

The routing document's kill switch, turned on while a review runs, stops the model calls the same
way (``halt``): a review without a ceiling still gets a budget (of no ceiling) when it reads a
routing document.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, StreamedResponse
from pydantic_ai.usage import RequestUsage

from codejury.config import Settings
from codejury.errors import CodejuryError
from codejury.findings import Usage
from codejury.models.hooked import HookedModel, ModelCall
from codejury.models.pricing import PriceTable, unpriced_line, warn_unpriced
from codejury.resilience import AgentWatch

EventSink = Callable[..., None]


class CostCeilingReached(CodejuryError):
    """The review's cost ceiling was reached, or the kill switch turned on while it ran: no more model calls."""


class CostBudget:
    """The running cost of one review against its ceiling (USD)."""

    def __init__(self, ceiling_usd: float | None, prices: PriceTable, on_event: EventSink | None = None) -> None:
        self.ceiling_usd = ceiling_usd
        """None: no ceiling (only ``halt`` stops the calls)."""
        self.prices = prices
        self.spent_usd = 0.0
        self._on_event = on_event
        self._reached = asyncio.Event()
        self._halted: str | None = None

    @property
    def reached(self) -> bool:
        return self._reached.is_set()

    def reason(self) -> str | None:
        """One line saying why the model calls stopped (the ceiling and what was spent, or ``halt``'s reason);
        None while they were not."""
        if not self.reached:
            return None
        if self._halted is not None or self.ceiling_usd is None:
            return self._halted or "model calls stopped"
        return f"cost ceiling reached: {_usd(self.spent_usd)} spent of the {_usd(self.ceiling_usd)} ceiling"

    def halt(self, reason: str) -> None:
        """Stop every model call now, for ``reason`` (a request waiting on a provider is abandoned)."""
        if not self.reached:
            self._halted = reason
            self._reached.set()

    def add(self, spec: str, usage: RequestUsage) -> None:
        """Add one response's cost; the first time the total reaches the ceiling, stop every model call."""
        ours = Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        )
        self.spent_usd += self.prices.cost(spec, ours)
        if self.ceiling_usd is not None and self.spent_usd >= self.ceiling_usd and not self.reached:
            self._reached.set()
            if self._on_event is not None:
                self._on_event(
                    "cost_ceiling",
                    ceiling_usd=self.ceiling_usd,
                    spent_usd=round(self.spent_usd, 6),
                    model=spec,
                )

    def check(self) -> None:
        """Raise ``CostCeilingReached`` once the ceiling was reached."""
        if (why := self.reason()) is not None:
            raise CostCeilingReached(why)

    async def wait_reached(self) -> None:
        await self._reached.wait()


class MeteredModel(HookedModel):
    """``wrapped`` for one agent run, counting what each response costs against the review's budget."""

    def __init__(self, wrapped: Model, budget: CostBudget, *, spec: str, watch: AgentWatch) -> None:
        super().__init__(wrapped)
        self.budget = budget
        self.spec = spec
        self.watch = watch

    def __repr__(self) -> str:
        return f"MeteredModel({self.wrapped!r})"

    def _count(self, usage: RequestUsage) -> None:
        self.budget.add(self.watch.last_answered or self.spec, usage)

    async def _request(self, call: ModelCall) -> ModelResponse:
        """The wrapped request, abandoned as soon as the review's ceiling is reached by any other call."""
        self.budget.check()
        answer = asyncio.ensure_future(call.to(self.wrapped))
        spent = asyncio.ensure_future(self.budget.wait_reached())
        try:
            await asyncio.wait((answer, spent), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (answer, spent):
                if not task.done():
                    task.cancel()
            await asyncio.gather(answer, spent, return_exceptions=True)
        if answer.cancelled() or (self.budget.reached and answer.exception() is not None):
            self.budget.check()  # abandoned, or refused by its chain, because the model calls were stopped
        response = answer.result()  # raises the wrapped model's own error
        self._count(response.usage)
        return response

    def _outgoing(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """A stream starts only while the budget is not spent."""
        self.budget.check()
        return messages

    def _streamed(self, stream: StreamedResponse) -> None:
        self._count(stream.usage)


def _usd(amount: float) -> str:
    """``$0.5012``; amounts under a cent keep six decimals (``$0.000002``)."""
    return f"${amount:,.4f}" if amount >= 0.01 else f"${amount:.6f}"


def spend_caps(settings: Settings) -> list[str]:
    """The spend caps ``settings`` set, in words: this review's ceiling and ``[limits]``' daily spend caps."""
    caps = [] if settings.max_cost_usd is None else [f"the {_usd(settings.max_cost_usd)} cost ceiling"]
    if (usd := settings.limits.spend_per_day_usd) is not None:
        caps.append(f"the ${usd:,.2f} daily spend cap")
    if (usd := settings.limits.spend_per_day_per_repository_usd) is not None:
        caps.append(f"the ${usd:,.2f} daily spend cap per repository")
    return caps


def say_unpriced(
    prices: PriceTable, specs: Iterable[str], settings: Settings, warn: Callable[[str], None], on_event: EventSink
) -> str | None:
    """Before the models are called: the line naming those of ``specs`` that have no known price (and the
    spend caps that cannot count them), for the review's notes, with a ``model_unpriced`` event; warned once
    per process (``warn_unpriced``). None when every model is priced."""
    missing = prices.unpriced(specs)
    if not missing:
        return None
    caps = spend_caps(settings)
    on_event("model_unpriced", models=missing, ceiling_usd=settings.max_cost_usd, caps=caps)
    warn_unpriced(missing, caps, warn)
    return unpriced_line(missing, caps)
