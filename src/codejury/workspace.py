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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from codejury.change.types import ChangeSet, FileChange, Hunk

if TYPE_CHECKING:
    pass

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
