"""Heartbeat lines say what the model did since the last one, with the right number of seconds.

Before the fix a model busy streaming its answer got "model is thinking… (0s since last output)"
every beat: true to the millisecond and useless to the person watching a CI log.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from codejury.models.profiles import CapabilityProfile, ResolvedModel
from codejury.resilience import AgentWatch, BreakerBoard, ResilienceSettings, ResilientModel

SPEC = "openai:gpt-5.1"


def chunks_after(pauses: list[float]) -> ResilientModel:
    """A streaming model that sends one word after each pause."""

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        for i, pause in enumerate(pauses):
            await asyncio.sleep(pause)
            yield f"word{i} "

    async def never(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise AssertionError("the chain should stream")

    resolved = ResolvedModel(SPEC, FunctionModel(never, stream_function=stream, model_name=SPEC), CapabilityProfile())
    return ResilientModel(
        [resolved], board=BreakerBoard(), settings=ResilienceSettings(stall_timeout_s=30, heartbeat_s=1.0)
    )


async def beats(model: ResilientModel) -> list[str]:
    lines: list[str] = []
    await Agent(model.watched(AgentWatch(heartbeat=lines.append))).run("review this")
    return lines


@pytest.mark.waits
async def test_a_model_streaming_its_answer_is_writing_not_thinking_for_0s() -> None:
    lines = await beats(chunks_after([0.1] * 22))  # a word every 0.1 s for 2.2 s (longer on a busy machine)

    assert len(lines) >= 2
    assert lines[:2] == [
        f"{SPEC}: model is writing… (1s since the request started)",
        f"{SPEC}: model is writing… (2s since the request started)",
    ]
    assert not any("thinking" in line for line in lines), lines


@pytest.mark.waits
async def test_silence_is_counted_from_the_last_output_not_from_the_last_beat() -> None:
    lines = await beats(chunks_after([0.0, 0.2, 2.1]))  # two words at once, then 2.1 s of silence

    assert lines[0] == f"{SPEC}: model is writing… (1s since the request started)"  # it wrote in the first second
    # Silent since 0.2 s: about 1.8 s at the beat at 2 s (not 1 s since that beat, not 2 s since the start).
    assert lines[1] in (f"{SPEC}: model is thinking… ({n}s since last output)" for n in (1, 2))
    assert len(lines) == 2
