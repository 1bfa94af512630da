"""Deduplicate findings: the same issue reported twice is kept once, in its strongest form."""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from codejury.findings import SEVERITY_RANK, Finding

LINE_SLACK = 2
JACCARD_THRESHOLD = 0.5
RATIO_THRESHOLD = 0.6

_TOKEN = re.compile(r"[a-z0-9]+")
_CODE_NAME = re.compile(r"`[^`]*`|\b\w*_\w*\b|\b[a-z]+[A-Z]\w*\b|\b\w+\(\)")
"""Names of code in a title: `quoted`, snake_case, camelCase, call()."""
_STOPWORDS = frozenset({"a", "an", "the", "in", "on", "of", "to", "for", "is", "and", "or", "with", "at", "by"})


def normalise_category(category: str) -> str:
    """Lower-case a category and unify its separators ("SQL_injection" == "sql-injection")."""
    return "-".join(_TOKEN.findall(category.lower()))


def title_tokens(title: str) -> list[str]:
    """The normalised words of a title, in order, without stop words and names of code.

    Two reviewers name the function they looked at: "N+1 pattern in `overdue_by_manager`" and
    "Incorrect return type of `overdue_by_manager`" share the name, not the problem (measured on the
    bundled golden set, the name made them "similar" and the N+1 finding was merged away).
    """
    return [t for t in _TOKEN.findall(_CODE_NAME.sub(" ", title).lower()) if t not in _STOPWORDS]


def titles_similar(a: str, b: str) -> bool:
    """Whether two titles name the same problem (token Jaccard or difflib ratio)."""
    return _Key.of(a, "").similar_title(_Key.of(b, ""))


@dataclass(frozen=True)
class _Key:
    tokens: frozenset[str]
    text: str
    category: str

    @classmethod
    def of(cls, title: str, category: str) -> _Key:
        tokens = title_tokens(title)
        return cls(frozenset(tokens), " ".join(tokens), normalise_category(category))

    def matches(self, other: _Key) -> bool:
        return (self.category != "" and self.category == other.category) or self.similar_title(other)

    def similar_title(self, other: _Key) -> bool:
        if not self.tokens or not other.tokens:
            return False
        union = self.tokens | other.tokens
        if len(self.tokens & other.tokens) / len(union) >= JACCARD_THRESHOLD:
            return True
        matcher = difflib.SequenceMatcher(None, self.text, other.text, autojunk=False)
        return (
            matcher.real_quick_ratio() >= RATIO_THRESHOLD
            and matcher.quick_ratio() >= RATIO_THRESHOLD
            and matcher.ratio() >= RATIO_THRESHOLD
        )


def _near(a: Finding, b: Finding) -> bool:
    return a.start_line <= b.end_line + LINE_SLACK and b.start_line <= a.end_line + LINE_SLACK


def is_duplicate(a: Finding, b: Finding) -> bool:
    """Same path, overlapping (or nearly) lines, and a similar title or the same category."""
    if a.path != b.path or not _near(a, b):
        return False
    return _Key.of(a.title, a.category).matches(_Key.of(b.title, b.category))


def _strength(item: tuple[int, Finding]) -> tuple[int, float, int, int]:
    index, f = item
    return (-SEVERITY_RANK.get(f.severity, 0), -f.confidence, -len(f.body), index)


@dataclass
class _PathIndex:
    """Kept findings of one path, sorted by start line, for near-line look-ups."""

    starts: list[int] = field(default_factory=list)
    entries: list[tuple[int, int]] = field(default_factory=list)  # (rank, finding index)
    max_span: int = 0

    def candidates(self, f: Finding) -> list[tuple[int, int]]:
        lo = bisect.bisect_left(self.starts, f.start_line - LINE_SLACK - self.max_span)
        hi = bisect.bisect_right(self.starts, f.end_line + LINE_SLACK)
        return sorted(self.entries[lo:hi])

    def add(self, f: Finding, rank: int, index: int) -> None:
        pos = bisect.bisect_right(self.starts, f.start_line)
        self.starts.insert(pos, f.start_line)
        self.entries.insert(pos, (rank, index))
        self.max_span = max(self.max_span, f.end_line - f.start_line)


def deduplicate(findings: Sequence[Finding]) -> tuple[list[Finding], list[tuple[Finding, Finding]]]:
    """Keep one finding per issue: returns (kept in input order, [(dropped, kept instead)])."""
    keys = [_Key.of(f.title, f.category) for f in findings]
    order = sorted(enumerate(findings), key=_strength)
    indexes: dict[str, _PathIndex] = {}
    kept_by: dict[int, int] = {}  # dropped index -> kept index
    for rank, (index, f) in enumerate(order):
        path_index = indexes.setdefault(f.path, _PathIndex())
        key = keys[index]
        for _, other in path_index.candidates(f):
            if _near(f, findings[other]) and key.matches(keys[other]):
                kept_by[index] = other
                break
        else:
            path_index.add(f, rank, index)
    kept = [f for i, f in enumerate(findings) if i not in kept_by]
    dropped = [(findings[i], findings[kept_by[i]]) for i in sorted(kept_by)]
    return kept, dropped
