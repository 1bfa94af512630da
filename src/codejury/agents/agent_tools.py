"""The repository tools as the model sees them: async pydantic-ai tools whose answers are fenced.

Each call runs through ``RepoTools.bounded`` (a worker thread with its own budget, stopped when
the call is cancelled), and what it returns is fenced as data in our boundary tags with our own
tags removed from it (``prompts.fence``), exactly like the change in the prompt; a refusal
(``error: ...``) only has our tags removed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic_ai import Tool

from codejury.agents.prompts import fence, strip_boundary_tags
from codejury.agents.sandbox import norm
from codejury.agents.tools import TOOL_NAMES, RepoTools

if TYPE_CHECKING:
    from codejury.repocontext import RepoContext
    from codejury.repocontext.retrieval import DocumentReranker


def fenced(tag: str, text: str, header: str = "") -> str:
    """A tool's answer as the model sees it: data fenced in ``tag``; a refusal with our tags removed."""
    if text.startswith("error: "):
        return strip_boundary_tags(text)
    return fence(tag, header + text)


OnResult = Callable[[str, str], None]
"""Sees a tool's answer (place, text) before the model does: the review's injection screen."""


def _seen(on_result: OnResult | None, place: str, text: str) -> str:
    if on_result is not None:
        on_result(place, text)
    return text


def _tool_functions(
    tools: RepoTools,
    deadline: float | None,
    repo: RepoContext | None = None,
    on_result: OnResult | None = None,
    reranker: DocumentReranker | None = None,
) -> dict[str, Callable[..., Awaitable[str]]]:
    """The functions the model calls, with the docstrings and parameter descriptions it reads."""

    async def read_file(path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Read a file of the repository (the new side of the change) with numbered lines.

        Returns at most a few hundred lines per call; a note says how to read further.

        Args:
            path: Path relative to the repository root, e.g. 'src/app/models.py'.
            start_line: First line to return (1-based); omit to start at the top.
            end_line: Last line to return; omit to read as far as allowed.
        """
        text = await tools.bounded(
            lambda budget: tools.read_file(path, start_line, end_line, budget), deadline=deadline
        )
        return fenced("file_content", _seen(on_result, f"read_file {norm(path)}", text), f"file: {norm(path)}\n")

    async def read_patch(path: str) -> str:
        """Read the patch of one changed file; every line carries its new-side line number.

        Args:
            path: Path of a changed file, exactly as in the change's file list.
        """
        return fenced("patch", tools.read_patch(path), f"file: {norm(path)}\n")

    async def grep(pattern: str, path_glob: str | None = None) -> str:
        """Search the repository for lines matching a Python regular expression.

        Returns 'path:line: text' lines; results are capped. Use (?i) for case-insensitive search.

        Args:
            pattern: Python regular expression, e.g. 'def load_config' or 'execute\\(.*%'.
            path_glob: Optional filter on the path, e.g. '*.py' or 'src/api/*'.
        """
        found = await tools.bounded(lambda budget: tools.grep(pattern, path_glob, budget), deadline=deadline)
        return fenced("tool_result", _seen(on_result, f"grep {pattern[:80]}", found))

    async def list_files(directory: str = ".") -> str:
        """List a directory of the repository; directories end with '/'.

        Args:
            directory: Directory relative to the repository root; '.' is the root.
        """
        listing = await tools.bounded(lambda budget: tools.list_files(directory, budget), deadline=deadline)
        return fenced("tool_result", listing)

    found: dict[str, Callable[..., Awaitable[str]]] = {
        "read_file": read_file,
        "read_patch": read_patch,
        "grep": grep,
        "list_files": list_files,
    }
    if repo is not None:
        found.update(_index_functions(tools, repo, deadline, on_result, reranker))
    return found


def _index_functions(
    tools: RepoTools,
    repo: RepoContext,
    deadline: float | None,
    on_result: OnResult | None = None,
    reranker: DocumentReranker | None = None,
) -> dict[str, Callable[..., Awaitable[str]]]:
    """``search_code`` and ``find_references``: the repository index (built on the first call); ``reranker``
    reorders ``search_code``'s candidates (the reviewer's own model), else the configured one does."""

    async def search_code(query: str, k: int = 8) -> str:
        """Search the repository's functions and classes by name or by words (BM25, with vectors when configured).

        Returns the best chunks as 'path:start-end kind name' with their first numbered lines.

        Args:
            query: Identifiers or words, e.g. 'load_config' or 'parse http request headers'.
            k: How many chunks to return (1 to 20).
        """
        found = await tools.bounded(
            lambda budget: repo.search_code(query, k, stop=lambda: budget.spent, reranker=reranker), deadline=deadline
        )
        return fenced("tool_result", _seen(on_result, f"search_code {query[:80]}", found))

    async def find_references(symbol: str) -> str:
        """Find where a function, class or variable is defined and every line of code that uses it.

        Args:
            symbol: The name, e.g. 'load_config' or 'Cart.total' (the part after the last dot is searched).
        """
        found = await tools.bounded(
            lambda budget: repo.find_references(symbol, stop=lambda: budget.spent), deadline=deadline
        )
        return fenced("tool_result", _seen(on_result, f"find_references {symbol[:80]}", found))

    return {"search_code": search_code, "find_references": find_references}


def as_agent_tools(
    tools: RepoTools,
    allowed: frozenset[str] = TOOL_NAMES,
    *,
    deadline: float | None = None,
    repo: RepoContext | None = None,
    on_result: OnResult | None = None,
    reranker: DocumentReranker | None = None,
) -> list[Tool[Any]]:
    """pydantic-ai tools for the names in ``allowed``, in a stable order; no call runs past ``deadline``.

    ``search_code`` and ``find_references`` are offered only with a repository index (``repo``);
    ``on_result`` sees what ``read_file``, ``grep`` and those two return before the model does;
    ``reranker`` reorders ``search_code``'s candidates (the calling reviewer's model).
    """
    functions = _tool_functions(tools, deadline, repo, on_result, reranker)
    return [
        Tool(
            functions[name],
            takes_ctx=False,
            name=name,
            docstring_format="google",
            require_parameter_descriptions=True,
        )
        for name in sorted(allowed & TOOL_NAMES)
        if name in functions
    ]
