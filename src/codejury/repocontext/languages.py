"""The languages the repository index chunks, and the tree-sitter grammar of each.

Grammars come from the tree-sitter project's own prebuilt wheels (``tree-sitter-python``,
``tree-sitter-go``, ...), one small abi3 wheel per language, loaded on first use: nothing is
downloaded or compiled at run time. (``tree-sitter-language-pack`` 1.x fetches its grammars from
GitHub on first use, which fails offline; its last bundled release is a 184 MB install.)

Each language names the syntax nodes that are definitions: *functions* are chunked whole (their
nested functions stay inside them), *containers* (classes, impl blocks, modules) give a header
chunk and are entered for their own definitions, and *wrappers* (decorators, ``export``) widen
the definition they hold to their own lines.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass

from tree_sitter import Language, Parser


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    module: str
    function: str
    functions: frozenset[str]
    containers: frozenset[str]
    wrappers: frozenset[str] = frozenset()


def _spec(name: str, module: str, function: str, functions: str, containers: str, wrappers: str = "") -> LanguageSpec:
    return LanguageSpec(
        name, module, function, frozenset(functions.split()), frozenset(containers.split()), frozenset(wrappers.split())
    )


_JS_FUNCTIONS = (
    "function_declaration generator_function_declaration method_definition lexical_declaration variable_declaration"
)
_TS_FUNCTIONS = _JS_FUNCTIONS + " function_signature abstract_method_signature type_alias_declaration"
_TS_CONTAINERS = "class_declaration abstract_class_declaration interface_declaration enum_declaration internal_module"

SPECS: dict[str, LanguageSpec] = {
    spec.name: spec
    for spec in (
        _spec("python", "tree_sitter_python", "language", "function_definition", "class_definition",
              "decorated_definition"),
        _spec("javascript", "tree_sitter_javascript", "language", _JS_FUNCTIONS, "class_declaration class",
              "export_statement"),
        _spec("typescript", "tree_sitter_typescript", "language_typescript", _TS_FUNCTIONS, _TS_CONTAINERS,
              "export_statement"),
        _spec("tsx", "tree_sitter_typescript", "language_tsx", _TS_FUNCTIONS, _TS_CONTAINERS, "export_statement"),
        _spec("go", "tree_sitter_go", "language", "function_declaration method_declaration type_declaration", ""),
        _spec("rust", "tree_sitter_rust", "language",
              "function_item function_signature_item struct_item enum_item type_item macro_definition",
              "impl_item trait_item mod_item"),
        _spec("java", "tree_sitter_java", "language", "method_declaration constructor_declaration",
              "class_declaration interface_declaration enum_declaration record_declaration"),
        _spec("c", "tree_sitter_c", "language", "function_definition", ""),
        _spec("cpp", "tree_sitter_cpp", "language", "function_definition",
              "class_specifier struct_specifier namespace_definition", "template_declaration"),
        _spec("ruby", "tree_sitter_ruby", "language", "method singleton_method", "class module"),
        _spec("csharp", "tree_sitter_c_sharp", "language",
              "method_declaration constructor_declaration local_function_statement",
              "class_declaration interface_declaration struct_declaration record_declaration enum_declaration "
              "namespace_declaration"),
        _spec("php", "tree_sitter_php", "language_php", "function_definition method_declaration",
              "class_declaration interface_declaration trait_declaration"),
    )
}  # fmt: skip

EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
    ".rb": "ruby", ".cs": "csharp", ".php": "php",
}  # fmt: skip

_NOT_SOURCE = (".min.js", ".bundle.js", ".min.mjs", ".d.ts.map")


def language_for(path: str) -> str | None:
    """The language of a repository path by its extension; None for a file the index does not chunk."""
    name = path.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    if dot <= 0 or name.endswith(_NOT_SOURCE):
        return None
    return EXTENSIONS.get(name[dot:])


_lock = threading.Lock()
_languages: dict[str, Language] = {}


def grammar(name: str) -> Language:
    """The tree-sitter language of ``name`` (a key of ``SPECS``), loaded once per process."""
    with _lock:
        found = _languages.get(name)
        if found is None:
            spec = SPECS[name]
            found = Language(getattr(importlib.import_module(spec.module), spec.function)())
            _languages[name] = found
        return found


def parser(name: str) -> Parser:
    """A new parser for ``name`` (parsers are not shared between threads)."""
    return Parser(grammar(name))
