"""Screening one review's untrusted text: each hit of ``injection.scan`` becomes an ``injection_suspected`` event.

A ``Screen`` belongs to one review (its event log). ``screen_change`` reads what the change carries
(title, description, commit messages, comments or, on a forge, every person's comment of the
discussion, the added lines of the files a model sees) and the
instructions the models get (the repository's, the organisation's, the team's rules); the
reviewers' tools hand each file, search or reference answer to ``Screen.tool_result`` before the
model reads it. Each event names the ``source``, the ``place`` (``description line 3``,
``src/app.py:12``), the ``rule`` and a short ``excerpt``, which the event log scrubs of secrets
like every other event. The same (source, place, rule) is logged once per review, and at most
``MAX_EVENTS`` are logged in all, so a file full of zero-width characters cannot flood the log.

``suspected_injections(events)`` reads them back for the finished review. Nothing here removes
text or touches a finding: the fence around the data stays the defence.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from codejury.change.discussion import human_bodies
from codejury.change.types import ChangeSet, FileChange
from codejury.findings import SuspectedInjection
from codejury.guardrails.injection import scan
from codejury.record.events import EventLog

EVENT = "injection_suspected"
MAX_EVENTS = 200
"""The most ``injection_suspected`` events one review logs (the rest are counted in ``injection_capped``)."""
SOURCES = (
    "title",
    "description",
    "commit_message",
    "comment",
    "diff",
    "tool_result",
    "repo_instructions",
    "org_instructions",
    "custom_rules",
    "test_report",
)
"""Where a screened text comes from (an event's ``source``)."""


class Screen:
    """Logs the instruction-shaped passages of one review's texts, each once (thread-safe: tools run in threads)."""

    def __init__(self, events: EventLog) -> None:
        self.events = events
        self._seen: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()
        self.capped = 0

    def text(self, source: str, place: str, text: str, *, first_line: int = 1, hidden_comments: bool = False) -> int:
        """Screen ``text`` from ``source``; a hit on its line n is placed at ``place`` line n (``first_line`` = 1)."""
        found = 0
        if not text:
            return found
        multi = "\n" in text.strip("\n")
        for hit in scan(text, hidden_comments=hidden_comments):
            where = f"{place} line {first_line + hit.line - 1}" if multi else place
            found += self._emit(source, where, hit.rule, hit.excerpt)
        return found

    def line(self, source: str, place: str, text: str) -> int:
        """Screen one line placed exactly at ``place`` (``path:line``)."""
        return sum(self._emit(source, place, hit.rule, hit.excerpt) for hit in scan(text))

    def lines(self, source: str, path: str, numbered: Sequence[tuple[int, str]]) -> int:
        """Screen the lines ``(number, text)`` of the file ``path`` in one pass, each hit placed at
        ``path:number``; a phrase is looked for within each line, as ``line`` does."""
        if not numbered:
            return 0
        texts = [text.replace("\n", " ") for _, text in numbered]
        hits = scan("\n".join(texts), one_line_phrases=True)
        return sum(self._emit(source, f"{path}:{numbered[h.line - 1][0]}", h.rule, h.excerpt) for h in hits)

    def tool_result(self, place: str, text: str) -> None:
        """A tool's answer before the model reads it (``read_file path``, ``grep PATTERN``)."""
        if text.startswith("error: "):
            return
        self.text("tool_result", place, text)

    def _emit(self, source: str, place: str, rule: str, excerpt: str) -> int:
        key = (source, place, rule)
        with self._lock:
            if key in self._seen:
                return 0
            self._seen.add(key)
            if len(self._seen) > MAX_EVENTS:
                self.capped += 1
                if self.capped == 1:
                    self.events.emit("injection_capped", limit=MAX_EVENTS)
                return 0
        self.events.emit(EVENT, source=source, place=place[:300], rule=rule, excerpt=excerpt)
        return 1


def screen_change(
    screen: Screen,
    change: ChangeSet,
    files: Sequence[FileChange],
    *,
    instructions: Iterable[tuple[str, str | None]] = (),
) -> None:
    """Screen the change's texts, the added lines of ``files`` and the ``(source, text)`` instructions."""
    meta = change.meta
    screen.text("title", "title", meta.title or "")
    screen.text("description", "description", meta.description or "", hidden_comments=True)
    for number, message in enumerate(meta.commits, start=1):
        screen.text("commit_message", f"commit {number}", message)
    for issue in meta.linked_issues:  # what the change says it resolves: people's text on the forge, read as data
        screen.text("linked_issue", f"issue {issue.ref}", f"{issue.title}\n{issue.body}", hidden_comments=True)
    if meta.discussion is not None:  # on a forge: every person's comment, in its thread
        for place, body in human_bodies(meta.discussion):
            screen.text("comment", place, body)
    else:
        for number, comment in enumerate(meta.comments, start=1):
            screen.text("comment", f"comment {number}", comment)
    for file in files:
        lines = (line for hunk in file.hunks for line in hunk.lines)
        added = [(line.new_no, line.text) for line in lines if line.kind == "+" and line.new_no]
        screen.lines("diff", file.path, added)
    for source, text in instructions:
        if text:
            screen.text(source, source.replace("_", " "), text)


def suspected_injections(events: Iterable[Mapping[str, Any]]) -> list[SuspectedInjection]:
    """The passages the run's (already redacted) events logged as instruction-shaped, in the order found."""
    return [
        SuspectedInjection(
            source=str(e.get("source", "")),
            place=str(e.get("place", "")),
            rule=str(e.get("rule", "")),
            excerpt=str(e.get("excerpt", "")),
        )
        for e in events
        if e.get("type") == EVENT
    ]
