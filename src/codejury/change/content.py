"""What a changed file is, by its bytes: text, binary or too large, never by what the change declares.

A change's own ``.gitattributes`` (``-diff``, ``binary``, ``diff=driver``), a forge that honours
it, or a file name (``*.min.js``) are claims of the change's author. Here a file is judged by
its content alone:

- binary when a NUL byte is in its first ``SNIFF_BYTES`` bytes (git's own rule, applied to the
  bytes whatever the attributes say);
- too large when its size is over ``MAX_BLOB_BYTES`` (listed as too large, not as binary);
- minified when its lines say so: nearly all of it in lines of ``MINIFIED_LINE_CHARS`` characters
  or more, with little whitespace (``looks_minified``).

Every blob is read through one ``git cat-file --batch`` and drained in chunks, never held whole.
A file whose patch a forge left out although its head-side bytes are text is shown here as its
whole head side (``whole_file_change``), so it is reviewed like any other.
"""

from __future__ import annotations

import difflib
import json
import re
import tempfile
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import IO

import yaml

from codejury.bounded_io import MAX_BLOB_BYTES, copy_stream
from codejury.change.diffparse import parse_diff
from codejury.change.git import Git
from codejury.change.head_export import NO_LAZY_FETCH, too_large
from codejury.change.types import FileChange

SNIFF_BYTES = 8000
"""How far git looks for a NUL byte to call a file binary (``buffer_is_binary``)."""
BINARY = "binary file"
MINIFIED_LINE_CHARS = 500
"""A line this long is machine-written: nobody writes or reviews code on one line of 500 characters."""
MINIFIED_SHARE = 0.9
"""The share of a minified file's characters that lie in such lines."""
MAX_WHITESPACE_SHARE = 0.1
"""A minified file's long lines are at most this much whitespace (hand-written code is far above it)."""
_GO_SUM_LINE = re.compile(r"^\S+ v\S+ h1:[A-Za-z0-9+/=]+$")
CODE_SUFFIXES = (
    ".py", ".pyi", ".pyw", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".vue", ".svelte",
    ".astro", ".go", ".rs", ".java", ".kt", ".kts", ".scala", ".groovy", ".rb", ".php", ".pl", ".pm", ".lua",
    ".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx", ".m", ".mm", ".cs", ".fs", ".swift", ".dart",
    ".ex", ".exs", ".erl", ".hs", ".clj", ".r", ".jl", ".zig", ".nim", ".sh", ".bash", ".zsh", ".ksh", ".ps1",
    ".bat", ".cmd", ".sql", ".html", ".htm", ".xhtml", ".tf", ".hcl", ".yml", ".yaml", ".toml", ".gradle",
    ".dockerfile", ".mk", ".cmake", ".wasm",
)  # fmt: skip
"""Files that hold code someone runs: one of them skipped unread withholds the review's approval."""
CODE_NAMES = frozenset({"dockerfile", "containerfile", "makefile", "gnumakefile", "jenkinsfile", "rakefile"})


def is_binary(data: bytes) -> bool:
    """Whether these first bytes of a file make it binary: a NUL byte, as git decides."""
    return b"\0" in data[:SNIFF_BYTES]


def is_code(path: str) -> bool:
    """Whether ``path`` names a file of code by its name (an image, an archive or a font is not)."""
    name = path.rsplit("/", 1)[-1].lower()
    return name.endswith(CODE_SUFFIXES) or name in CODE_NAMES


def blob_kinds(git: Git, shas: Iterable[str], *, limit: int = MAX_BLOB_BYTES) -> dict[str, str]:
    """The blobs among ``shas`` that are not reviewable text, each with why (``BINARY`` or ``too_large``).

    A blob git cannot read is not listed (the diff says what it can of it)."""
    wanted = list(dict.fromkeys(shas))
    kinds: dict[str, str] = {}
    if not wanted:
        return kinds
    with tempfile.TemporaryFile() as requests:
        requests.write("".join(f"{sha}\n" for sha in wanted).encode())
        requests.seek(0)
        _read_kinds(git, wanted, requests, limit, kinds)
    return kinds


def _read_kinds(git: Git, wanted: list[str], requests: IO[bytes], limit: int, kinds: dict[str, str]) -> None:
    with git.popen("cat-file", "--batch", env={**git.env, **NO_LAZY_FETCH}, stdin=requests) as proc:
        assert proc.stdout is not None
        for sha in wanted:
            header = proc.stdout.readline(256).split()
            if len(header) == 2 and header[1] == b"missing":
                continue
            if len(header) != 3 or not header[2].isdigit():
                return  # git stopped: what it did not answer is diffed as text
            size = int(header[2])
            try:
                reason = _kind(proc.stdout, size, limit)
                proc.stdout.read(1)
            except EOFError:
                return
            if reason is not None:
                kinds[sha] = reason


def _kind(out: IO[bytes], size: int, limit: int) -> str | None:
    """Read one blob of ``size`` bytes from ``out``: None for text, else why not."""
    if size > limit:
        copy_stream(out, size, None)
        return too_large(size, limit)
    head = out.read(min(size, SNIFF_BYTES))
    if len(head) < min(size, SNIFF_BYTES):
        raise EOFError
    copy_stream(out, size - len(head), None)
    return BINARY if is_binary(head) else None


def looks_minified(text: str) -> bool:
    """Whether ``text`` has the shape of minified or bundled code: nearly all of it in very long lines, with
    little whitespace in them. A hand-written file named ``*.min.js`` has neither."""
    total = len(text.strip())
    if total < MINIFIED_LINE_CHARS:
        return False
    long_lines = [line for line in text.splitlines() if len(line) >= MINIFIED_LINE_CHARS]
    in_long = sum(len(line) for line in long_lines)
    if in_long < MINIFIED_SHARE * total:
        return False
    spaces = sum(1 for line in long_lines for ch in line if ch.isspace())
    return spaces <= MAX_WHITESPACE_SHARE * in_long


def is_lock_data(path: str, text: str) -> bool:
    """Whether ``text`` reads as the data its lock file's name says: a JSON, TOML or YAML mapping for a lock
    file in that format, ``go.sum`` lines (module, version, hash). A package manager reads a lock file as data
    and never runs it; text that is not (code under a lock file's name), or a lock file of another format, is
    reviewed when it is new."""
    name = path.rsplit("/", 1)[-1].lower()
    if name in ("go.sum", "go.work.sum"):
        lines = [line for line in text.splitlines() if line.strip()]
        return bool(lines) and all(_GO_SUM_LINE.match(line) for line in lines)
    load = _LOCK_FORMATS.get(name)
    if load is None:
        return False
    try:
        data = load(text)
    except (ValueError, yaml.YAMLError, RecursionError):
        return False
    return isinstance(data, dict) and bool(data)


_JSON_LOCKS = (
    "package-lock.json", "npm-shrinkwrap.json", "packages.lock.json", "package.resolved", "pipfile.lock",
    "composer.lock", "flake.lock", "deno.lock", "conan.lock", "renv.lock", "module.bazel.lock",
)  # fmt: skip
_LOCK_FORMATS: dict[str, Callable[[str], object]] = {
    **dict.fromkeys(_JSON_LOCKS, json.loads),
    **dict.fromkeys(("cargo.lock", "poetry.lock", "uv.lock", "pdm.lock"), tomllib.loads),
    **dict.fromkeys(("pnpm-lock.yaml", "pixi.lock", "podfile.lock", "pubspec.lock", "shard.lock"), yaml.safe_load),
}


def whole_file_change(fc: FileChange, head: str, base: str | None = None) -> FileChange:
    """``fc`` (a file a forge or a diff file showed without its text) as a text diff of ``base`` to ``head``;
    without ``base`` (the base side of such a change is rarely at hand), every line of ``head`` is added.
    Lines end at ``\\n`` only, as git and the analyzers count them."""
    old = [] if base is None else _lines(base)
    body = list(difflib.unified_diff(old, _lines(head), "a/f", "b/f", lineterm="", n=3))
    if not body:
        return replace(fc, hunks=(), is_binary=False, patch="")
    [parsed] = parse_diff("diff --git a/f b/f\n" + "\n".join(body) + "\n")  # names of its own: any path parses
    return replace(fc, hunks=parsed.hunks, is_binary=False, patch="\n".join(body[2:]) + "\n")


def _lines(text: str) -> list[str]:
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if lines[-1] == "" else lines
