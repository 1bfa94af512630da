"""A model wrapper that scrubs known secrets from every message before it leaves the process.

Everything a provider receives passes through ``request`` / ``request_stream``: the system prompt
and instructions, the user prompt (the change, the shared context), tool results (a ``read_file``
of a ``.env`` file), the model's own earlier output and retry prompts. ``RedactingModel`` copies
the message history with every string scrubbed by the run's ``Redactor`` (the agent's own history
is left untouched) and hands the copy to the wrapped model. Model settings and tool definitions
are ours and carry no secrets.
"""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from codejury.models.hooked import HookedModel
from codejury.secrets import Redactor


class RedactingModel(HookedModel):
    """``wrapped``, with known secret values replaced by ``[REDACTED]`` in every request it sends."""

    def __init__(self, wrapped: Model, redactor: Redactor) -> None:
        super().__init__(wrapped)
        self.redactor = redactor

    def __repr__(self) -> str:
        return f"RedactingModel({self.wrapped!r})"

    def _outgoing(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        return self.redactor.scrub(messages)

    async def count_tokens(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> RequestUsage:
        """Token counting sends the messages to the provider too (Anthropic's count_tokens endpoint)."""
        return await self.wrapped.count_tokens(self._outgoing(messages), model_settings, model_request_parameters)
