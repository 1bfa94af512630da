"""The review workspace: one numbered patch file per changed file, plus one shared context file.

Reviewers read what their domain needs from it: the ``read_patch`` tool reads the patch files
and ``read_change_context`` the shared context file (``workspace_stage``); models that take the
change inline get it assembled from the same files. The change's context is written once instead
of being copied into every prompt. Every patch line that exists on the new
side carries its new-side line number, because small models cannot count lines and a
finding is only useful on the right line::

    # src/app.py (modified)
    @@ -10,3 +10,4 @@ def main():
       10   keep = 1
          - old = 2
       11 + new = 2
       12 + more = 3
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from codejury.change.types import ChangeSet, FileChange, Hunk

if TYPE_CHECKING:
    from codejury.agents.runner import ChangeContext
    from codejury.repocontext import RepoContext
    from codejury.runstate import ReviewRun

PATCH_DIR = "patches"
CONTEXT_FILE = "context.md"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_MAX_NAME = 120


def _hunk_header(hunk: Hunk) -> str:
    header = f"-{hunk.old_start},{hunk.old_len} +{hunk.new_start},{hunk.new_len}"
    return f"@@ {header} @@ {hunk.section}" if hunk.section else f"@@ {header} @@"


def _file_header(fc: FileChange) -> str:
    notes: list[str] = [fc.status]
    if fc.old_path and fc.old_path != fc.path:
        notes.append(f"{fc.status} from {fc.old_path}")
    if fc.old_mode and fc.new_mode and fc.old_mode != fc.new_mode:
        notes.append(f"mode {fc.old_mode} -> {fc.new_mode}")
    return f"# {fc.path} ({', '.join(notes)})"


def numbered_patch(fc: FileChange) -> str:
    """One file's patch with the new-side line number on every line that has one."""
    out = [_file_header(fc)]
    if fc.is_binary:
        out.append("(binary file: no text diff to show)")
    elif not fc.hunks:
        out.append("(no content changes)")
    for hunk in fc.hunks:
        out.append(_hunk_header(hunk))
        for line in hunk.lines:
            if line.kind == "-" or line.new_no is None:
                out.append(f"{'':>5} - {line.text}")
            else:
                out.append(f"{line.new_no:>5} {line.kind} {line.text}")
    return "\n".join(out) + "\n"


def safe_patch_name(path: str, taken: set[str] | None = None) -> str:
    """A file name for ``path``'s patch: ``/`` becomes ``__``, other unsafe characters ``_``.

    A short hash of the path is appended when characters were replaced or the name is taken
    (compared case-insensitively), so two paths never share a patch file.
    """
    name = _UNSAFE.sub("_", path.replace("/", "__"))
    digest = hashlib.sha256(path.encode("utf-8", errors="surrogatepass")).hexdigest()[:8]
    lossy = name != path.replace("/", "__") or len(name) > _MAX_NAME or name.strip(".") == ""
    if lossy or (taken is not None and f"{name}.patch".lower() in taken):
        name = f"{name[:_MAX_NAME].strip('.') or 'file'}.{digest}"
    filename = f"{name}.patch"
    if taken is not None:
        taken.add(filename.lower())
    return filename


@dataclass(frozen=True)
class Workspace:
    """Where a review's patch files and shared context file live."""

    root: Path
    patch_dir: Path
    context_file: Path
    patch_paths: dict[str, Path]

    def patch_text(self, path: str) -> str:
        """The numbered patch of the changed file ``path``; KeyError when it is not in the workspace."""
        return self.patch_paths[path].read_text(encoding="utf-8")


def build_workspace(
    change: ChangeSet, dest: Path, *, shared_context: str, files: Sequence[FileChange] | None = None
) -> Workspace:
    """Write ``dest/patches/<name>.patch`` per file (``files``, else every file) and ``dest/context.md``."""
    patch_dir = dest / PATCH_DIR
    patch_dir.mkdir(parents=True, exist_ok=True)
    for stale in patch_dir.glob("*.patch"):
        stale.unlink()
    taken: set[str] = set()
    patch_paths: dict[str, Path] = {}
    for fc in change.files if files is None else files:
        if fc.path in patch_paths:
            continue
        target = patch_dir / safe_patch_name(fc.path, taken)
        target.write_text(numbered_patch(fc), encoding="utf-8", errors="replace", newline="\n")
        patch_paths[fc.path] = target
    context_file = dest / CONTEXT_FILE
    context_file.write_text(shared_context, encoding="utf-8", errors="replace", newline="\n")
    return Workspace(root=dest, patch_dir=patch_dir, context_file=context_file, patch_paths=patch_paths)


class PatchFiles(Mapping[str, str]):
    """The workspace's patch files as ``path -> numbered patch``, each read from disk when asked for."""

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace

    def __getitem__(self, path: str) -> str:
        return self._workspace.patch_text(path)

    def __iter__(self) -> Iterator[str]:
        return iter(self._workspace.patch_paths)

    def __len__(self) -> int:
        return len(self._workspace.patch_paths)


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
