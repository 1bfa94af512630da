"""The context warning: a prompt past half of its model's context window is said, in the events and the review.

A large change fills the prompts, above all the coordinator's (the shared context plus every
reviewer's findings): it costs more, and a model with a crowded context reads less carefully.
``watch_context`` wraps one agent run's model; after each request it compares the prompt's size
(the input tokens the provider reported, else an estimate from the text at ~4 characters a
token, also for a request that failed) with the window in the model's capability profile (the
embedded model's ``n_ctx``, a table of cloud families, a provider's profile). The first request
of a run past ``CONTEXT_WARNING_SHARE`` emits one ``context_warning`` event; ``context_notes``
turns a run's warnings into the line the review's notes carry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart

from codejury.models.hooked import HookedModel, ModelCall
from codejury.models.profiles import ResolvedModel
from codejury.record.events import EventLog

CONTEXT_WARNING_SHARE = 0.5
CHARS_PER_TOKEN = 4


def estimate_tokens(messages: Sequence[ModelMessage]) -> int:
    """About how many tokens ``messages`` take (instructions, prompts, tool calls and results)."""
    chars = 0
    for message in messages:
        if isinstance(message, ModelRequest) and message.instructions:
            chars += len(message.instructions)
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                chars += len(part.tool_name) + len(part.args_as_json_str())
                continue
            content = getattr(part, "content", None)
            if isinstance(content, str):
                chars += len(content)
            elif content is not None:
                chars += len(json.dumps(content, default=str))
    return chars // CHARS_PER_TOKEN


class ContextWatch(HookedModel):
    """``wrapped``, emitting ``context_warning`` once when a prompt passes half the context window."""

    def __init__(self, resolved: ResolvedModel, *, agent: str, events: EventLog) -> None:
        super().__init__(resolved.model)
        self.spec = resolved.spec
        self.window = resolved.profile.context_window
        self.agent = agent
        self.events = events
        self.warned = False

    async def _request(self, call: ModelCall) -> ModelResponse:
        try:
            response = await call.to(self.wrapped)
        except Exception:
            self.check(estimate_tokens(call.messages), estimated=True)  # a prompt too large fails: still say so
            raise
        reported = response.usage.input_tokens
        self.check(reported if reported > 0 else estimate_tokens(call.messages), estimated=reported <= 0)
        return response

    def _outgoing(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """A stream's prompt is judged before it is sent, from its text."""
        self.check(estimate_tokens(messages), estimated=True)
        return messages

    def check(self, tokens: int, *, estimated: bool) -> None:
        """Emit the warning the first time ``tokens`` passes the share of the window."""
        if self.warned or self.window <= 0 or tokens <= self.window * CONTEXT_WARNING_SHARE:
            return
        self.warned = True
        self.events.emit(
            "context_warning",
            agent=self.agent,
            model=self.spec,
            prompt_tokens=tokens,
            context_window=self.window,
            share=round(tokens / self.window, 3),
            estimated=estimated,
        )


def watch_context(resolved: ResolvedModel, *, agent: str, events: EventLog) -> ResolvedModel:
    """``resolved`` with its requests watched for prompts past half its context window."""
    return replace(resolved, model=ContextWatch(resolved, agent=agent, events=events))


def context_notes(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """The review's note for a run's ``context_warning`` events (none: no note)."""
    parts = []
    for event in events:
        if event.get("type") != "context_warning":
            continue
        about = "about " if event.get("estimated") else ""
        tokens, window = int(event.get("prompt_tokens", 0)), int(event.get("context_window", 0))
        share = float(event.get("share", 0))
        parts.append(
            f"{event.get('agent')} {share:.0%} ({about}{tokens:,} of {window:,} tokens on {event.get('model')})"
        )
    if not parts:
        return []
    return [
        f"Prompts past half the model's context window: {', '.join(parts)}. A change this large costs more and "
        "gets a less careful reading; consider splitting it."
    ]
