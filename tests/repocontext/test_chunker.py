"""Chunk boundaries: functions and classes as tree-sitter sees them, per language."""

from __future__ import annotations

from codejury.repocontext.chunker import chunk_source
from codejury.repocontext.languages import language_for


def _spans(source: str, language: str) -> list[tuple[str, str, int, int]]:
    chunks = chunk_source(source.encode(), language)
    assert chunks is not None
    return [(c.kind, c.name, c.start, c.end) for c in chunks]


PYTHON = '''import os

LIMIT = 3


@cached
def load(path):
    def inner():
        return 1
    return inner()


class Cart:
    """A cart."""

    size = 0

    def total(self):
        return sum(self.items)

    @property
    def empty(self):
        return not self.items
'''


def test_python_functions_decorators_and_methods() -> None:
    assert _spans(PYTHON, "python") == [
        ("module", "", 1, 3),
        ("function", "load", 6, 10),  # the decorator belongs to the function; the nested one stays inside
        ("class", "Cart", 13, 17),  # the class header: up to its first method
        ("function", "Cart.total", 18, 19),
        ("function", "Cart.empty", 21, 23),
    ]


TYPESCRIPT = """import { x } from "./x";

export interface Item { id: number }

export function price(item: Item): number {
  return item.id * 2;
}

export const discount = (n: number) => {
  return n / 2;
};

export class Shop {
  name = "s";

  checkout(item: Item): number {
    return price(item);
  }
}
"""


def test_typescript_exports_arrow_functions_and_classes() -> None:
    assert _spans(TYPESCRIPT, "typescript") == [
        ("module", "", 1, 1),
        ("class", "Item", 3, 3),
        ("function", "price", 5, 7),
        ("function", "discount", 9, 11),
        ("class", "Shop", 13, 15),
        ("function", "Shop.checkout", 16, 18),
    ]


def test_javascript_uses_its_own_grammar() -> None:
    source = "const a = 1;\nfunction f() {\n  return a;\n}\nclass K {\n  m() { return f(); }\n}\n"
    assert _spans(source, "javascript") == [
        ("module", "", 1, 1),
        ("function", "f", 2, 4),
        ("class", "K", 5, 5),
        ("function", "K.m", 6, 6),
    ]
    assert language_for("web/app.min.js") is None  # minified bundles are not source
    assert language_for("web/App.TSX") == "tsx"


GO = """package shop

import "fmt"

type Cart struct {
\tItems []int
}

func (c *Cart) Total() int {
\treturn sum(c.Items)
}

func sum(xs []int) int {
\tfmt.Println(xs)
\treturn 0
}
"""


def test_go_types_methods_and_functions() -> None:
    assert _spans(GO, "go") == [
        ("module", "", 1, 3),
        ("function", "Cart", 5, 7),
        ("function", "Total", 9, 11),
        ("function", "sum", 13, 16),
    ]


def test_long_top_level_code_is_cut_into_pieces() -> None:
    source = "".join(f"X{i} = {i}\n" for i in range(100))
    spans = _spans(source, "python")
    assert [(s, e) for _, _, s, e in spans] == [(1, 40), (41, 80), (81, 100)]


def test_a_file_that_is_mostly_errors_is_unparseable() -> None:
    assert chunk_source(b")))] ((( def def class ::: }}} {{{ " * 20, "python") is None
    assert chunk_source(b"def ok():\n    return 1\n\ndef broken(:\n    pass\n", "python") is not None
