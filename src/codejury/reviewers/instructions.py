"""Instructions that reach the right reviewer: the repository's own, directory by directory, and the organisation's.

A team writes instructions for coding agents next to the code they govern: ``AGENTS.md``,
``CLAUDE.md`` or ``.codejury/instructions.md`` in any directory. For each changed file every
directory from the file's own up to the repository root is searched (``instruction_dirs``),
on the base side of the change (``BaseReader``): instructions never come from the change itself.
They are given nearest first (the file closest to the changed code before the root's), each
under a header naming the file and the changed files it governs; a file identical to one
already given (a ``CLAUDE.md`` symlinked to ``AGENTS.md``) is given once.

An organisation-wide template (``instructions_url``) is fetched within ``FETCH_TIMEOUT_S`` for
the whole fetch and capped at ``MAX_TEMPLATE_BYTES`` while it arrives; a server that does not
answer in time, answers an error, sends too much, or sends something that is not a text document
costs one warning and the review goes on without it. Its URL is ``https`` (``http`` only to a
loopback host), redirects are followed only on its own host, and the request carries no token
(``codejury.document_urls``). It comes last (the farthest from the code).

Everything shares one budget of characters (``instructions_max_chars``): what does not fit is
cut or left out, nearest kept first, and ``render_instructions`` returns one line saying what was
cut, for the reviewers (at the end of the instructions) and for the review's notes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

import httpx2

from codejury.bounded_io import human_size, read_async
from codejury.change.types import BaseReader
from codejury.document_urls import stream_same_origin, url_refusal
from codejury.errors import CodejuryError
from codejury.tls import tls_context

INSTRUCTION_NAMES: tuple[str, ...] = ("AGENTS.md", "CLAUDE.md", ".codejury/instructions.md")
"""The instruction files looked for in every directory from a changed file up to the root."""
MAX_DIRS = 40
"""At most this many directories are searched (those nearest the root first: they govern more files)."""
DEFAULT_MAX_CHARS = 8_000
FETCH_TIMEOUT_S = 2.0
MAX_TEMPLATE_BYTES = 64 * 1024
TEMPLATE_HEADER = "Organisation instructions (instructions_url)"
_APPLIES_SHOWN = 5
_MIN_CUT_CHARS = 400
"""A file is cut to the room left only when at least this much room is left; otherwise it is left out."""
_SKIPPING = "continuing without it"


@dataclass(frozen=True)
class InstructionFile:
    """One instruction file: its repository path, the directory it governs and the changed files under it."""

    path: str
    scope: str
    text: str
    applies_to: tuple[str, ...]


@dataclass(frozen=True)
class RepoInstructions:
    """What was read: the files, nearest first, and one line per file or directory that could not be."""

    files: tuple[InstructionFile, ...] = ()
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True)
class RenderedInstructions:
    """The instructions as the reviewers get them, and what the budget cut (empty when nothing was)."""

    repo: str | None
    organisation: str | None
    cut: str | None


def _parent_dirs(path: str) -> list[str]:
    """``a/b/c.py`` → ``["a/b", "a", ""]`` (the root is ``""``)."""
    parent = PurePosixPath(path).parent
    dirs = [str(p) for p in [parent, *parent.parents] if str(p) != "."]
    return [*dirs, ""]


def _depth(directory: str) -> int:
    return 0 if not directory else directory.count("/") + 1


def instruction_dirs(paths: Iterable[str], *, max_dirs: int = MAX_DIRS) -> tuple[list[str], int]:
    """The directories to search for ``paths`` (nearest first) and how many were not searched.

    When there are more than ``max_dirs``, those nearest the root are kept: each governs more of
    the change, and every deeper one is reached through them.
    """
    found = {d for p in paths for d in _parent_dirs(p)} | {""}
    by_reach = sorted(found, key=lambda d: (_depth(d), d))
    kept = by_reach[:max_dirs]
    return sorted(kept, key=lambda d: (-_depth(d), d)), len(found) - len(kept)


def instruction_paths(paths: Iterable[str], *, max_dirs: int = MAX_DIRS) -> list[str]:
    """Every instruction file path looked for on behalf of ``paths`` (what a forge reads ahead)."""
    dirs, _ = instruction_dirs(paths, max_dirs=max_dirs)
    return [_join(d, name) for d in dirs for name in INSTRUCTION_NAMES]


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def _under(path: str, directory: str) -> bool:
    return not directory or path.startswith(directory + "/")


def read_repo_instructions(base: BaseReader, changed: Sequence[str], *, max_dirs: int = MAX_DIRS) -> RepoInstructions:
    """The instruction files governing ``changed`` on the base side, nearest first.

    A file that cannot be read (over the size cap, an unreadable object) is skipped with a line
    saying so; it never stops the review.
    """
    dirs, unsearched = instruction_dirs(changed, max_dirs=max_dirs)
    files: list[InstructionFile] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for directory in dirs:
        applies = tuple(p for p in changed if _under(p, directory))
        for name in INSTRUCTION_NAMES:
            path = _join(directory, name)
            try:
                text = base.read_text(path)
            except CodejuryError as exc:
                skipped.append(f"{path} skipped ({_one_line(exc)})")
                continue
            if text is None or not text.strip():
                continue
            key = text.strip()
            if key in seen:
                continue
            seen.add(key)
            files.append(InstructionFile(path=path, scope=directory, text=text.strip(), applies_to=applies))
    if unsearched:
        skipped.append(
            f"instruction files of {unsearched} deeper directories not searched (at most {max_dirs} directories)"
        )
    return RepoInstructions(tuple(files), tuple(skipped))


def _header(f: InstructionFile) -> str:
    if not f.scope:
        return f"## {f.path} (applies to the whole repository)"
    shown = ", ".join(f.applies_to[:_APPLIES_SHOWN])
    more = f" and {len(f.applies_to) - _APPLIES_SHOWN} more" if len(f.applies_to) > _APPLIES_SHOWN else ""
    return f"## {f.path} (applies to {f.scope}/: {shown}{more})"


def render_instructions(
    repo: RepoInstructions,
    *,
    extra: Sequence[str] = (),
    organisation: str | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> RenderedInstructions:
    """The repository's instructions (files nearest first, then ``extra`` from plugins) and the
    organisation's, within one budget of ``max_chars`` characters.

    Blocks are taken in that order while they fit; the first that does not is cut to the room
    left (when at least a few hundred characters are left, or it is the first), and every later
    one is left out. ``cut`` names each cut and left-out block in one line.
    """
    blocks: list[tuple[str, str, bool]] = [(f.path, f"{_header(f)}\n\n{f.text}", False) for f in repo.files]
    blocks += [("plugin instructions", text.strip(), False) for text in extra if text.strip()]
    if organisation and organisation.strip():
        blocks.append(("the organisation's instructions", organisation.strip(), True))
    repo_parts: list[str] = []
    org_parts: list[str] = []
    cuts: list[str] = []
    used = 0
    for name, block, is_org in blocks:
        into = org_parts if is_org else repo_parts
        room = max_chars - used
        if not cuts and len(block) <= room:
            into.append(block)
            used += len(block) + 2
            continue
        if not cuts and (room >= _MIN_CUT_CHARS or used == 0) and room > 0:
            into.append(block[:room].rstrip() + "\n[cut here to fit the instructions budget]")
            cuts.append(f"{name} cut ({len(block):,} characters, {room:,} shown)")
            used = max_chars
            continue
        cuts.append(f"{name} left out")
    cut = f"instructions over the {max_chars:,}-character budget: {'; '.join(cuts)}" if cuts else None
    if cut is not None:
        # Reviewers are told too, so a missing rule reads as "not shown", never as "not there".
        (repo_parts if repo_parts or not org_parts else org_parts).append(f"[{cut}]")
    return RenderedInstructions(
        repo="\n\n".join(repo_parts) or None,
        organisation="\n\n".join(org_parts) or None,
        cut=cut,
    )


class _TemplateUnusable(CodejuryError):
    """The organisation template cannot be used (caught in ``fetch_template``: one warning)."""


async def fetch_template(
    url: str,
    *,
    warn: Callable[[str], None],
    timeout_s: float = FETCH_TIMEOUT_S,
    max_bytes: int = MAX_TEMPLATE_BYTES,
) -> str | None:
    """The organisation's instructions template at ``url``, or None with one warning when it cannot be had.

    The warning names the setting, never the URL (it may carry a token).
    """
    try:
        checked = _checked_url(url)
        async with asyncio.timeout(timeout_s):
            return await _fetch(checked, timeout_s, max_bytes)
    except (TimeoutError, httpx2.TimeoutException):
        warn(f"instructions_url unavailable (no answer within {timeout_s:g}s); {_SKIPPING}")
    except (httpx2.HTTPError, OSError) as exc:
        warn(f"instructions_url unavailable ({type(exc).__name__}); {_SKIPPING}")
    except _TemplateUnusable as exc:
        warn(f"instructions_url ignored ({exc}); {_SKIPPING}")
    except Exception as exc:  # noqa: BLE001 - the promise is "never fatal"; anything else still costs one line
        warn(f"instructions_url unavailable (unexpected {type(exc).__name__}); {_SKIPPING}")
    return None


def _checked_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise _TemplateUnusable("not an http(s) URL")
    try:
        parsed = httpx2.URL(url)
    except (httpx2.InvalidURL, ValueError, TypeError) as exc:
        raise _TemplateUnusable("invalid URL") from exc
    if not parsed.host:
        raise _TemplateUnusable("invalid URL: no host")
    refused = url_refusal(url)
    if refused is not None:
        raise _TemplateUnusable(refused)
    return url


async def _fetch(url: str, timeout_s: float, max_bytes: int) -> str:
    headers = {"accept": "text/markdown, text/plain;q=0.9, */*;q=0.1", "accept-encoding": "identity"}
    async with (
        httpx2.AsyncClient(timeout=timeout_s, follow_redirects=False, verify=tls_context()) as client,
        stream_same_origin(client, url, headers, max_redirects=5, error=_TemplateUnusable) as response,
    ):
        if response.status_code != 200:
            raise _TemplateUnusable(f"HTTP {response.status_code}")
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind in ("text/html", "application/xhtml+xml"):  # a sign-in or error page, not the template
            raise _TemplateUnusable(f"an HTML page ({kind}), not the template")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and len(declared) < 20 and int(declared) > max_bytes:
            raise _TemplateUnusable(f"{int(declared):,} bytes, over the {human_size(max_bytes)} limit")
        body = await read_async(response.aiter_bytes(), max_bytes, "the template", _TemplateUnusable)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _TemplateUnusable("not UTF-8 text") from exc
    if "\x00" in text:
        raise _TemplateUnusable("binary content, not text")
    if not text.strip():
        raise _TemplateUnusable("empty")
    return text.replace("\r\n", "\n")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__
