"""A model wrapper with two hooks, for cross-cutting behaviour around every request (pydantic-ai's ``WrapperModel``).

``HookedModel`` hands each request to the wrapped model after ``_outgoing(messages)`` (which may
return other messages, or raise to refuse the request) and, for a stream, calls
``_streamed(stream)`` once the caller has read it to the end. A subclass overrides the hooks it
needs, and ``request`` itself where a plain call is not enough (racing a budget, watching errors).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai._run_context import RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings


class HookedModel(WrapperModel):
    """``wrapped``, with ``_outgoing`` before each request and ``_streamed`` after each stream."""

    def _outgoing(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """The messages to send (these, unless a subclass changes them); raise to refuse the request."""
        return messages

    def _streamed(self, stream: StreamedResponse) -> None:
        """Called once a stream was read to its end (its ``usage`` is complete)."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        return await self.wrapped.request(self._outgoing(messages), model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        async with self.wrapped.request_stream(
            self._outgoing(messages), model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream
        self._streamed(stream)
