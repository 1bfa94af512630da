"""Recorded reviews read back for display: the recent list, and each review in full.

A review's full text (summary, finding bodies, skipped and cut files, notes) is the review JSON the
store keeps beside its rows (``review_documents``). When that copy is missing or from a format this
codejury cannot read, the review is shown from its rows (findings without bodies, reviewer runs)
and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import ColumnElement, Connection, func, select

from codejury.findings import SEVERITY_RANK, Review
from codejury.record import schema
from codejury.render import clean_text, one_line, section_title

SECTION_ORDER = ("Security", "Performance", "Code quality", "Documentation", "Release", "AGENTS.md", "Team rules")


def _same_names(view: type, source: Any, *converted: str) -> dict[str, Any]:
    """The fields of the dataclass ``view`` read from ``source`` under the same names, but the ``converted`` ones."""
    return {f.name: getattr(source, f.name) for f in fields(view) if f.name not in converted}


@dataclass
class FindingView:
    reviewer: str
    category: str
    severity: str
    path: str
    start_line: int
    end_line: int
    title: str
    body: str = ""
    suggestion: str | None = None
    evidence: list[str] = field(default_factory=list)
    verified: bool | None = None
    advisory: bool = False

    @classmethod
    def of(cls, source: Any, *, body: str = "", suggestion: str | None = None) -> FindingView:
        """The view of a stored finding row or a review's ``Finding`` (the same names), text made one-line."""
        return cls(
            **_same_names(cls, source, "title", "body", "suggestion", "evidence"),
            title=one_line(source.title),
            body=body,
            suggestion=suggestion,
            evidence=[one_line(str(e)) for e in source.evidence or []],
        )

    @property
    def location(self) -> str:
        span = f"{self.start_line}-{self.end_line}" if self.end_line > self.start_line else str(self.start_line)
        return f"{self.path}:{span}"


@dataclass
class RunView:
    name: str
    role: str
    model: str
    status: str
    error: str | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float
    duration_s: float

    @classmethod
    def of(cls, source: Any, role: str) -> RunView:
        """The view of a stored reviewer-run row or a review's ``ReviewerReport`` (the same names)."""
        error = one_line(source.error) if source.error else None
        return cls(**_same_names(cls, source, "role", "error"), role=role, error=error)


@dataclass
class ReviewRow:
    """One line of the recent reviews table."""

    id: int
    uid: str
    recorded_at: datetime
    repository: str
    change_id: str
    head_sha: str
    tier: str
    verdict: str
    cost_usd: float
    duration_s: float
    findings: int
    failed_reviewers: int
    break_glass: bool


@dataclass
class ReviewDetail:
    """One review in full, as its page shows it."""

    row: ReviewRow
    judged: bool
    break_glass_by: list[str]
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    summary: str = ""
    complete: bool = True
    """False when the review's own JSON could not be read: shown from its rows only."""
    sections: list[tuple[str, list[FindingView]]] = field(default_factory=list)
    runs: list[RunView] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    cut_files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    failbacks: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def failed(self) -> list[RunView]:
        return [r for r in self.runs if r.status == "failed"]

    @property
    def finding_count(self) -> int:
        return sum(len(items) for _, items in self.sections)


def _order(title: str) -> tuple[int, str]:
    return (SECTION_ORDER.index(title), "") if title in SECTION_ORDER else (len(SECTION_ORDER), title.lower())


def by_section(findings: Sequence[FindingView]) -> list[tuple[str, list[FindingView]]]:
    """Findings under their section titles (as the review comment groups them), most severe first."""
    groups: dict[str, list[FindingView]] = {}
    for f in findings:
        groups.setdefault(section_title(f.reviewer), []).append(f)
    return [
        (title, sorted(groups[title], key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), f.path, f.start_line)))
        for title in sorted(groups, key=_order)
    ]


def recent_reviews(conn: Connection, scope: ColumnElement[bool], limit: int) -> list[ReviewRow]:
    """The ``limit`` most recently recorded reviews that ``scope`` keeps, newest first."""
    r, f = schema.reviews, schema.findings
    count = select(func.count()).where(f.c.review_id == r.c.id).scalar_subquery()
    query = (
        select(
            r.c.id,
            r.c.uid,
            r.c.recorded_at,
            r.c.repository,
            r.c.change_id,
            r.c.head_sha,
            r.c.tier,
            r.c.verdict,
            r.c.cost_usd,
            r.c.duration_s,
            count,
            r.c.failed_reviewers,
            r.c.break_glass,
        )  # fmt: skip
        .where(scope)
        .order_by(r.c.recorded_at.desc(), r.c.id.desc())
        .limit(limit)
    )
    return [ReviewRow(*tuple(row)) for row in conn.execute(query)]


def load_details(conn: Connection, rows: Sequence[ReviewRow]) -> list[ReviewDetail]:
    """Each of ``rows`` in full: its JSON copy, child rows and usage, in a handful of queries."""
    if not rows:
        return []
    r, f, runs, fb = schema.reviews, schema.findings, schema.reviewer_runs, schema.failbacks
    ids = [item.id for item in rows]
    docs = schema.review_documents
    heads = {
        head.id: head
        for head in conn.execute(
            select(
                r.c.id, r.c.judged, r.c.break_glass_by, r.c.input_tokens, r.c.output_tokens, r.c.cache_read_tokens,
                r.c.cache_write_tokens, docs.c.review,
            )
            .select_from(r.outerjoin(docs, docs.c.review_id == r.c.id))
            .where(r.c.id.in_(ids))
        )
    }  # fmt: skip
    table_findings: dict[int, list[FindingView]] = {}
    for row in conn.execute(select(f).where(f.c.review_id.in_(ids))):
        table_findings.setdefault(row.review_id, []).append(FindingView.of(row))
    table_runs: dict[int, list[RunView]] = {}
    for row in conn.execute(select(runs).where(runs.c.review_id.in_(ids))):
        table_runs.setdefault(row.review_id, []).append(RunView.of(row, row.role))
    failbacks: dict[int, list[tuple[str, str, str]]] = {}
    for row in conn.execute(select(fb).where(fb.c.review_id.in_(ids))):
        failbacks.setdefault(row.review_id, []).append((row.from_model, row.to_model, one_line(row.reason)))
    dropped: dict[int, dict[str, int]] = {}
    d = schema.dropped_findings
    for review_id, reason, n in conn.execute(
        select(d.c.review_id, d.c.reason, d.c.count).where(d.c.review_id.in_(ids))
    ):
        dropped.setdefault(review_id, {})[reason] = int(n)
    details = []
    for item in rows:
        head = heads[item.id]
        detail = ReviewDetail(
            row=item, judged=bool(head.judged), break_glass_by=[str(w) for w in head.break_glass_by or []],
            input_tokens=head.input_tokens, output_tokens=head.output_tokens,
            cache_read_tokens=head.cache_read_tokens, cache_write_tokens=head.cache_write_tokens,
            dropped=dropped.get(item.id, {}), failbacks=failbacks.get(item.id, []),
        )  # fmt: skip
        review = _review(head.review)
        if review is None:
            detail.complete = False
            detail.sections = by_section(table_findings.get(item.id, []))
            detail.runs = table_runs.get(item.id, [])
        else:
            _fill(detail, review)
        details.append(detail)
    return details


def _review(data: Any) -> Review | None:
    if not isinstance(data, dict):
        return None
    try:
        return Review.model_validate(data)
    except ValidationError:
        return None


def _fill(detail: ReviewDetail, review: Review) -> None:
    detail.summary = clean_text(review.summary).strip()
    detail.sections = by_section(
        [
            FindingView.of(
                f,
                body=clean_text(f.body).strip(),
                suggestion=clean_text(f.suggestion) if f.suggestion and f.suggestion.strip() else None,
            )
            for f in review.findings
        ]
    )
    reports = [(r, "reviewer") for r in review.reviewers]
    if review.coordinator is not None:
        reports.append((review.coordinator, "coordinator"))
    detail.runs = [RunView.of(r, role) for r, role in reports]
    detail.skipped = [(s.path, one_line(s.reason)) for s in review.skipped_files]
    detail.cut_files = list(review.cut_files)
    detail.notes = [one_line(n) for n in review.notes]
    if review.dropped_findings and not detail.dropped:
        detail.dropped = dict(review.dropped_findings)
