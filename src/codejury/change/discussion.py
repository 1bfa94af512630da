"""A merge request's or pull request's discussion, as the forge shows it: untrusted text, read as data.

The forge adapters (``forges.gitlab``, ``forges.github``) build one ``Discussion`` while they load
the change, from what they read anyway: GitLab's discussions (every page; system notes left out),
GitHub's issue comments, review bodies and review comments grouped into threads, with each
thread's resolution from GraphQL. A thread is a human's comment and its replies, or one of
codejury's earlier findings (only where the marker is on a note the token's own user wrote) and
the replies to it; codejury's own summary is left out (the re-review section already says what it
found). ``discussion_text`` writes it for a model within a budget: the oldest threads are cut first,
and the cut is said in one line. Everything here is the forge users' text: the caller fences it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_COMMENT_CHARS = 1_500
"""One comment, as a model sees it (a pasted log must not take the whole budget)."""
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class DiscussionComment:
    """One comment: who wrote it, when (ISO 8601, as the forge says), and its text."""

    author: str
    body: str
    created_at: str = ""
    by_bot: bool = False
    """Written by the token's own user (codejury)."""


@dataclass(frozen=True)
class DiscussionThread:
    """A thread: its comments oldest first, where it is anchored, and whether it is resolved."""

    comments: tuple[DiscussionComment, ...]
    kind: str = "comment"
    """``comment`` (a person's), ``finding`` (codejury's earlier finding) or ``review`` (a GitHub review's body)."""
    path: str = ""
    line: int | None = None
    resolvable: bool = False
    resolved: bool = False
    resolved_by: str = ""
    outdated: bool = False
    state: str = ""
    """A GitHub review's state (``APPROVED``, ``CHANGES_REQUESTED``, ``COMMENTED``)."""

    @property
    def started(self) -> str:
        return self.comments[0].created_at if self.comments else ""

    @property
    def open(self) -> bool:
        return self.resolvable and not self.resolved


@dataclass(frozen=True)
class Discussion:
    """The change's discussion on its forge (``noun``: "merge request", "pull request")."""

    forge: str
    noun: str
    threads: tuple[DiscussionThread, ...] = ()

    def ordered(self) -> list[DiscussionThread]:
        """The threads oldest first (by their first comment; the forge's order where a time is missing)."""
        if all(t.started for t in self.threads):
            return sorted(self.threads, key=lambda t: t.started)  # ISO 8601 in one forge's format; stable
        return list(self.threads)

    def counts(self) -> str:
        """``3 threads, 1 open`` (or ``no comments``)."""
        if not self.threads:
            return "no comments"
        n = len(self.threads)
        opened = sum(1 for t in self.threads if t.open)
        return f"{n} thread{'s' if n != 1 else ''}, {opened} open"


def _state(thread: DiscussionThread) -> str:
    if thread.resolved:
        return f"resolved by {thread.resolved_by}" if thread.resolved_by else "resolved"
    return "open" if thread.resolvable else ""


def _header(number: int, thread: DiscussionThread) -> str:
    kind = {"finding": "codejury finding", "review": "review"}.get(thread.kind, "comment")
    parts = [f"thread {number}", kind]
    if thread.state:
        parts.append(thread.state.lower().replace("_", " "))
    if thread.path:
        parts.append(f"{thread.path}:{thread.line}" if thread.line else thread.path)
    if thread.outdated:
        parts.append("outdated (the code moved since)")
    if state := _state(thread):
        parts.append(state)
    return "--- " + " · ".join(parts)


def _comment(comment: DiscussionComment) -> str:
    body = _HTML_COMMENT.sub("", comment.body) if comment.by_bot else comment.body  # our markers, not text
    body = body.strip() or "(empty)"
    if len(body) > MAX_COMMENT_CHARS:
        body = body[:MAX_COMMENT_CHARS] + " …[comment cut]"
    who = f"{comment.author} (codejury)" if comment.by_bot else comment.author
    when = f"[{comment.created_at[:16].replace('T', ' ')}] " if comment.created_at else ""
    return f"{when}{who}: {body}"


def thread_text(number: int, thread: DiscussionThread) -> str:
    return "\n".join([_header(number, thread), *(_comment(c) for c in thread.comments)])


def discussion_text(discussion: Discussion, budget_chars: int, *, path: str | None = None) -> tuple[str, int]:
    """The discussion oldest first, within ``budget_chars``, and how many threads were cut (the oldest).

    ``path``: only the threads anchored to that file. The line saying what was cut is part of the text.
    """
    threads = discussion.ordered()
    if path is not None:
        threads = [t for t in threads if t.path == path]
    if not threads:
        where = f" on {path}" if path is not None else ""
        return f"(no comments{where} on this {discussion.noun})", 0
    blocks = [thread_text(n, t) for n, t in enumerate(threads, 1)]
    kept: list[str] = []
    used = 0
    for block in reversed(blocks):  # newest first: the oldest are the ones cut
        if kept and used + len(block) + 1 > budget_chars:
            break
        if not kept and len(block) > budget_chars:
            block = block[: max(0, budget_chars - 40)] + "\n…[thread cut]"
        kept.append(block)
        used += len(block) + 1
    cut = len(blocks) - len(kept)
    lines = [f"{discussion.noun} discussion: {discussion.counts()}, oldest first"]
    if cut:
        lines.append(f"[{cut} older thread{'s' if cut != 1 else ''} left out to fit the budget]")
    return "\n".join([*lines, *reversed(kept)]), cut


def human_bodies(discussion: Discussion | None) -> Sequence[tuple[str, str]]:
    """``(place, body)`` of every comment a person wrote (for the injection screen)."""
    if discussion is None:
        return []
    out: list[tuple[str, str]] = []
    for number, thread in enumerate(discussion.ordered(), 1):
        for index, comment in enumerate(thread.comments, 1):
            if not comment.by_bot:
                out.append((f"discussion thread {number} comment {index}", comment.body))
    return out
