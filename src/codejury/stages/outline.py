"""The walkthrough of a weak coordinator's model: listed from the diff by codejury, with no model call.

On the embedded model, the summaries it wrote of 7 aacr-dev changes held 5 true sentences of 12, 5 false and
2 that the diff could not show; its file lines were bare numbers or copied code; checking its names against the
diff caught none of the false sentences. A summary a reader cannot trust is worse than none, so on a weak model
the walkthrough says only what the code itself says (``repocontext.definitions``):

- the summary: how many files of each kind change and by how many lines; the definitions the code (not the
  tests) adds, changes and removes, by name; and the change's title, quoted as its author's words;
- each file's line: the definitions its change adds, changes and removes, and its line counts;
- the files grouped by kind (code, tests, docs, build and configuration);
- a Mermaid flowchart of the new call paths, when the code's added lines call a definition the change adds
  (``caller --> callee``, at most ``MAX_CALLS``; which calls reach which definitions: ``_calls_it``).

It costs no tokens and no model time.
"""

from __future__ import annotations

from collections.abc import Sequence

from codejury.agents.walkthrough import KINDS, by_kind, counts, kind_of
from codejury.analyzers.base import head_bytes
from codejury.change.types import ChangeSet, FileChange
from codejury.findings import Walkthrough, WalkthroughFile
from codejury.render import counted
from codejury.repocontext.definitions import Call, FileOutline, outline_file

_KIND_WORDS = {
    "Code": ("code", "code"),
    "Tests": ("test", "tests"),
    "Docs": ("doc", "docs"),
    "Build and configuration": ("build/config", "build/config"),
}
"""How the summary counts each kind (``KINDS``): one, several."""
MAX_CALLS = 12
"""The most calls the diagram draws (in file order)."""
NAMES_SHOWN = 4
"""The most names one verb lists (``adds `a`, `b`, `c`, `d` and 3 more``)."""
TITLE_CHARS = 160


def _shown(name: str) -> str:
    """A name as a reader looks for it: C++'s ``ns.Class::method`` without the namespace it is chunked under."""
    return name.rpartition(".")[2] if "::" in name else name


def _names(names: Sequence[str]) -> str:
    shown = [f"`{_shown(n)}`" for n in names[:NAMES_SHOWN]]
    more = len(names) - len(shown)
    if more:
        return f"{', '.join(shown)} and {more} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def _verbs(outline: FileOutline, moved: Sequence[str] = ()) -> str:
    verbs = (("adds", outline.added), ("moves", moved), ("changes", outline.changed), ("removes", outline.removed))
    return "; ".join(f"{verb} {_names(names)}" for verb, names in verbs if names)


def _file_line(file: FileChange, outline: FileOutline) -> str:
    verbs = _verbs(outline)
    return f"{verbs} ({counts(file)})" if verbs else counts(file)


def _kinds_sentence(files: Sequence[FileChange]) -> str:
    added = sum(f.additions for f in files)
    removed = sum(f.deletions for f in files)
    by = [(kind, sum(1 for f in files if kind_of(f.path) == kind)) for kind in KINDS]
    kinds = ", ".join(f"{n} {_KIND_WORDS[kind][n != 1]}" for kind, n in by if n)
    return f"Changes {counted(len(files), 'file')} ({kinds}): {counted(added, 'line')} added, {removed} removed."


def _stated(title: str, commits: Sequence[str]) -> str | None:
    """The change's purpose in its author's words: its title, else its first commit's subject."""
    said = " ".join(title.split()) or (" ".join(commits[0].splitlines()[0].split()) if commits else "")
    if not said:
        return None
    if len(said) > TITLE_CHARS:
        said = said[: TITLE_CHARS - 1].rstrip() + "…"
    source = "Its title" if title.strip() else "Its first commit"
    said = said.replace("“", '"').replace("”", '"')
    return f"{source}: “{said}”."


def outlined(change: ChangeSet, files: Sequence[FileChange]) -> Walkthrough:
    """The walkthrough of ``files`` drawn from their patches and head-side definitions, without a model."""
    outlines = {f.path: outline_file(f, head_bytes(change, f.path) if f.status != "deleted" else None) for f in files}
    code = [outlines[f.path] for f in files if kind_of(f.path) == "Code"]
    added = list(dict.fromkeys(n for o in code for n in o.added))
    removed = list(dict.fromkeys(n for o in code for n in o.removed))
    moved = [n for n in added if n in removed]  # removed from one file, added to another
    merged = FileOutline(
        added=[n for n in added if n not in moved],
        changed=list(dict.fromkeys(n for o in code for n in o.changed if n not in moved)),
        removed=[n for n in removed if n not in moved],
    )
    sentences = [_kinds_sentence(files)]
    if merged or moved:
        sentences.append(f"In the code it {_verbs(merged, moved)}.")
    if (stated := _stated(change.meta.title, change.meta.commits)) is not None:
        sentences.append(stated)
    entries = [WalkthroughFile(path=f.path, line=_file_line(f, outlines[f.path])) for f in files]
    diagram = _new_calls([(f.path, outlines[f.path]) for f in files if kind_of(f.path) == "Code"])
    return Walkthrough(summary=" ".join(sentences), groups=by_kind(entries), diagram=diagram, source="diff")


def _calls_it(call: Call, caller_path: str, target: str, target_path: str) -> bool:
    """Whether ``call`` (in ``caller_path``) reaches the added definition ``target`` (in ``target_path``): a plain
    call reaches a function of no class; ``x.name(`` in the file that defines it reaches it; from another file, only
    through a receiver named as its class (``telemetry_service.capture(`` reaches ``TelemetryService.capture``).
    A name alone never says which of two same-named methods a call reaches, so a call that could be another is
    left out."""
    owner, _, name = target.replace("::", ".").rpartition(".")
    if name != call.name:
        return False
    if not call.dotted:
        return not owner
    if caller_path == target_path:
        return True
    return call.receiver is not None and _word(call.receiver) == _word(owner.rpartition(".")[2])


def _word(name: str) -> str:
    """``telemetry_service``, ``telemetryService`` and ``TelemetryService`` alike."""
    return name.replace("_", "").lower()


def _new_calls(code: Sequence[tuple[str, FileOutline]]) -> str | None:
    """A flowchart of the calls the code's added lines make to the definitions the change adds."""
    targets = [(name, path) for path, outline in code for name in outline.new]
    edges = list(
        dict.fromkeys(
            (_shown(caller), _shown(target))
            for path, outline in code
            for caller, calls in outline.calls.items()
            for call in calls
            for target, target_path in targets
            if target != caller and _calls_it(call, path, target, target_path)
        )
    )[:MAX_CALLS]
    if not edges:
        return None
    ids: dict[str, str] = {}
    for name in (n for edge in edges for n in edge):
        ids.setdefault(name, f"n{len(ids) + 1}")
    lines = [f'    {ids[a]}["{a}"] --> {ids[b]}["{b}"]' for a, b in edges]
    return "\n".join(["flowchart LR", *lines])
