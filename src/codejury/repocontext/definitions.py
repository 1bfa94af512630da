"""Which definitions a change touches: the lines it touches, and what it adds, changes and removes, by name.

``touched_lines`` are the new-side lines a change adds, and the line where each removal happened. With the
head side's text, the definitions are tree-sitter's chunks of it (``chunk_source``, as the repository index
cuts it): a function or class whose name's line is added, and whose name no line the patch removes defined, is
*added* (its other lines may be context: a diff often aligns a new function's closing brace with an old one);
another with an added line, or lines removed from inside it, is *changed*.
Without it (a diff alone, a file tree-sitter cannot parse), the definition lines the patch adds are added and
the function each hunk header names is changed. A definition line the patch removes whose name the head side
no longer defines is *removed*.

Every name comes from the code: a definition's own name node, or a definition line of the patch (``DEFINITION``,
which reads ``def``, ``func``, ``function``, ``class``, ``struct``, ``type`` and the like, and a C-like
``name(args) {``). Nothing is guessed from words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from codejury.change.types import FileChange
from codejury.repocontext.chunker import Chunk, chunk_source
from codejury.repocontext.languages import language_for

_MODIFIERS = (
    r"(?:(?:export|default|async|public|private|protected|internal|static|final|abstract|override|suspend|inline"
    r"|open|sealed|virtual|unsafe|extern|local|pub(?:\([a-z]+\))?)\s+)*"
)
DEFINITION = re.compile(
    r"^\s*" + _MODIFIERS + r"(?:def|func|function|fn|sub|fun)\s+(?:\([^)]*\)\s*)?(?P<n>[A-Za-z_][A-Za-z0-9_]*)"
    r"|^\s*(?:[\w<>\[\],*&:.]+\s+)*?(?P<c>[A-Za-z_][A-Za-z0-9_]*)\s*\([^()]*\)\s*(?:const\s*)?"
    r"(?:(?:->|:|throws)[^{;]*)?\{\s*$"
)
"""A line that starts defining a function: ``def name``, ``func (r T) name``, ``export async function name``, or a
C-like ``int name(args) {`` (a call inside a condition, ``if !c.ok() {``, is not one)."""
TYPE_DEFINITION = re.compile(
    r"^\s*(?:export\s+)?(?:(?:public|abstract|final|data|pub)\s+)*"
    r"(?:class|struct|interface|trait|enum|type)\s+(?P<t>[A-Za-z_][A-Za-z0-9_]*)"
)
"""A line that defines a type: ``class Cart``, ``type Config struct``, ``pub struct Pool``, ``interface Props``."""
_NOT_NAMES = frozenset(
    {"if", "for", "while", "switch", "return", "catch", "elif", "with", "match", "else", "func", "function", "fn"}
)
"""Keywords ``name(args) {`` also reads: a condition, a loop, an anonymous function (``func() {``)."""


def definition_name(text: str) -> str | None:
    """The function ``text`` defines (``def total(self):``: total), or None."""
    found = DEFINITION.search(text)
    if found is None:
        return None
    name = found["n"] or found["c"]
    return None if name in _NOT_NAMES else name


def defined_name(text: str) -> str | None:
    """The function or type ``text`` defines, or None."""
    found = TYPE_DEFINITION.match(text)
    return found["t"] if found is not None else definition_name(text)


def touched_lines(file: FileChange) -> set[int]:
    """New-side lines the change adds, and the line where each removal happened."""
    out: set[int] = set()
    for hunk in file.hunks:
        last_new = hunk.new_start
        pending = False
        for line in hunk.lines:
            if line.kind == "-":
                pending = True
                continue
            if line.new_no is not None:
                if line.kind == "+" or pending:
                    out.add(line.new_no)
                pending = False
                last_new = line.new_no
        if pending:
            out.add(last_new)
    return out


def functions_from_hunks(file: FileChange) -> list[tuple[str, int, int]]:
    """Without a head-side tree: (name, start, end) of the function each hunk header names, and of the definitions
    the hunk shows, on the new side."""
    out: list[tuple[str, int, int]] = []
    for hunk in file.hunks:
        end = hunk.new_start + max(hunk.new_len, 1) - 1
        current = definition_name(hunk.section)
        start = hunk.new_start
        for line in hunk.lines:
            name = definition_name(line.text) if line.kind != "-" and line.new_no is not None else None
            if name is not None and line.new_no is not None:
                if current:
                    out.append((current, start, max(start, line.new_no - 1)))
                current, start = name, line.new_no
        if current:
            out.append((current, start, end))
    return out


@dataclass(frozen=True)
class FileOutline:
    """The definitions one file's change adds, changes and removes, in file order."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    """Every definition the change adds, the methods of an added class too (``added`` names the class alone)."""
    calls: dict[str, list[Call]] = field(default_factory=dict)
    """What each added or changed function calls on the lines the change adds to it: read with the head side
    only."""

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)


def _once(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(n for n in names if n))


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def outline_file(file: FileChange, head: bytes | None) -> FileOutline:
    """What ``file``'s change adds, changes and removes, read from its patch and ``head`` (its head-side bytes,
    or None when they cannot be read); an empty outline for a file in a language the index does not chunk."""
    language = language_for(file.path)
    if language is None or file.is_binary or not file.hunks:
        return FileOutline()
    gone = _once(defined_name(ln.text) or "" for h in file.hunks for ln in h.lines if ln.kind == "-")
    if file.status == "deleted":
        return FileOutline(removed=gone)
    chunks = chunk_source(head, language) if head is not None else None
    if head is None or chunks is None:
        return _from_patch(file, gone)
    added_lines = file.added_lines
    removals = _removals(file)
    lines = head.decode("utf-8", errors="replace").splitlines()
    defined = [c for c in chunks if c.kind in ("function", "class") and c.name]
    # added: its name's line is an added line, and no removed line defined that name (then it was rewritten)
    new = {c.name for c in defined if _short(c.name) not in gone and _name_line(c, lines) in added_lines}
    added: list[str] = []
    changed: list[str] = []
    for chunk in defined:
        if chunk.name in new:
            if chunk.name.rpartition(".")[0] not in new:  # a class added whole is named once, not with its methods
                added.append(chunk.name)
        elif any(chunk.start <= n <= chunk.end for n in added_lines) or any(
            chunk.start <= before and after <= chunk.end for before, after in removals
        ):
            changed.append(chunk.name)
    present = {_short(c.name) for c in defined}
    removed = [name for name in gone if name not in present]
    calls = {
        c.name: called
        for c in defined
        if c.kind == "function" and (called := _called(c, lines, added_lines, _name_line(c, lines)))
    }
    every = _once(c.name for c in defined if c.name in new)
    return FileOutline(_once(added), _once(changed), removed, every, calls)


_CALL = re.compile(r"(?:(?P<dot>\.)\s*|\b)(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*\(")
_RECEIVER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:\?)?$")


@dataclass(frozen=True)
class Call:
    """A call on an added line: ``name(`` (``receiver`` None, ``dotted`` False), ``thing.name(`` (``receiver``
    ``thing``), or ``f().name(`` (``dotted``, no receiver)."""

    name: str
    receiver: str | None = None
    dotted: bool = False


def _called(chunk: Chunk, lines: list[str], added: frozenset[int], name_line: int) -> list[Call]:
    """The calls ``chunk`` makes on its added lines (its own name's line left out), each once."""
    own = _short(chunk.name)
    found: list[Call] = []
    for n in range(max(chunk.start, name_line + 1), min(chunk.end, len(lines)) + 1):
        if n not in added:
            continue
        line = lines[n - 1]
        for match in _CALL.finditer(line):
            name = match["name"]
            if name == own or name in _NOT_NAMES:
                continue
            if match["dot"] is None:
                found.append(Call(name))
                continue
            before = _RECEIVER.search(line[: match.start()])
            found.append(Call(name, before.group(1) if before else None, dotted=True))
    return list(dict.fromkeys(found))


def _removals(file: FileChange) -> list[tuple[int, int]]:
    """Each run of removed lines as the new-side lines either side of it (0 before the first line): a removal is
    inside a definition only when both are (lines removed between two functions change neither)."""
    out: list[tuple[int, int]] = []
    for hunk in file.hunks:
        before = hunk.new_start - 1
        pending = False
        for line in hunk.lines:
            if line.kind == "-":
                pending = True
                continue
            if line.new_no is not None:
                if pending:
                    out.append((before, line.new_no))
                pending = False
                before = line.new_no
        if pending:
            out.append((before, before + 1))
    return out


def _name_line(chunk: Chunk, lines: list[str]) -> int:
    """The line of ``chunk`` that names it (after its decorators or doc comment), or its first line."""
    word = re.compile(rf"\b{re.escape(_short(chunk.name))}\b")
    for number in range(chunk.start, min(chunk.end, len(lines)) + 1):
        if word.search(lines[number - 1]):
            return number
    return chunk.start


def _from_patch(file: FileChange, gone: list[str]) -> FileOutline:
    """The outline from the patch alone: definition lines it adds, the functions its hunk headers name."""
    added = _once(defined_name(ln.text) or "" for h in file.hunks for ln in h.lines if ln.kind == "+")
    touched = touched_lines(file)
    changed = [
        name
        for name, start, end in functions_from_hunks(file)
        if name not in added and any(start <= n <= end for n in touched)
    ]
    removed = [name for name in gone if name not in added and name not in changed]
    moved = [name for name in added if name in gone]  # removed and added again: rewritten in place
    return FileOutline([n for n in added if n not in moved], _once([*moved, *changed]), removed)
