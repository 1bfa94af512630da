"""Leftovers a linter catches, on the lines a change adds: an import nothing uses, a missing final newline.

Run on the head-side tree (``change.root``); every hit is on an added line, a suggestion owned by
the code-quality reviewer:

- ``unused-import`` (JavaScript, TypeScript, Java): an added import of a name that appears nowhere
  else in the file's code (ESLint's ``no-unused-vars``, an IDE's "unused import"). Strings and
  comments do not count, doc comments (``/** */``) do, so a JSDoc ``@type`` or a ``{@link}`` is a
  use. Python's unused imports are ruff's ``F401``; Go does not compile with one.
- ``no-final-newline``: a changed source file (not under a test, fixture or sample directory) whose
  last line is added and has no newline after it (the diff's "\\ No newline at end of file"; POSIX
  tools and most linters expect one).

Nothing here calls a model, and a file that cannot be read is left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from codejury.analyzers.base import AnalyzerSkipped, files_with_additions, read_head_text
from codejury.change.types import ChangeSet, FileChange
from codejury.evidence import Evidence

JS_SUFFIXES = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
JAVA_SUFFIXES = (".java",)
_JS_IMPORT = re.compile(
    r"^[ \t]*import[ \t]+(?:type[ \t]+)?(?P<clause>[\w$*{][^;'\"]*?)\s+from\s*['\"][^'\"\n]+['\"][ \t]*;?",
    re.MULTILINE,
)
_JAVA_IMPORT = re.compile(r"^[ \t]*import[ \t]+(?:static[ \t]+)?[\w.]+\.(?P<name>\w+)[ \t]*;", re.MULTILINE)
_NAME = re.compile(r"^[A-Za-z_$][\w$]*$")
CODE_SUFFIXES = (
    *JS_SUFFIXES, *JAVA_SUFFIXES,
    ".py", ".go", ".rs", ".rb", ".php", ".kt", ".swift", ".c", ".h", ".cc", ".cpp", ".cs", ".sh",
)  # fmt: skip
"""Source files whose missing final newline is flagged; data files and fixtures often lack one on purpose."""
_TEST_DIRS = frozenset({"test", "tests", "__tests__", "fixtures", "testdata", "samples", "snapshots", "__snapshots__"})


def is_test_path(path: str) -> bool:
    """A file under a test, fixture or sample directory."""
    return any(part.lower() in _TEST_DIRS for part in path.split("/")[:-1])


class HygieneAnalyzer:
    """Unused added imports (JavaScript, TypeScript, Java) and a missing final newline, in changed files."""

    name = "hygiene"

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        files = files_with_additions(change)
        if not files:
            return []
        if change.root is None:
            raise AnalyzerSkipped(f"hygiene skipped: the change has no head-side tree to read ({change.no_tree})")
        root = change.root
        hits: list[Evidence] = []
        for file in files:
            text = read_head_text(root, file.path)
            if text is None:
                continue
            hits.extend(unused_imports(file, text))
            hits.extend(missing_final_newline(file, text))
        return hits


def unused_imports(file: FileChange, text: str) -> Iterator[Evidence]:
    """Each added import statement that brings in a name the rest of the file never mentions."""
    lower = file.path.lower()
    if lower.endswith(JS_SUFFIXES):
        statements = [(m.start(), m.end(), js_imported_names(m.group("clause"))) for m in _JS_IMPORT.finditer(text)]
    elif lower.endswith(JAVA_SUFFIXES):
        statements = [(m.start(), m.end(), [m.group("name")]) for m in _JAVA_IMPORT.finditer(text)]
    else:
        return
    added = file.added_lines
    jsx = lower.endswith((".jsx", ".tsx"))  # the classic JSX transform uses React without naming it
    # Imports, strings and comments (but doc comments, which name types) are blanked out before counting.
    rest = code_only(text)
    for start, end, _ in statements:
        rest = rest[:start] + " " * (end - start) + rest[end:]
    for start, end, names in statements:
        first = text.count("\n", 0, start) + 1
        last = text.count("\n", 0, end) + 1
        if not any(n in added for n in range(first, last + 1)):
            continue
        unused = [n for n in names if not _used(n, rest) and not (n == "React" and jsx)]
        if not unused:
            continue
        shown = ", ".join(f"`{n}`" for n in unused)
        yield _suggestion(
            "unused-import",
            file.path,
            (first, last),
            f"{shown} {'is' if len(unused) == 1 else 'are'} imported but never used in this file\n"
            "Remove the import, or use it where it was meant to be used.",
        )


def _suggestion(rule: str, path: str, lines: tuple[int, int], message: str) -> Evidence:
    return Evidence(
        analyzer="hygiene", rule=rule, path=path, start_line=lines[0], end_line=lines[1], severity="suggestion",
        message=message,
    )  # fmt: skip


def code_only(text: str) -> str:
    """``text`` with string literals and comments blanked (same length, newlines kept); ``/** */`` kept.

    A template literal's text is blanked but its ``${...}`` expressions are kept. A regular expression
    literal (``/```[a-z]+$/``) is blanked too, so a quote or backtick inside it opens no string that
    would hide the rest of the file.
    """
    out = list(text)
    i, n = 0, len(text)
    depth: list[int] = []  # brace depth inside each open ${ } of a template literal

    def blank(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            if not text.startswith("/**", i):
                blank(i, end)
            i = end
        elif c == "/" and _starts_regex(out, i) and (closing := _regex_end(text, i)) is not None:
            blank(i + 1, closing)
            i = closing + 1
        elif c in "'\"":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        elif c == "`" or (c == "}" and depth and depth[-1] == 0):
            if c == "}":
                depth.pop()
            j = i + 1
            while j < n and text[j] != "`" and not text.startswith("${", j):
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            if text.startswith("${", j):
                depth.append(0)
                i = j + 2
            else:
                i = j + 1
        else:
            if depth and c == "{":
                depth[-1] += 1
            elif depth and c == "}":
                depth[-1] -= 1
            i += 1
    return "".join(out)


_REGEX_AFTER = frozenset("(,=:[!&|?{};+-*%~^")
"""A ``/`` after one of these (or at the start) opens a regular expression literal; after a value, it divides
(``<`` and ``>`` are left out: ``</div>`` closes a JSX tag)."""
_REGEX_AFTER_WORDS = frozenset(
    {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "yield", "await"}
)


def _starts_regex(code: list[str], at: int) -> bool:
    """Whether the ``/`` at ``at`` opens a regular expression literal, judged by the code before it."""
    k = at - 1
    while k >= 0 and code[k].isspace():
        k -= 1
    if k < 0 or code[k] in _REGEX_AFTER:
        return True
    end = k + 1
    while k >= 0 and (code[k].isalnum() or code[k] in "_$"):
        k -= 1
    return "".join(code[k + 1 : end]) in _REGEX_AFTER_WORDS


def _regex_end(text: str, at: int) -> int | None:
    """The index of the ``/`` closing the regular expression literal opened at ``at`` (a ``/`` inside
    ``[...]`` or escaped does not close it); None when the line ends first (then it was no literal)."""
    j, in_class, n = at + 1, False, len(text)
    while j < n and text[j] != "\n":
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == "/" and not in_class:
            return j
        in_class = (in_class and text[j] != "]") or text[j] == "["
        j += 1
    return None


def _used(name: str, text: str) -> bool:
    """``name`` appears as itself, not as a property (``x.match(``) or inside a longer name; ``...name`` is a use."""
    return re.search(r"(?<![\w$])(?:(?<=\.\.\.)|(?<!\.))" + re.escape(name) + r"(?![\w$])", text) is not None


def js_imported_names(clause: str) -> list[str]:
    """The local names an import clause binds: ``a``, ``* as ns``, ``{ b, c as d, type e }``."""
    names: list[str] = []
    braces = re.search(r"\{([^}]*)\}", clause, re.DOTALL)
    outside = clause if braces is None else clause[: braces.start()] + clause[braces.end() :]
    for part in outside.split(","):
        part = part.strip()
        if part.startswith("*"):
            part = part.split(" as ")[-1].strip()
        if _NAME.match(part):
            names.append(part)
    if braces is not None:
        for spec in braces.group(1).split(","):
            spec = re.sub(r"^\s*type\s+", "", spec.strip())
            local = spec.split(" as ")[-1].strip()
            if _NAME.match(local):
                names.append(local)
    return names


def missing_final_newline(file: FileChange, text: str) -> Iterator[Evidence]:
    """A hit on the file's last line when it is added and not followed by a newline."""
    if not text or text.endswith("\n") or not file.path.lower().endswith(CODE_SUFFIXES) or is_test_path(file.path):
        return
    last = text.count("\n") + 1
    if last not in file.added_lines:
        return
    yield _suggestion(
        "no-final-newline",
        file.path,
        (last, last),
        "The file does not end with a newline\n"
        "POSIX tools and most linters expect one, and the next change to this line will show it as changed too.",
    )
