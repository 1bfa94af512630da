"""The related-code section in an inline reviewer's prompt: after the patches, the same for every reviewer."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from codejury.agents.runner import ChangeContext, Limits, run_agent
from codejury.agents.tools import RepoTools
from codejury.change.diffparse import parse_diff
from codejury.findings import ReviewerOutput
from codejury.models.pricing import PriceTable
from codejury.models.profiles import CapabilityProfile, ResolvedModel
from codejury.record.events import EventLog
from codejury.repocontext import RepoContext
from codejury.workspace import numbered_patch

from .test_related import DIFF, _head


async def test_every_inline_reviewer_gets_the_same_section_after_the_patches(repo: Path, tmp_path: Path) -> None:
    _head(repo)
    files = parse_diff(DIFF)
    prompts: list[str] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        first = messages[0]
        assert isinstance(first, ModelRequest)
        prompts.append("".join(str(p.content) for p in first.parts if isinstance(p, UserPromptPart)))
        return ModelResponse(parts=[TextPart(json.dumps({"notes": "", "findings": []}))])

    profile = CapabilityProfile(context_window=8192, supports_tools=False, output_mode="native", max_output_tokens=512)
    model = ResolvedModel("test:inline", FunctionModel(answer), profile)
    events = EventLog(None, run_id="t")
    ctx = ChangeContext(
        files=files,
        title="t",
        shared_context="# Change under review\n",
        patches=[(f.path, numbered_patch(f)) for f in files],
        tools=RepoTools(repo, {}),
        shared_rules="Rules.",
        repo=RepoContext(repo, cache_dir=tmp_path / "cache", on_event=events.emit),
        related_code_tokens=600,
    )
    for focus in ("Security focus.", "Performance focus."):
        outcome = await run_agent(
            ctx, name=focus, task_prompt=focus, model=model, output_type=ReviewerOutput,
            allowed_tools=frozenset(), limits=Limits(), prices=PriceTable(), events=events,
        )  # fmt: skip
        assert outcome.ok, outcome.error
    shared = [p.split("# Your task")[0] for p in prompts]
    assert shared[0] == shared[1]  # the embedded model reuses this whole prefix for the second reviewer
    assert shared[0].index("file: shop/cart.py") < shared[0].index("definition of unit_price") < len(shared[0])
    assert "caller of total in shop/checkout.py:5" in shared[0]
    built = [e for e in events.events if e["type"] == "repo_index"]
    assert len(built) == 1 and built[0]["files"] == 4  # built once per review, whatever the number of reviewers
