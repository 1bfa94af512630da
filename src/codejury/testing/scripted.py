"""A scripted model: realistic agent runs (tool calls, bad output, repair, failure) with no network.

Each model string ("scripted:security") gets its own script: a list of steps played in
order, one per model request. Steps:
- ``ToolCall(name, args)``: the model calls one of our tools;
- ``Final(findings)``: the model returns its structured output (dicts, validated by the engine);
- ``Raw(args)``: the model returns output args as given (may be schema-invalid, to test repair);
- ``Fail(exc)``: the request raises ``exc``;
- ``Sleep(seconds)``: the request takes this long before playing the next step.
When the script runs out the last step repeats.

``ScriptedResolver`` is also a plugin: it registers the ``scripted`` provider kind and provider
through the model-kind hook, the seam any model plugin uses (see its docstring).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import ModelMessage, ModelResponse, RetryPromptPart, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from codejury.hookspecs import hookimpl
from codejury.models.profiles import CapabilityProfile, ResolvedModel
from codejury.models.providers import ProviderSpec
from codejury.models.registry import ModelKind

if TYPE_CHECKING:
    import pluggy

    from codejury.contexts import ConfigureContext


@dataclass(frozen=True)
class ToolCall:
    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Final:
    findings: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Raw:
    args: dict[str, Any]


@dataclass(frozen=True)
class Fail:
    exc: BaseException


@dataclass(frozen=True)
class Sleep:
    seconds: float
    then: Any


Step = ToolCall | Final | Raw | Fail | Sleep


def finding(
    path: str,
    line: int,
    title: str,
    *,
    severity: str = "warning",
    category: str = "bug",
    confidence: float = 0.9,
    body: str = "Explain why.",
    end_line: int | None = None,
) -> dict[str, Any]:
    """A finding dict as a model would return it."""
    return {
        "category": category,
        "severity": severity,
        "path": path,
        "start_line": line,
        "end_line": end_line or line,
        "title": title,
        "body": body,
        "confidence": confidence,
    }


@dataclass
class ScriptedModel:
    """One script; records every request it received (the messages as text)."""

    steps: Sequence[Step]
    prompts: list[str] = field(default_factory=list)
    tool_results: list[str] = field(default_factory=list)
    tools_offered: list[list[str]] = field(default_factory=list)
    """The names of the tools the agent offered, per request."""
    calls: int = 0
    walkthrough: Sequence[Step] = (Raw({"summary": "", "groups": [], "diagram": ""}),)
    """The answers to walkthrough requests (``write_walkthrough``), played in order apart from ``steps``, so a
    review's walkthrough never takes a reviewer's step; by default an empty draft (the checked walkthrough
    then lists the files with their line counts)."""
    walkthrough_prompts: list[str] = field(default_factory=list)

    def _messages_text(self, messages: list[ModelMessage], info: AgentInfo) -> str:
        parts: list[str] = [info.instructions or ""]
        for m in messages:
            for p in m.parts:
                if isinstance(p, RetryPromptPart):
                    parts.append(p.model_response())  # what the model is told about its invalid output
                    continue
                content = getattr(p, "content", None)
                if isinstance(content, str):
                    parts.append(content)
                elif content is not None:  # validation errors come back as a list of dicts
                    parts.append(json.dumps(content, default=str))
        return "\n".join(parts)

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        text = self._messages_text(messages, info)
        if _asks_walkthrough(info):
            step = self.walkthrough[min(len(self.walkthrough_prompts), len(self.walkthrough) - 1)]
            self.walkthrough_prompts.append(text)
            return await self._play(step, info, text)
        self.prompts.append(text)
        self.tools_offered.append(sorted(t.name for t in info.function_tools))
        last = messages[-1]
        for p in last.parts:
            if type(p).__name__ == "ToolReturnPart":
                self.tool_results.append(str(getattr(p, "content", "")))
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        return await self._play(step, info, text)

    async def _play(self, step: Step, info: AgentInfo, text: str) -> ModelResponse:
        while isinstance(step, Sleep):
            await asyncio.sleep(step.seconds)
            step = step.then
        usage = RequestUsage(input_tokens=max(1, len(text) // 4), output_tokens=20)
        if isinstance(step, Fail):
            raise step.exc
        if isinstance(step, ToolCall):
            return ModelResponse(parts=[ToolCallPart(step.name, step.args)], usage=usage)
        args = {"findings": step.findings} if isinstance(step, Final) else step.args
        if info.output_tools:
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)], usage=usage)
        output_object = info.model_request_parameters.output_object
        schema = output_object.json_schema if output_object is not None else {}
        if isinstance(step, Final) and "notes" in schema.get("properties", {}):
            args = {"notes": "checked the '+' lines", **args}  # small-model layout: notes first
        return ModelResponse(parts=[TextPart(json.dumps(args))], usage=usage)


class ScriptedResolver:
    """Scripted models for ``scripted:NAME`` model strings, and the plugin that puts them in a review.

    As a plugin (``plugin_manager()`` for a review run in process; ``active()`` with ``--plugin
    codejury.testing.scripted`` for a ``codejury`` command run in process) it registers the
    ``scripted`` provider kind and a ``scripted`` provider through the same hooks as any
    third-party model plugin, so a review resolves its models exactly as it would a real one.
    """

    def __init__(
        self,
        scripts: Mapping[str, Sequence[Step]],
        *,
        tools: bool = True,
        walkthroughs: Mapping[str, Sequence[Step]] | None = None,
    ) -> None:
        self.models = {name: ScriptedModel(list(steps)) for name, steps in scripts.items()}
        for name, steps in (walkthroughs or {}).items():
            self.models.setdefault(name, ScriptedModel([Final([])])).walkthrough = list(steps)
        self.tools = tools
        self.resolved: list[str] = []

    def __call__(self, spec: str, config: object) -> ResolvedModel:
        name = spec.split(":", 1)[1]
        self.resolved.append(spec)
        script = self.models.setdefault(name, ScriptedModel([Final([])]))
        profile = (
            CapabilityProfile()
            if self.tools
            else CapabilityProfile(
                context_window=8192,
                supports_tools=False,
                output_mode="native",
                parallel_requests=1,
                caches_across_runs=False,
                max_output_tokens=1024,
            )
        )
        return ResolvedModel(spec=spec, model=FunctionModel(script, model_name=spec), profile=profile)

    # ---- the plugin ----------------------------------------------------------------------

    @hookimpl
    def codejury_register_model_kinds(self, register: Callable[[str, ModelKind], None]) -> None:
        """The ``scripted`` kind: each model string gets its script (never shared between reviews)."""
        register(SCRIPTED, ModelKind(build=lambda request: self(request.spec, None), shared=False))

    @hookimpl
    def codejury_configure(self, ctx: ConfigureContext) -> None:
        """The ``scripted`` provider, so ``scripted:NAME`` model strings name a known provider."""
        ctx.add_provider(ProviderSpec(name=SCRIPTED, kind=SCRIPTED))

    def plugin_manager(self, plugins: Sequence[str] = ()) -> pluggy.PluginManager:
        """A review's plugin manager (built-ins, ``plugins``) with these scripted models registered."""
        from codejury.plugins import make_plugin_manager

        pm = make_plugin_manager(plugins)
        pm.register(self, name=f"{SCRIPTED}-models")
        return pm

    @contextmanager
    def active(self) -> Iterator[ScriptedResolver]:
        """While the block runs, ``--plugin codejury.testing.scripted`` registers these models."""
        _ACTIVE.append(self)
        try:
            yield self
        finally:
            _ACTIVE.remove(self)


def _asks_walkthrough(info: AgentInfo) -> bool:
    """Whether the request is a review's walkthrough (its output is named ``write_walkthrough``)."""
    from codejury.agents.walkthrough import OUTPUT_NAME

    output_object = info.model_request_parameters.output_object
    named = [t.name for t in info.output_tools] + ([output_object.name] if output_object is not None else [])
    return OUTPUT_NAME in named


SCRIPTED = "scripted"
"""The provider, and its kind, of ``scripted:NAME`` model strings."""
_ACTIVE: list[ScriptedResolver] = []


@hookimpl
def codejury_register_model_kinds(register: Callable[[str, ModelKind], None]) -> None:
    """Loaded as ``--plugin codejury.testing.scripted``: the active resolver's kind (none inactive)."""
    if _ACTIVE:
        _ACTIVE[-1].codejury_register_model_kinds(register)


@hookimpl
def codejury_configure(ctx: ConfigureContext) -> None:
    """Loaded as ``--plugin codejury.testing.scripted``: the active resolver's provider."""
    if _ACTIVE:
        _ACTIVE[-1].codejury_configure(ctx)
