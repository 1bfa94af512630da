"""The change's stated intent: the issues it says it resolves, found in its own words and read from its forge.

``linked_refs`` finds the closing references a forge itself acts on, in the title, the description and the
commit messages: a closing keyword (``close``, ``fix``, ``resolve``, ``implement`` and their forms, any case,
an optional colon) followed by ``#12``, ``owner/repo#12`` (``group/project#12``) or the URL of an issue on
the same host. At most ``MAX_LINKED`` are read, each with the forge's token (the configured host only: a URL
on another host is not followed). ``intent_text`` is what the reviewers see: each issue's title and body,
fenced as untrusted data like the description, within a budget of characters.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from codejury.change.types import ChangeMeta, LinkedIssue
from codejury.errors import CodejuryError

MAX_LINKED = 5
"""Issues read per change: the rest are named in one note."""
_KEYWORD = r"(?:close[sd]?|closing|fix(?:e[sd]|ing)?|resolve[sd]?|resolving|implement(?:s|ed|ing)?)"
_REF = re.compile(
    rf"\b{_KEYWORD}:?\s+(?:(?P<url>https?://[^\s)>\]]+)|(?P<repo>[\w.-]+(?:/[\w.-]+)+)?#(?P<number>\d+))\b",
    re.IGNORECASE,
)
_ISSUE_URL = re.compile(r"^/(?P<repo>.+?)(?:/-)?/issues/(?P<number>\d+)/?$")


@dataclass(frozen=True)
class IssueRef:
    """An issue the change names: in its own repository (``repo`` None) or another on the same forge."""

    repo: str | None
    number: int

    def shown(self) -> str:
        return f"{self.repo or ''}#{self.number}"


def linked_refs(meta: ChangeMeta, host: str) -> list[IssueRef]:
    """The closing references of ``meta`` (title, description, commits), each once, in order; a URL counts only
    on ``host`` (the configured forge's web host)."""
    found: list[IssueRef] = []
    for text in (meta.title, meta.description, *meta.commits):
        for match in _REF.finditer(text or ""):
            ref = _ref(match, host)
            if ref is not None and ref not in found:
                found.append(ref)
    return found


def _ref(match: re.Match[str], host: str) -> IssueRef | None:
    if match.group("url"):
        parts = urlsplit(match.group("url"))
        on_issue = _ISSUE_URL.match(parts.path)
        if parts.hostname != host or on_issue is None:
            return None
        return IssueRef(on_issue.group("repo"), int(on_issue.group("number")))
    return IssueRef(match.group("repo"), int(match.group("number")))


def intent_text(issues: Sequence[LinkedIssue], budget_chars: int) -> str:
    """Each linked issue as the reviewers read it (the caller fences it), cut to ``budget_chars`` in all."""
    parts: list[str] = []
    left = budget_chars
    for issue in issues:
        head = f"{issue.ref}: {issue.title}\n"
        body = issue.body.strip()
        room = max(0, left - len(head))
        cut = "\n[... cut to fit the budget]" if len(body) > room else ""
        parts.append(head + body[:room] + cut)
        left -= len(head) + min(len(body), room)
        if left <= 0:
            break
    return "\n---\n".join(parts)


IssueReader = Callable[[IssueRef], Awaitable["tuple[str, str, str] | None"]]
"""Reads one issue with the forge's token: its title, body and page, or None when it cannot be seen."""


async def read_linked(
    meta: ChangeMeta, host: str, read: IssueReader
) -> tuple[tuple[LinkedIssue, ...], tuple[str, ...]]:
    """The issues ``meta`` links (at most ``MAX_LINKED``), read with ``read``, and one note for each that could not
    be (or for those past the limit)."""
    refs = linked_refs(meta, host)
    issues: list[LinkedIssue] = []
    notes: list[str] = []
    for ref in refs[:MAX_LINKED]:
        try:
            found = await read(ref)
        except CodejuryError as exc:
            notes.append(f"linked issue {ref.shown()} could not be read: {str(exc).splitlines()[0][:160]}")
            continue
        if found is None:
            notes.append(f"linked issue {ref.shown()} could not be read: not found, or not visible to the token")
            continue
        title, body, url = found
        issues.append(LinkedIssue(ref=ref.shown(), title=title, body=body, url=url))
    if len(refs) > MAX_LINKED:
        notes.append(f"{len(refs) - MAX_LINKED} more linked issues were not read (at most {MAX_LINKED})")
    return tuple(issues), tuple(notes)
