"""The one model-wrapper base: cross-cutting behaviour around every request (pydantic-ai's ``WrapperModel``).

Every wrapper of ours (``RedactingModel``, ``MeteredModel``, ``ContextWatch``, ``ResilientModel``)
extends ``HookedModel``, which writes pydantic-ai's ``request`` / ``request_stream`` signatures
once and hands each request to its hooks as one ``ModelCall``:

- ``_outgoing(messages)``: the messages to send (others, or raise to refuse the request);
- ``_request(call)``: the response; by default the wrapped model's answer to ``call`` after
  ``_outgoing``; a subclass overrides it to act around the call (race a budget, watch errors,
  walk a failback chain);
- ``_streamed(stream)``: called once the caller has read a stream to its end.

A wrapper that must see each response whole before anyone else does sets ``replays_streams``: a
stream it is asked for is its ``request``'s response, replayed as a stream.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic_ai._run_context import RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import CompletedStreamedResponse, Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings


@dataclass(frozen=True)
class ModelCall:
    """One request's arguments, as pydantic-ai hands them to a model."""

    messages: list[ModelMessage]
    settings: ModelSettings | None
    params: ModelRequestParameters

    def to(self, model: Model) -> Coroutine[Any, Any, ModelResponse]:
        """``model``'s request with these arguments."""
        return model.request(self.messages, self.settings, self.params)


class HookedModel(WrapperModel):
    """``wrapped``, with ``_outgoing`` before each request, ``_request`` around it and ``_streamed`` after a stream."""

    replays_streams: ClassVar[bool] = False
    """True: a stream is this wrapper's ``request``, replayed (nothing reaches the caller before it is whole)."""

    def _outgoing(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """The messages to send (these, unless a subclass changes them); raise to refuse the request."""
        return messages

    def _streamed(self, stream: StreamedResponse) -> None:
        """Called once a stream was read to its end (its ``usage`` is complete)."""

    async def _request(self, call: ModelCall) -> ModelResponse:
        """The response to ``call``: the wrapped model's, after ``_outgoing``."""
        return await self.wrapped.request(self._outgoing(call.messages), call.settings, call.params)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        return await self._request(ModelCall(messages, model_settings, model_request_parameters))

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        if self.replays_streams:
            response = await self._request(ModelCall(messages, model_settings, model_request_parameters))
            yield CompletedStreamedResponse(
                response, model_request_parameters=model_request_parameters, replay_events=True
            )
            return
        async with self.wrapped.request_stream(
            self._outgoing(messages), model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream
        self._streamed(stream)
