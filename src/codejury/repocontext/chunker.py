"""Cut a source file into chunks at function and class boundaries, with tree-sitter.

A chunk is a line range of one file: a function or method (whole, with its decorators and
nested functions), the header of a class-like container (its lines up to its first own
definition; the definitions inside get their own chunks), or a run of top-level code between
definitions (imports, constants, scripts), cut into pieces of at most ``MODULE_CHUNK_LINES``.
Names are qualified by their containers (``Cart.total``).

A file tree-sitter cannot make sense of (the top-level error nodes cover over half of it) is
reported as unparseable (``None``) and left out of the index, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from codejury.repocontext.languages import SPECS, LanguageSpec, parser

MODULE_CHUNK_LINES = 40
_MAX_DEPTH = 6
"""How deep the chunker looks for definitions inside other statements (``if`` blocks, namespaces)."""
_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "class", "class_expression"}
)
_DECLARATOR_NAMES = frozenset(
    {"identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name", "type_identifier"}
)


@dataclass(frozen=True, slots=True)
class Chunk:
    """Lines ``start``..``end`` (1-based, inclusive) of one file."""

    kind: str
    """``function`` (functions, methods), ``class`` (class-like headers) or ``module`` (top-level code)."""
    name: str
    start: int
    end: int


def chunk_source(data: bytes, language: str) -> list[Chunk] | None:
    """The chunks of one file's bytes in ``language``, in line order; None when it is unparseable."""
    spec = SPECS[language]
    tree = parser(language).parse(data)
    root = tree.root_node
    if root.has_error and _mostly_errors(root, len(data)):
        return None
    found: list[Chunk] = []
    spans: list[tuple[int, int]] = []
    _collect(root, spec, "", 0, found, spans)
    found.sort(key=lambda c: (c.start, -c.end))
    line_count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    return _with_module_chunks(found, spans, data, line_count)


def _mostly_errors(root: Node, size: int) -> bool:
    if root.type == "ERROR":
        return True
    broken = sum(c.end_byte - c.start_byte for c in root.children if c.type == "ERROR" or c.is_missing)
    return broken * 2 > max(size, 1)


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors="replace")


def _function_value(node: Node) -> Node | None:
    """The declarator of ``const f = () => ...`` (a variable holding a function or class), else None."""
    for child in node.named_children:
        if child.type == "variable_declarator":
            value = child.child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                return child
    return None


def _name(node: Node) -> str:
    named = node.child_by_field_name("name")
    if named is not None:
        return _text(named)
    if node.type == "impl_item":
        return _text(node.child_by_field_name("type"))
    if node.type == "type_declaration":
        spec = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), None)
        return _text(spec.child_by_field_name("name")) if spec is not None else ""
    if node.type in ("lexical_declaration", "variable_declaration"):
        return _text(_function_value(node).child_by_field_name("name"))  # type: ignore[union-attr]
    declarator = node.child_by_field_name("declarator")
    for _ in range(8):  # C and C++: int *(*name)(args) nests declarators
        if declarator is None or declarator.type in _DECLARATOR_NAMES:
            break
        declarator = declarator.child_by_field_name("declarator")
    return _text(declarator)


def _definition(node: Node, spec: LanguageSpec) -> tuple[str, Node] | None:
    """('function' | 'class', the definition node) when ``node`` is (or wraps) a definition."""
    if node.type in spec.wrappers:
        inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        if inner is None:
            inner = next((c for c in node.named_children if c.type in spec.functions | spec.containers), None)
        return _definition(inner, spec) if inner is not None else None
    if node.type in ("lexical_declaration", "variable_declaration"):
        return ("function", node) if node.type in spec.functions and _function_value(node) is not None else None
    if node.type in spec.functions:
        return "function", node
    if node.type in spec.containers:
        return "class", node
    return None


def _collect(
    node: Node, spec: LanguageSpec, scope: str, depth: int, out: list[Chunk], spans: list[tuple[int, int]]
) -> None:
    """Append the definitions below ``node`` to ``out``, and every definition's whole line span to ``spans``."""
    for child in node.named_children:
        found = _definition(child, spec)
        if found is None:
            if depth < _MAX_DEPTH and child.named_child_count:
                _collect(child, spec, scope, depth + 1, out, spans)
            continue
        kind, inner = found
        name = _name(inner)
        qualified = f"{scope}.{name}" if scope and name else name or scope
        start, end = child.start_point[0] + 1, child.end_point[0] + 1
        spans.append((start, end))
        if kind == "function":
            out.append(Chunk("function", qualified, start, end))
            continue
        nested: list[Chunk] = []
        _collect(inner, spec, qualified, depth + 1, nested, spans)
        header_end = min((c.start for c in nested), default=end + 1) - 1
        out.append(Chunk("class", qualified, start, max(start, header_end) if nested else end))
        out.extend(nested)


def _with_module_chunks(chunks: list[Chunk], spans: list[tuple[int, int]], data: bytes, line_count: int) -> list[Chunk]:
    """``chunks`` plus the top-level code outside every definition: runs of lines, blank edges trimmed."""
    covered = bytearray(line_count + 2)
    for start, end in spans:
        last = min(end, line_count)
        covered[start : last + 1] = b"\1" * max(0, last - start + 1)
    lines = data.split(b"\n")
    extra: list[Chunk] = []
    run_start = last_code = 0
    for number in range(1, line_count + 2):
        inside = number <= line_count and not covered[number]
        if inside and lines[number - 1].strip():
            run_start = run_start or number
            last_code = number
        if run_start and (not inside or number - run_start + 1 >= MODULE_CHUNK_LINES):
            extra.append(Chunk("module", "", run_start, last_code))
            run_start = 0
    return sorted(chunks + extra, key=lambda c: (c.start, -c.end))
