"""One review's repository context: the index built once, on first use, and what the reviewers ask of it.

Tool-capable models call ``search_code`` and ``find_references``; models that get the change
inline get ``related_section``. The index is built the first time any of them needs it (in the
caller's worker thread, one build at a time) and never fails the review: a build that fails
leaves the tools answering with an ``error: ...`` line and the inline prompt without the section.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from codejury.change.head_tree import HeadTree
from codejury.change.types import FileChange
from codejury.repocontext import store
from codejury.repocontext.index import RepoIndex, build_index
from codejury.repocontext.related import related_code
from codejury.repocontext.store import IndexCache

CHARS_PER_TOKEN = 3
"""How many characters of code one token holds, at the least (the inline prompt budget's estimate)."""
MAX_SEARCH_RESULTS = 20
SNIPPET_LINES = 8
MAX_REFERENCES = 60
_SYMBOL = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*$")
_NO_CHECKOUT = "error: no repository checkout; only the patches are available: use read_patch"

Stop = Callable[[], bool]


class RepoContext:
    """The repository index of one review's checkout (``root``) or head commit (``head``), built lazily."""

    def __init__(
        self,
        root: Path | None,
        *,
        head: HeadTree | None = None,
        commit: str | None = None,
        cache_dir: Path | None = None,
        use_cache: bool = True,
        on_built: Callable[..., Any] | None = None,
    ) -> None:
        self.root = root
        self.head = head
        self.commit = commit
        self.cache_dir = cache_dir
        self.use_cache = use_cache
        self.on_built = on_built
        self._lock = threading.Lock()
        self._index: RepoIndex | None = None
        self._error: str | None = None
        self._related: dict[tuple[int, int], str] = {}

    def index(self) -> RepoIndex | None:
        """The index (built on the first call); None without a checkout or when the build failed."""
        if self.root is None and self.head is None:
            return None
        with self._lock:
            if self._index is None and self._error is None:
                try:
                    cache = IndexCache(self.cache_dir or store.default_cache_dir()) if self.use_cache else None
                    self._index = build_index(self.root, head=self.head, commit=self.commit, cache=cache)
                except Exception as exc:  # the index is help, never a reason to fail the review
                    self._error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                self._report()
            return self._index

    def _report(self) -> None:
        if self.on_built is None:
            return
        if self._index is not None:
            s = self._index.stats
            self.on_built(
                "repo_index",
                files=s.files,
                chunks=s.chunks,
                parsed=s.parsed,
                reused=s.reused,
                loaded=s.loaded,
                skipped=dict(s.skipped),
                seconds=round(s.seconds, 3),
            )
        else:
            self.on_built("repo_index", error=self._error)

    def _unavailable(self) -> str:
        if self.root is None and self.head is None:
            return _NO_CHECKOUT
        return f"error: the repository index is unavailable ({self._error}); use grep instead"

    # ---- tools -------------------------------------------------------------------------

    def search_code(self, query: str, k: int = 8, stop: Stop | None = None) -> str:
        """The best chunks for ``query`` as 'path:start-end kind name' headers with their first lines."""
        if not query.strip():
            return "error: give a query: words or identifiers, e.g. 'parse config file'"
        index = self.index()
        if index is None:
            return self._unavailable()
        k = max(1, min(int(k), MAX_SEARCH_RESULTS))
        hits = index.search(query[:500], k)
        if not hits:
            return f"no code matches {query[:100]!r}"
        out: list[str] = []
        for rank, (cid, score) in enumerate(hits, start=1):
            if stop is not None and stop():
                out.append("… stopped: the time limit of this call was reached")
                break
            chunk, path = index.chunks[cid], index.path_of(cid)
            label = f"{chunk.kind} {chunk.name}" if chunk.name else "top-level code"
            out.append(f"{rank}. {path}:{chunk.start}-{chunk.end} {label} (score {score:.1f})")
            lines = index.read_lines(path) or []
            last = min(chunk.end, chunk.start + SNIPPET_LINES - 1, len(lines))
            out += [f"{n:>5} | {lines[n - 1][:200]}" for n in range(chunk.start, last + 1)]
            if chunk.end > last:
                out.append(f"      … read_file {path} start_line={last + 1} for the rest")
        return "\n".join(out)

    def find_references(self, symbol: str, stop: Stop | None = None) -> str:
        """Where ``symbol`` is defined, and every line of other code that names it (capped)."""
        symbol = symbol.strip()
        if not _SYMBOL.match(symbol) or len(symbol) > 200:
            return f"error: not an identifier: {symbol[:80]!r}; give a name such as 'load_config' or 'Cart.total'"
        index = self.index()
        if index is None:
            return self._unavailable()
        name = symbol.rsplit(".", 1)[-1]
        defined = index.definitions(symbol) or index.definitions(name)
        out = ["definitions:"] if defined else [f"definitions: none found for {symbol}"]
        for cid in defined:
            chunk = index.chunks[cid]
            out.append(f"  {index.path_of(cid)}:{chunk.start}-{chunk.end} {chunk.kind} {chunk.name}")
        word = re.compile(rf"(?<![A-Za-z0-9_$]){re.escape(name)}(?![A-Za-z0-9_$])")
        found: list[str] = []
        files: set[str] = set()
        own = set(defined)
        for cid in index.mentioning(name):
            if stop is not None and stop():
                found.append("… stopped: the time limit of this call was reached")
                break
            chunk, path = index.chunks[cid], index.path_of(cid)
            lines = index.read_lines(path) or []
            first = chunk.start + 1 if cid in own else chunk.start  # the definition's own line is not a use
            for n in range(first, min(chunk.end, len(lines)) + 1):
                if word.search(lines[n - 1]):
                    found.append(f"  {path}:{n}: {lines[n - 1].strip()[:200]}")
                    files.add(path)
            if len(found) >= MAX_REFERENCES:
                found = found[:MAX_REFERENCES] + [f"  … more references not shown (at most {MAX_REFERENCES})"]
                break
        if not found:
            out.append(f"references: none found for {name}")
        else:
            out.append(f"references ({len(files)} files):")
            out += found
        return "\n".join(out)

    # ---- inline models -----------------------------------------------------------------

    def related_section(self, files: Sequence[FileChange], budget_tokens: int, room_chars: int) -> str:
        """The related-code section, at most ``budget_tokens`` and ``room_chars``; the same for equal arguments."""
        budget = min(budget_tokens * CHARS_PER_TOKEN, room_chars)
        if budget <= 0 or (self.root is None and self.head is None):
            return ""
        key = (budget_tokens, room_chars)
        if key not in self._related:
            index = self.index()
            self._related[key] = related_code(index, files, budget) if index is not None else ""
        return self._related[key]
