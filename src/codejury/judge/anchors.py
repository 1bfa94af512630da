"""Anchor reviewer output to the change: a finding must sit on a changed line of a changed file.

Small models invent paths and count lines wrong; such findings are dropped with a counted
reason and never published.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from codejury.change.types import FileChange
from codejury.findings import Finding, FindingDraft

PATH_NOT_IN_CHANGE = "path not in the change"
OUTSIDE_CHANGED_LINES = "outside the changed lines"


def finding_id(reviewer: str, draft: FindingDraft) -> str:
    """A stable id: the same finding in a re-run of the same change gets the same id."""
    key = f"{reviewer}|{draft.path}|{draft.start_line}|{draft.category}|{draft.title}".encode()
    return "f-" + hashlib.sha256(key).hexdigest()[:10]


def anchor(reviewer: str, draft: FindingDraft, files: Mapping[str, FileChange]) -> Finding | str:
    """Return the Finding, or the reason it cannot be anchored."""
    path = draft.path.strip().removeprefix("./").removeprefix("b/")
    fc = files.get(path)
    if fc is None:
        return PATH_NOT_IN_CHANGE
    start = draft.start_line
    end = max(draft.end_line or start, start)
    # Lines shown in the diff: added lines and the context around them (a docstring the change
    # makes wrong sits on a context line); both can carry an inline comment on GitLab and GitHub.
    lines = fc.new_side_lines
    if not any(start <= n <= end for n in lines):
        return OUTSIDE_CHANGED_LINES
    if end - start > 200:
        end = start
    return Finding(
        id=finding_id(reviewer, draft.model_copy(update={"path": path})),
        reviewer=reviewer,
        category=draft.category.strip()[:60] or "general",
        severity=draft.severity,
        path=path,
        start_line=start,
        end_line=end,
        title=draft.title.strip()[:200],
        body=draft.body.strip(),
        suggestion=draft.suggestion,
        confidence=draft.confidence,
    )
