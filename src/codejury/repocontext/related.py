"""The "related code" section for models that get the change inline (no tools).

Two kinds of pieces, taken from the repository index, in turn: the definitions of the names the
added lines use (defined elsewhere than in the changed lines themselves, nearest file first),
and the callers of the functions the change edits (other files first), each as a few numbered
lines. Both are matched by name, so both stay within the language of the code they relate to
(JavaScript and TypeScript are one, C and C++ are one): a Python ``open(...)`` is not a caller of a
TypeScript method ``open`` (a file of a language the index does not chunk, such as a Svelte component,
may use a definition of any). A line that imports a name is not a call of it: a caller is shown at its
first other line that names it (an added import line still names what the change uses).

A name the added lines define or assign (``def f``, ``func (r T) F``, ``F = ...``), or one whose
definition starts on a line the patch shows, has its definition in the patch: no definition of that
name elsewhere is shown. A name the added lines use only through a
package or module of the repository (``settings.timeout()``, ``prices.unit_price(...)``) is
looked up in that package only: a function of the same name elsewhere is another function, and when
the package's own definition is one the index does not hold (a Go ``var``), nothing is shown rather
than the wrong one. A name used only through a value or a type (``t.Run``, ``Invoice.build``) is that type's
method when the qualifier names a type of the repository, else the one method of that name the index holds: a free
function is never called through a value, and of several methods the index cannot tell which a value's type has.
A piece whose lines the patch already shows, or whose code repeats an earlier piece's line for line, is left out:
the prompt has them once.

Pieces are added while they fit ``budget_chars``; one that does not fit is shortened to its first
lines or left out, so the section never grows past its budget. The section is built
once per review and is the same for every reviewer, so the embedded model's prompt prefix stays
shared up to the reviewer's own focus.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from codejury.agents.prompts import fence
from codejury.change.types import FileChange
from codejury.repocontext.index import RepoIndex
from codejury.repocontext.languages import language_for
from codejury.repocontext.terms import IDENTIFIER, STOP_WORDS

INTRO = (
    "Related code from the repository, for context (it is not part of the change): definitions of "
    "names the changed lines use, and callers of the functions the change edits. Report findings "
    "only on the changed lines of the patches."
)
DEFINITION_LINES = 16
SHORT_LINES = 5
CALLER_CONTEXT = 2
_MAX_NAMES = 40
_MAX_CALLERS = 3
# The added lines of a file are scanned joined by newlines, each pattern once over the whole text (a 5 MB file is
# one regex pass, not a Python loop per identifier): no pattern crosses a line break ([^\S\n] is a blank).
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[^\S\n]*\(")
_QUALIFIED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[^\S\n]*(?:\.|::|->)[^\S\n]*(?=([A-Za-z_][A-Za-z0-9_]+))")
"""A name before ``.``, ``::`` or ``->`` and the identifier it qualifies there (``db.get_customer``)."""
_DEFINES = re.compile(
    r"\b(?:def|func|function|fn|class|struct|interface|trait|enum|type)[^\S\n]+(?:\([^)\n]*\)[^\S\n]*)?"
    r"([A-Za-z_][A-Za-z0-9_]*)"
    r"|^[^\S\n]*(?:(?:export|const|let|var|val|pub|static|final)[^\S\n]+)*([A-Za-z_][A-Za-z0-9_]*)[^\S\n]*"
    r"(?::=|(?::[^=\n]*)?=(?!=))",
    re.MULTILINE,
)
"""A line that defines or assigns a name (``def f``, ``func (r T) f``, ``class C``, ``x = ...``, ``x := ...``)."""
_IMPORT = re.compile(r"^\s*(?:import|from|use|using|require|#\s*include)\b|^\s*export\b.*\bfrom\b")
"""A line that imports or includes names (Python, JavaScript/TypeScript, Go, Java, Rust, C#, PHP, Ruby, C/C++)."""
_OWN_OBJECT = frozenset({"self", "this", "cls", "super", "Self", "base"})
"""Qualifiers that name the calling code's own object or class: its definition is the nearest one of that name."""
_GO_METHOD = re.compile(r"^\s*func\s*\(")
"""The first line of a Go method (``func (r *T) Name(``): the chunker names it as it names a function."""
_FAMILY = {"typescript": "javascript", "tsx": "javascript", "cpp": "c"}
"""Languages whose code calls each other's by name (a TypeScript file imports a JavaScript one, C++ calls C)."""


def _family(path: str) -> str | None:
    """The language family of a repository path; None for a file the index does not chunk."""
    language = language_for(path)
    return _FAMILY.get(language, language) if language is not None else None


@dataclass(frozen=True)
class Piece:
    title: str
    path: str
    lines: list[tuple[int, str]]
    more: int = 0

    def render(self) -> str:
        body = [f"# {self.title}"] + [f"{n:>5} | {text[:300]}" for n, text in self.lines]
        if self.more:
            body.append(f"      … ({self.more} more lines)")
        return "\n".join(body)

    def shown_in(self, shown: Mapping[str, frozenset[int]]) -> bool:
        """Whether the patch already shows every line of this piece (``shown``: the new-side lines per path)."""
        here = shown.get(self.path, frozenset())
        return not self.more and all(n in here for n, _ in self.lines)

    def shortened(self) -> Piece | None:
        if len(self.lines) <= SHORT_LINES:
            return None
        return Piece(self.title, self.path, self.lines[:SHORT_LINES], self.more + len(self.lines) - SHORT_LINES)


def _changed_lines(fc: FileChange) -> set[int]:
    touched = set(fc.added_lines)
    for hunk in fc.hunks:  # a pure deletion touches the line where it happened
        if not any(line.kind == "+" for line in hunk.lines) and any(line.kind == "-" for line in hunk.lines):
            touched.add(max(1, hunk.new_start))
    return touched


@dataclass(frozen=True)
class _Added:
    """The added lines of one changed file joined by newlines, the identifiers on them in order, and the file's
    language family."""

    family: str | None
    text: str
    identifiers: list[str]


def _added(files: Sequence[FileChange]) -> list[_Added]:
    added = []
    for fc in files:
        # An import line too: the names it brings in are the ones the change uses.
        text = "\n".join(line.text for hunk in fc.hunks for line in hunk.lines if line.kind == "+")
        added.append(_Added(_family(fc.path), text, IDENTIFIER.findall(text)))
    return added


def _used_names(added: Sequence[_Added]) -> dict[str, set[str | None]]:
    """Names on the added lines, called names first, in order of appearance, without keywords, each with the
    language families of the files whose added lines use it."""
    # dict.fromkeys: each file's names once, in order of first appearance.
    calls = [(dict.fromkeys(_CALL.findall(a.text)), a.family) for a in added]
    others = [(dict.fromkeys(a.identifiers), a.family) for a in added]
    used: dict[str, set[str | None]] = {}
    for names, family in calls + others:
        for name in names:
            if name in used:
                used[name].add(family)
            elif len(used) < _MAX_NAMES and len(name) > 2 and name.lower() not in STOP_WORDS:
                used[name] = {family}
    return used


def _defined_by(added: Sequence[_Added]) -> set[str]:
    """The names the added lines define or assign: the patch shows their definition."""
    return {m.group(1) or m.group(2) for a in added for m in _DEFINES.finditer(a.text)}


def _qualifiers(added: Sequence[_Added], names: Iterable[str]) -> dict[str, set[str | None]]:
    """For each of ``names`` on the added lines, the names that qualify it there (None: used unqualified)."""
    wanted = set(names)
    out: dict[str, set[str | None]] = {}
    uses: Counter[str] = Counter()
    qualified: Counter[str] = Counter()
    for a in added:
        uses.update(a.identifiers)
        for q, name in _QUALIFIED.findall(a.text):
            if name in wanted:
                out.setdefault(name, set()).add(q)
                qualified[name] += 1
    for name in wanted:
        if uses[name] > qualified[name]:  # used unqualified at least once
            out.setdefault(name, set()).add(None)
    return out


def _package_names(index: RepoIndex) -> set[str]:
    """The directory names and file stems of the indexed files: what a qualifier names when it is a package."""
    names: set[str] = set()
    for path in index.paths:
        parts = PurePosixPath(path).parts
        names.update(parts[:-1])
        names.add(PurePosixPath(path).stem)
    return names


def _in_package(path: str, packages: set[str]) -> bool:
    pure = PurePosixPath(path)
    return pure.stem in packages or any(part in packages for part in pure.parts[:-1])


def _through_values(index: RepoIndex, candidates: list[int], qualifiers: set[str], lines: _Lines) -> list[int]:
    """The definitions a name used only as ``value.name`` or ``Type.name`` can be: the type's own (``Cart.total``
    for ``Cart.total(...)``, ``Foo.new`` for ``Foo::new()``), else the one method of that name the index holds.

    A free function is never called through a value, and which of several methods a value's type has the index
    cannot tell (``t.Run`` in a Go test is ``testing.T``'s): several, or none, show nothing rather than a guess."""
    typed = [c for c in candidates if _owner(index.chunks[c].name) in qualifiers]
    if typed:
        return typed
    methods = [c for c in candidates if _is_method(index, c, lines)]
    return methods if len(methods) == 1 else []


def _owner(qualified: str) -> str:
    """The innermost type a definition's qualified name puts it in (``B`` for ``A.B.total``; "" for ``total``)."""
    return qualified.rpartition(".")[0].rpartition(".")[2]


def _is_method(index: RepoIndex, cid: int, lines: _Lines) -> bool:
    """Whether a definition belongs to a type: nested in a class or ``impl`` (``Cart.total``), or a Go method."""
    chunk = index.chunks[cid]
    if chunk.kind != "function":
        return False
    if "." in chunk.name:
        return True
    text = lines.of(index.path_of(cid))
    return text is not None and 0 < chunk.start <= len(text) and _GO_METHOD.match(text[chunk.start - 1]) is not None


def _closeness(a: str, b: str) -> int:
    """How many leading directories two paths share (a nearer definition is shown first)."""
    shared = 0
    for x, y in zip(PurePosixPath(a).parts[:-1], PurePosixPath(b).parts[:-1], strict=False):
        if x != y:
            break
        shared += 1
    return shared


class _Lines:
    def __init__(self, index: RepoIndex) -> None:
        self.index = index
        self.cache: dict[str, list[str] | None] = {}

    def of(self, path: str) -> list[str] | None:
        if path not in self.cache:
            self.cache[path] = self.index.read_lines(path)
        return self.cache[path]


def _definition_pieces(
    index: RepoIndex, files: Sequence[FileChange], changed: set[int], lines: _Lines, shown: Mapping[str, frozenset[int]]
) -> list[Piece]:
    pieces: list[Piece] = []
    paths = [fc.path for fc in files]
    added = _added(files)
    used = _used_names(added)
    qualifiers = _qualifiers(added, used)
    packages: set[str] | None = None
    own = _defined_by(added)
    for name, families in used.items():
        if name in own:  # the change defines it: another definition of that name elsewhere is another thing
            continue
        # A file of a language the index does not chunk (a template, a Svelte or Vue component) may call any.
        anywhere = None in families
        candidates = [
            cid
            for cid in index.definitions(name)
            if cid not in changed and (anywhere or _family(index.path_of(cid)) in families)
        ]
        named_by = qualifiers.get(name, {None})
        if candidates and None not in named_by:
            packages = _package_names(index) if packages is None else packages
            wanted = {q for q in named_by if q is not None}
            if wanted <= packages:  # only ever package.name: that package's definition, or none
                candidates = [c for c in candidates if _in_package(index.path_of(c), wanted)]
            elif wanted.isdisjoint(packages) and wanted.isdisjoint(_OWN_OBJECT):  # only value.name or Type.name
                candidates = _through_values(index, candidates, wanted, lines)
        if not candidates or any(index.chunks[c].start in shown.get(index.path_of(c), ()) for c in candidates):
            continue  # none, or one whose first line the patch shows: the model reads that definition there
        near = paths[0] if paths else ""
        cid = max(candidates, key=lambda c: (index.path_of(c) not in paths, _closeness(index.path_of(c), near), -c))
        chunk, path = index.chunks[cid], index.path_of(cid)
        text = lines.of(path)
        if text is None:
            continue
        end = min(chunk.end, len(text), chunk.start + DEFINITION_LINES - 1)
        numbered = [(n, text[n - 1]) for n in range(chunk.start, end + 1)]
        more = max(0, min(chunk.end, len(text)) - end)
        pieces.append(Piece(f"definition of {name} ({chunk.kind} {chunk.name}) in {path}", path, numbered, more))
    return pieces


def _caller_pieces(index: RepoIndex, changed: set[int], lines: _Lines) -> list[Piece]:
    pieces: list[Piece] = []
    for cid in sorted(changed):
        chunk = index.chunks[cid]
        if chunk.kind == "module" or not chunk.name:
            continue
        name = chunk.name.rsplit(".", 1)[-1]
        if len(name) < 3 or name.lower() in STOP_WORDS:
            continue
        word = re.compile(rf"\b{re.escape(name)}\b")
        own_path = index.path_of(cid)
        family = _family(own_path)
        found = 0
        mentions = sorted(index.mentioning(name), key=lambda c: (index.path_of(c) == own_path, c))
        for other in mentions:
            if other in changed or found >= _MAX_CALLERS or _family(index.path_of(other)) != family:
                continue
            piece = _call_site(index, other, name, word, lines)
            if piece is not None:
                pieces.append(piece)
                found += 1
    return pieces


def _call_site(index: RepoIndex, cid: int, name: str, word: re.Pattern[str], lines: _Lines) -> Piece | None:
    chunk, path = index.chunks[cid], index.path_of(cid)
    text = lines.of(path)
    if text is None:
        return None
    first = chunk.start + 1 if chunk.kind != "module" else chunk.start  # skip a definition's own name line
    span = range(first, min(chunk.end, len(text)) + 1)
    hit = next((n for n in span if word.search(text[n - 1]) and not _IMPORT.match(text[n - 1])), None)
    if hit is None:
        return None
    around = range(max(chunk.start, hit - CALLER_CONTEXT), min(chunk.end, len(text), hit + CALLER_CONTEXT) + 1)
    numbers = ([chunk.start] if chunk.start < around.start and chunk.kind != "module" else []) + list(around)
    where = f"in {chunk.kind} {chunk.name}" if chunk.name else "at top level"
    return Piece(f"caller of {name} in {path}:{hit} ({where})", path, [(n, text[n - 1]) for n in numbers])


def related_pieces(index: RepoIndex, files: Sequence[FileChange]) -> list[Piece]:
    """Every piece that relates to the change, in the order the section takes them (definitions and callers in
    turn); the same for every budget, so a review with reviewers of several context sizes finds them once."""
    changed: set[int] = set()
    for fc in files:
        if fc.status == "deleted":
            continue
        for line in _changed_lines(fc):
            cid = index.chunk_at(fc.path, line)
            if cid is not None:
                changed.add(cid)
    lines = _Lines(index)
    shown = {fc.path: fc.new_side_lines for fc in files}
    # A definition whose first line the patch shows is never picked (``_definition_pieces``); a caller may be.
    definitions = _definition_pieces(index, [f for f in files if f.status != "deleted"], changed, lines, shown)
    callers = [p for p in _caller_pieces(index, changed, lines) if not p.shown_in(shown)]
    ordered: list[Piece] = []
    for pair in zip(definitions, callers, strict=False):
        ordered += pair
    longer = definitions if len(definitions) > len(callers) else callers
    return _once(ordered + longer[min(len(definitions), len(callers)) :])


def _once(pieces: Sequence[Piece]) -> list[Piece]:
    """``pieces`` without those whose code repeats an earlier one's line for line (the same call in a copied
    function of another file): the prompt has that code once."""
    seen: set[tuple[str, ...]] = set()
    out: list[Piece] = []
    for piece in pieces:
        code = tuple(text.strip() for _, text in piece.lines)
        if code not in seen:
            seen.add(code)
            out.append(piece)
    return out


def fitted(ordered: Sequence[Piece], budget_chars: int) -> str:
    """The section made of ``ordered`` pieces (each whole, else shortened, else left out), at most ``budget_chars``
    long; "" when none fits."""
    overhead = len(fence("file_content", "")) + len(INTRO) + 4
    chosen: list[str] = []
    used = overhead
    for piece in ordered:
        for candidate in (piece, piece.shortened()):
            if candidate is None:
                continue
            text = candidate.render()
            if used + len(text) + 2 <= budget_chars:
                chosen.append(text)
                used += len(text) + 2
                break
    if not chosen:
        return ""
    return INTRO + "\n\n" + fence("file_content", "\n\n".join(chosen)) + "\n"
