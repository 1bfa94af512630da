"""Rules proposed from what the store remembers (``codejury learn``): the text of ``.codejury/rules/learned.md``.

Two kinds, each with its counts and up to two example links:

- **dismissed**: a rule whose findings people with write access dismissed in at least ``min_changes`` merge
  requests ("Do not report ... in tests/"), where the paths they were in say (their common folder);
- **acted on**: a rule whose findings their authors fixed after codejury reported them, in at least
  ``min_changes`` merge requests ("Always check ...").

The file is written for the compliance reviewer, which reads every ``.codejury/rules/*.md`` on the base side:
nothing in it applies until a person merges it. It holds no backticks, so the team-rules analyzer, which reads
code in backticks as forbidden code, never takes a learned rule for one.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from datetime import datetime

from sqlalchemy import Connection

from codejury.record.memory import Pattern, dismissed_patterns, fixed_patterns, published_counts

LEARNED_PATH = ".codejury/rules/learned.md"
MIN_CHANGES = 2
"""The fewest merge requests a pattern must be seen in to become a proposed rule."""


def change_url(web_base: str, change_id: str) -> str | None:
    """The page of ``!12`` (GitLab) or ``#34`` (GitHub) below the repository's page ``web_base``; None otherwise."""
    number = change_id[1:]
    if not number.isdigit() or not web_base:
        return None
    return f"{web_base}/-/merge_requests/{number}" if change_id[0] == "!" else f"{web_base}/pull/{number}"


def _where(paths: Sequence[str]) -> str:
    folders = [posixpath.dirname(p) for p in paths]
    common = posixpath.commonpath(folders) if folders and all(folders) else ""
    return f" in {common}/" if common else ""


def _named(pattern: Pattern) -> str:
    title = " ".join(pattern.title.replace("`", "'").replace('"', "'").split())
    tool, _, rest = pattern.rule.partition(":")
    if "," in pattern.rule or (rest and not rest.islower()):  # analyzer rules: ruff:S101
        return f'"{title}" ({pattern.rule.replace(":", " ")})'
    return f'"{title}" ({tool})'


def _examples(pattern: Pattern, web_base: str) -> str:
    shown = []
    for change, who, how in pattern.examples:
        url = change_url(web_base, change)
        ref = f"[{change}]({url})" if url else change
        detail = f" by {who}" if who else ""
        detail += f": {how}" if how and how != "fixed" else ""
        shown.append(ref + detail)
    return "; ".join(shown)


def _times(n: int, noun: str) -> str:
    return f"{n} {noun if n == 1 else noun + 's'}"


def dismissed_rule(pattern: Pattern, web_base: str, published: int) -> str:
    """The rule; ``published``: the findings of its rule published in the period, so a reader sees how many of
    them were dismissed (a rule dismissed twice of fifty is no rule)."""
    of = f" of {_times(published, 'finding')} published" if published > pattern.count else ""
    return (
        f"- Do not report {_named(pattern)}{_where(pattern.paths)}: dismissed {_times(pattern.count, 'time')} in "
        f"{_times(pattern.changes, 'merge request')}{of} ({_examples(pattern, web_base)})."
    )


def acted_rule(pattern: Pattern, web_base: str) -> str:
    return (
        f"- Always check for {_named(pattern)}{_where(pattern.paths)}: fixed by the author after a finding "
        f"{_times(pattern.count, 'time')} in {_times(pattern.changes, 'merge request')} "
        f"({_examples(pattern, web_base)})."
    )


def learned_rules(
    repository: str,
    dismissed: Sequence[Pattern],
    fixed: Sequence[Pattern],
    *,
    since: datetime,
    web_base: str,
    published: Mapping[str, int] | None = None,
    min_changes: int = MIN_CHANGES,
) -> tuple[str, int]:
    """The learned rules file for ``repository`` and how many rules it holds (0: nothing to propose)."""
    wanted = [p for p in dismissed if p.changes >= min_changes]
    acted = [p for p in fixed if p.changes >= min_changes and p.rule not in {d.rule for d in wanted}]
    lines = [
        "# Rules learned from this repository's reviews",
        "",
        f"Proposed by codejury learn from the reviews of {repository} recorded since {since.date().isoformat()}: "
        "what people with write access dismissed again and again, and what authors kept fixing after a finding. "
        "Nothing here applies until this file is merged; edit or delete any rule.",
        "",
    ]
    if wanted:
        counts = published or {}
        lines += ["## Findings the team dismisses", ""]
        lines += [*(dismissed_rule(p, web_base, counts.get(p.rule, 0)) for p in wanted), ""]
    if acted:
        lines += ["## Findings the team acts on", "", *(acted_rule(p, web_base) for p in acted), ""]
    return "\n".join(lines), len(wanted) + len(acted)


def learn_from(
    conn: Connection, repository: str, since: datetime, *, web_base: str, min_changes: int = MIN_CHANGES
) -> tuple[str, int]:
    """``learned_rules`` from the store ``conn`` reads: what was dismissed or fixed in ``repository`` since then."""
    dismissed, fixed = dismissed_patterns(conn, repository, since), fixed_patterns(conn, repository, since)
    published = published_counts(conn, repository, since)
    return learned_rules(
        repository, dismissed, fixed, since=since, web_base=web_base, published=published, min_changes=min_changes
    )
