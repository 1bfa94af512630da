"""The store's side of memory (``codejury.memory``): what a review writes, and the queries that read it back.

- ``write_memory``: in the record's transaction, the keys of the findings the review published, the findings it
  matched to earlier dismissals, and each dismissal it saw, stored with the keys of the review of the same change
  that published the finding (the latest one that did);
- ``dismissals_for``: a review's one lookup, by repository and (rule, shape) pairs, on ``ix_dismissals_lookup``;
- ``suppressed_by_rule`` and ``suppressed_by_repository``: ``codejury stats`` and the dashboard;
- ``dismissed_patterns`` and ``fixed_patterns``: what ``codejury learn`` proposes rules from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import ColumnElement, Connection, and_, case, func, select, true, tuple_

from codejury.record import schema
from codejury.record.model import ReviewRecord

LOOKUP_PAIRS = 500
"""The most (rule, shape) pairs one lookup asks for (a review with more findings asks for its first ones)."""


def write_memory(conn: Connection, record: ReviewRecord, review_id: int, at: datetime) -> None:
    """Store ``record``'s memory rows (``review_id`` is its row in ``reviews``, ``at`` its time, naive UTC)."""
    rows: list[tuple[Any, list[dict[str, Any]]]] = [
        (schema.memory_keys, [k.model_dump() for k in record.memory_keys if k.rule]),
        (schema.remembered, [r.model_dump() for r in record.remembered]),
        (schema.dismissals, _dismissals(conn, record, review_id, at)),
    ]
    for table, values in rows:
        if values:
            conn.execute(table.insert(), [{**v, "review_id": review_id} for v in values])


def _dismissals(conn: Connection, record: ReviewRecord, review_id: int, at: datetime) -> list[dict[str, Any]]:
    """Each dismissal of ``record`` with the keys its finding was published with (none known: not stored)."""
    wanted = {d.fingerprint: d for d in record.dismissals}
    if not wanted or not record.repository:
        return []
    r, k, f = schema.reviews, schema.memory_keys, schema.findings
    query = (
        select(k.c.fingerprint, k.c.rule, k.c.rule_version, k.c.shape, f.c.path, f.c.title)
        .select_from(k.join(r, r.c.id == k.c.review_id))
        .join(f, and_(f.c.review_id == k.c.review_id, f.c.fingerprint == k.c.fingerprint))
        .where(
            r.c.repository == record.repository,
            r.c.change_id == record.change_id,
            r.c.id != review_id,
            k.c.fingerprint.in_(sorted(wanted)),
        )
        .order_by(r.c.recorded_at.desc(), r.c.id.desc())
    )
    out: dict[str, dict[str, Any]] = {}
    for row in conn.execute(query):
        if row.fingerprint in out or not row.shape:
            continue
        gone = wanted[row.fingerprint]
        out[row.fingerprint] = {
            "repository": record.repository, "change_id": record.change_id, "fingerprint": row.fingerprint,
            "rule": row.rule, "rule_version": row.rule_version, "shape": row.shape, "path": row.path,
            "title": row.title, "dismissed_by": gone.by, "how": gone.how, "dismissed_at": at,
        }  # fmt: skip
    return list(out.values())


@dataclass(frozen=True)
class PastDismissal:
    """A dismissal a review matched by rule and shape."""

    rule: str
    rule_version: str
    shape: str
    change_id: str
    dismissed_by: str
    how: str
    dismissed_at: datetime


def dismissals_for(
    conn: Connection, repository: str, keys: Sequence[tuple[str, str]], since: datetime
) -> list[PastDismissal]:
    """The dismissals in ``repository`` since ``since`` whose (rule, shape) is one of ``keys``, latest first: one
    query, whatever the number of findings."""
    pairs = sorted(set(keys))[:LOOKUP_PAIRS]
    if not pairs or not repository:
        return []
    d = schema.dismissals
    query = (
        select(d.c.rule, d.c.rule_version, d.c.shape, d.c.change_id, d.c.dismissed_by, d.c.how, d.c.dismissed_at)
        .where(d.c.repository == repository, d.c.dismissed_at >= since, tuple_(d.c.rule, d.c.shape).in_(pairs))
        .order_by(d.c.dismissed_at.desc())
    )
    return [PastDismissal(*row) for row in conn.execute(query)]


class SuppressedRow(BaseModel):
    """Findings matched to a dismissal, per rule (or per repository): suppressed, and published anyway."""

    key: str
    suppressed: int
    published_anyway: int


def _suppressed(conn: Connection, column: Any, where: ColumnElement[bool]) -> list[SuppressedRow]:
    m, r = schema.remembered, schema.reviews
    query = (
        select(
            column,
            func.sum(case((m.c.suppressed, 1), else_=0)),
            func.sum(case((m.c.suppressed, 0), else_=1)),
        )
        .select_from(m.join(r, r.c.id == m.c.review_id))
        .where(where)
        .group_by(column)
        .order_by(func.count().desc(), column)
    )
    return [
        SuppressedRow(key=str(key), suppressed=int(s or 0), published_anyway=int(p or 0))
        for key, s, p in conn.execute(query)
    ]


def suppressed_by_rule(
    conn: Connection, since: datetime | None = None, repository: str | None = None
) -> list[SuppressedRow]:
    """Per rule: findings memory suppressed, and those published anyway (security, analyzer-backed)."""
    r = schema.reviews
    where = [r.c.recorded_at >= since] if since is not None else []
    where += [r.c.repository == repository] if repository else []
    return _suppressed(conn, schema.remembered.c.rule, and_(true(), *where))


def suppressed_by_repository(conn: Connection, where: ColumnElement[bool] | None = None) -> list[SuppressedRow]:
    """Per repository, of the reviews ``where`` selects (all by default): findings memory suppressed, and those
    published anyway."""
    return _suppressed(conn, schema.reviews.c.repository, true() if where is None else where)


@dataclass(frozen=True)
class Pattern:
    """A rule seen again and again in one repository: how often, in how many changes, where, and examples."""

    rule: str
    title: str
    paths: tuple[str, ...]
    count: int
    changes: int
    examples: tuple[tuple[str, str, str], ...]
    """Up to two (change id, who, how) of the latest, in two different changes."""


def dismissed_patterns(conn: Connection, repository: str, since: datetime) -> list[Pattern]:
    """The repository's dismissals since ``since``, grouped by rule, most dismissed first."""
    d = schema.dismissals
    rows = conn.execute(
        select(d.c.rule, d.c.title, d.c.path, d.c.change_id, d.c.dismissed_by, d.c.how)
        .where(d.c.repository == repository, d.c.dismissed_at >= since)
        .order_by(d.c.dismissed_at.desc(), d.c.review_id.desc())
    ).all()
    return _patterns([tuple(row) for row in rows])


def fixed_patterns(conn: Connection, repository: str, since: datetime) -> list[Pattern]:
    """Findings of the repository that the next review of their change found fixed, grouped by rule."""
    e, r, k, f = schema.earlier_findings, schema.reviews, schema.memory_keys, schema.findings
    later = r.alias("later")
    earlier = (
        select(func.max(r.c.id))
        .where(r.c.repository == later.c.repository, r.c.change_id == later.c.change_id, r.c.id < later.c.id)
        .scalar_subquery()
    )
    rows = conn.execute(
        select(k.c.rule, f.c.title, f.c.path, later.c.change_id)
        .select_from(e.join(later, later.c.id == e.c.review_id))
        .join(k, and_(k.c.review_id == earlier, k.c.fingerprint == e.c.fingerprint))
        .join(f, and_(f.c.review_id == k.c.review_id, f.c.fingerprint == k.c.fingerprint))
        .where(later.c.repository == repository, later.c.recorded_at >= since, e.c.status == "fixed")
        .order_by(later.c.recorded_at.desc(), later.c.id.desc())
    ).all()
    return _patterns([(row.rule, row.title, row.path, row.change_id, "", "fixed") for row in rows])


def _patterns(rows: Sequence[tuple[Any, ...]]) -> list[Pattern]:
    """(rule, title, path, change id, who, how) rows, latest first, grouped by rule."""
    groups: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        groups.setdefault(str(row[0]), []).append(row)
    out: list[Pattern] = []
    for rule, found in groups.items():
        examples: list[tuple[str, str, str]] = []
        for _, _, _, change, who, how in found:
            if len(examples) < 2 and all(change != seen[0] for seen in examples):
                examples.append((str(change), str(who or ""), str(how or "")))
        paths = tuple(sorted({str(row[2]) for row in found}))
        changes = len({row[3] for row in found})
        out.append(Pattern(rule, str(found[0][1]), paths, len(found), changes, tuple(examples)))
    return sorted(out, key=lambda p: (-p.changes, -p.count, p.rule))


def recent_repositories(conn: Connection, since: datetime) -> list[str]:
    """The repositories the store recorded a review of since ``since``."""
    r = schema.reviews
    query = select(r.c.repository).where(r.c.recorded_at >= since, r.c.repository != "").distinct()
    return sorted(str(row[0]) for row in conn.execute(query))


def published_counts(conn: Connection, repository: str, since: datetime) -> dict[str, int]:
    """Per rule, the findings the repository's reviews published since ``since`` (each finding of a merge request
    once, however many of its pushes were reviewed)."""
    k, r = schema.memory_keys, schema.reviews
    each = (
        select(k.c.rule, r.c.change_id, k.c.fingerprint)
        .select_from(k.join(r, r.c.id == k.c.review_id))
        .where(r.c.repository == repository, r.c.recorded_at >= since)
        .distinct()
        .subquery()
    )
    return {str(rule): int(n) for rule, n in conn.execute(select(each.c.rule, func.count()).group_by(each.c.rule))}
