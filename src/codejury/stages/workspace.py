"""The workspace stage: the run's patch files and shared context written (``codejury.workspace``), and what
the reviewers read from them (``ChangeContext``: the context file, the patches through their tools, the
repository index over the head tree).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from codejury.runstate import ReviewRun
from codejury.workspace import PatchFiles, build_workspace

if TYPE_CHECKING:
    from codejury.agents.runner import ChangeContext
    from codejury.repocontext import RepoContext


@contextmanager
def workspace_stage(
    run: ReviewRun, shared_context: str, *, on_tool_result: Callable[[str, str], None] | None = None
) -> Iterator[ChangeContext]:
    """Write the workspace (a temporary directory unless the caller chose one) and give the reviewers
    what they read from it: the shared context file, and the patch files through their tools.

    ``on_tool_result(place, text)`` sees each file, search and reference answer before a model does."""
    from codejury.agents.git_tools import GitRepoTools
    from codejury.agents.runner import ChangeContext
    from codejury.agents.tools import RepoTools
    from codejury.reviewers.roster import shared_rules

    with tempfile.TemporaryDirectory(prefix="codejury-") as tmp:
        dest = run.options.workspace_dir or Path(tmp)
        workspace = build_workspace(run.change, dest, shared_context=shared_context, files=run.selection.kept)
        run.events.emit("workspace", path=str(workspace.root), patches=len(workspace.patch_paths))
        patches = PatchFiles(workspace)
        head = run.change.head
        yield ChangeContext(
            files=run.selection.kept,
            title=run.change.meta.title,
            shared_context=workspace.context_file.read_text(encoding="utf-8"),
            patches=[(f.path, patches[f.path]) for f in run.selection.kept],
            tools=RepoTools(run.change.root, patches) if head is None else GitRepoTools(head, patches),
            shared_rules=shared_rules(),
            sections=run.config.prompt_sections,
            repo=None if head is None and run.change.root is None else _repo_context(run),
            related_code_tokens=run.settings.related_code_tokens,
            on_tool_result=on_tool_result,
            discussion=run.change.meta.discussion if run.settings.discussion_tokens else None,
            discussion_tokens=run.settings.discussion_tokens,
        )


def _repo_context(run: ReviewRun) -> RepoContext:
    """The repository index over the head commit's tree (or the checkout), built when first asked for.

    Imported here: the index's search libraries load only for a review with a tree to index."""
    from codejury.repocontext import RepoContext
    from codejury.repocontext.retrieval import RetrievalConfig

    head = run.change.head
    given = run.settings.retrieval
    retrieval = RetrievalConfig(
        given.embeddings_model,
        given.rerank_model,
        given.rerank_candidates,
        run.config.providers,
        run.options.env,
        rerank_prompt_tokens=given.rerank_prompt_tokens,
        embeddings_providers=run.config.embeddings_providers,
        vector_store=given.vector_store,
    )
    return RepoContext(
        run.change.root if head is None else None,
        head=head,
        on_event=run.events.emit,
        retrieval=retrieval,
        trace_query=run.settings.record_prompts,
    )
