"""The change's stated intent: the issues it says it resolves, found in its own words and read from its forge.

``linked_refs`` finds the closing references a forge itself acts on, in the title, the description and the
commit messages: a closing keyword (``close``, ``fix``, ``resolve``, ``implement`` and their forms, any case,
an optional colon) followed by ``#12``, ``owner/repo#12`` (``group/project#12``) or the URL of an issue on
the same host. At most ``MAX_LINKED`` are read, each with the forge's token (the configured host only: a URL
on another host is not followed). ``intent_text`` is what the reviewers see: each issue's title and body,
fenced as untrusted data like the description, within a budget of characters.

With ``issue_tracker_url`` set, ``with_tracker_issues`` adds the issues of another tracker named by key (``ABC-123``:
``tracker_keys`` finds them in the title, the description, the source branch and the commit messages) through the
same path: read by ``change.tracker`` with that tracker's own token, they join ``linked_issues`` (at most
``MAX_LINKED`` in all, the forge's first) and are fenced, screened and budgeted as the forge's are. Without a
template no key is read.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from codejury.change.types import ChangeMeta, ChangeSet, LinkedIssue
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


_KEY = re.compile(r"(?<![A-Za-z0-9_-])([A-Z][A-Z0-9]{1,9}-[0-9]+)(?![A-Za-z0-9_])")
NOT_KEYS = frozenset(
    {"UTF", "UCS", "SHA", "MD", "ISO", "RFC", "CVE", "CWE", "GHSA", "PEP", "GPL", "LGPL", "AGPL", "TLS", "SSL", "HTTP",
     "IPV", "ECMA", "ES", "X", "AES", "RSA", "ARM", "WCAG", "MP", "H", "COVID"}
)  # fmt: skip
"""Prefixes that name a standard or an encoding (``UTF-8``, ``SHA-256``, ``ISO-8601``), not an issue key."""


def tracker_keys(meta: ChangeMeta) -> list[str]:
    """The issue keys (``ABC-123``) in ``meta``'s title, description, source branch and commits, each once, in order."""
    found: list[str] = []
    for text in (meta.title, meta.description, meta.head_ref, *meta.commits):
        for key in _KEY.findall(text or ""):
            if key.split("-", 1)[0] not in NOT_KEYS and key not in found:
                found.append(key)
    return found


async def with_tracker_issues(change: ChangeSet, template: str | None, token: str | None, **read: Any) -> ChangeSet:
    """``change`` with the issues its keys name read from ``template`` (``issue_tracker_url``) beside the forge's
    linked issues, at most ``MAX_LINKED`` in all, and a note for each key not read; unchanged without a template or
    a key. ``read`` goes to ``tracker.read_tracker_issues`` (``token_env``, ``transport``)."""
    from codejury.change.tracker import read_tracker_issues

    meta = change.meta
    keys = tracker_keys(meta) if template else []
    if not keys or template is None:
        return change
    room = max(0, MAX_LINKED - len(meta.linked_issues))
    issues, notes = await read_tracker_issues(keys[:room], template, token, **read) if room else ([], [])
    if len(keys) > room:
        notes.append(f"{len(keys) - room} more issue keys were not read (at most {MAX_LINKED} linked issues)")
    meta = replace(meta, linked_issues=(*meta.linked_issues, *issues), intent_notes=(*meta.intent_notes, *notes))
    return replace(change, meta=meta)


MAX_CRITERIA = 12
"""Acceptance criteria judged per change: the first ones, in the order of the issues."""
_CHECKBOX = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[[ xX]\]\s+(?P<text>\S.*)$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?P<text>\S.*)$")
_CRITERIA_HEADING = re.compile(r"acceptance criteria|definition of done", re.IGNORECASE)
_HEADING = re.compile(r"^\s*(?:#{1,6}\s|\*\*[^*]+\*\*\s*:?\s*$|[^-*+\s].*:\s*$|h[1-6]\.\s)")


def acceptance_criteria(issues: Sequence[LinkedIssue]) -> list[tuple[str, str]]:
    """``(issue ref, criterion)`` for each acceptance criterion of ``issues``: a checkbox item (``- [ ]``,
    ``- [x]``) anywhere, or a bullet under a heading or line that names "acceptance criteria" or "definition of
    done" (until the next heading); each once, at most ``MAX_CRITERIA`` in all, each cut to 300 characters."""
    found: list[tuple[str, str]] = []
    for issue in issues:
        under = False
        for line in issue.body.splitlines():
            box, bullet = _CHECKBOX.match(line), _BULLET.match(line)
            if box is None and bullet is None and line.strip():
                under = _CRITERIA_HEADING.search(line) is not None or (under and not _HEADING.match(line))
                continue
            text = box["text"] if box is not None else bullet["text"] if bullet is not None and under else None
            item = (issue.ref, " ".join(text.split())[:300]) if text else None
            if item is not None and item not in found:
                found.append(item)
    return found[:MAX_CRITERIA]
