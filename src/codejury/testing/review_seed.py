"""Records for the store's tests and the stats benchmark: hand-made reviews with known numbers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from codejury.findings import Finding, Review, ReviewerReport, Usage
from codejury.record.model import ReviewRecord, record_from_review
from codejury.record.store import Store
from codejury.record.target import parse_record_url

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def finding(
    reviewer: str = "security",
    path: str = "app/db.py",
    line: int = 10,
    *,
    title: str = "SQL built from a string",
    category: str = "sql-injection",
    severity: str = "critical",
    evidence: Sequence[str] = (),
    verified: bool | None = None,
) -> Finding:
    return Finding(
        id=f"{reviewer}-{line}",
        reviewer=reviewer,
        category=category,
        severity=severity,  # type: ignore[arg-type]
        path=path,
        start_line=line,
        end_line=line + 1,
        title=title,
        body="Use a parameterised query.",
        confidence=0.9,
        evidence=list(evidence),
        verified=verified,
    )


def reviewer(name: str, model: str, *, status: str = "ok", tokens: int = 1000, cache_read: int = 0,
             cache_write: int = 0, cost: float = 0.01, duration: float = 5.0) -> ReviewerReport:  # fmt: skip
    return ReviewerReport(
        name=name, model=model, status=status,  # type: ignore[arg-type]
        error="HTTP 529 overloaded" if status == "failed" else None, requests=2, input_tokens=tokens,
        output_tokens=tokens // 10, cache_read_tokens=cache_read, cache_write_tokens=cache_write, cost_usd=cost,
        duration_s=duration,
    )  # fmt: skip


def review(
    *,
    tier: str = "full",
    verdict: str = "requested_changes",
    findings: Sequence[Finding] = (),
    reviewers: Sequence[ReviewerReport] = (),
    cost: float = 0.05,
    duration: float = 30.0,
    break_glass: bool = False,
    dropped: dict[str, int] | None = None,
) -> Review:
    return Review(
        verdict=verdict,  # type: ignore[arg-type]
        tier=tier,  # type: ignore[arg-type]
        summary="summary",
        findings=list(findings),
        reviewers=list(reviewers),
        coordinator=reviewer("coordinator", "anthropic:claude-opus-4-6", tokens=500, cost=0.0),
        usage=Usage(requests=3, input_tokens=2000, output_tokens=200, cost_usd=cost, duration_s=duration),
        break_glass=break_glass,
        dropped_findings=dropped or {},
    )


def events(
    *,
    repository: str = "gitlab.example.com/shop/api",
    change_id: str = "!7",
    head_sha: str = "a" * 40,
    changed_since: list[str] | None = None,
    earlier: dict[str, str] | None = None,
    disputed: Sequence[str] = (),
    break_glass_by: Sequence[str] = (),
    failbacks: int = 0,
    breaker: bool = False,
) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = [
        {
            "type": "change",
            "repository": repository,
            "change_id": change_id,
            "head_sha": head_sha,
            "changed_since": changed_since,
            "disputed": list(disputed),
        },  # fmt: skip
    ]
    found += [
        {
            "type": "model_failback",
            "from_model": "anthropic:claude-sonnet-4-5",
            "to_model": "anthropic:claude-sonnet-4",
            "reason": "529 overloaded",
        }  # fmt: skip
        for _ in range(failbacks)
    ]
    if breaker:
        found.append(
            {"type": "breaker", "model": "anthropic:claude-sonnet-4-5", "from_state": "closed", "to_state": "open"}
        )
    if earlier is not None or break_glass_by:
        found.append({"type": "published", "forge": "gitlab", "break_glass_by": list(break_glass_by),
                      "earlier": earlier or {}})  # fmt: skip
    return found


def record(at: datetime = T0, *, review_kwargs: dict[str, Any] | None = None, **event_kwargs: Any) -> ReviewRecord:
    built = record_from_review(review(**(review_kwargs or {})), events(**event_kwargs))
    return built.model_copy(update={"recorded_at": at})


def hours(n: float) -> timedelta:
    return timedelta(hours=n)


def write_reviews(url: str, repository: str, n: int, *, at: datetime | None = None, cost: float = 0.05) -> None:
    """``n`` reviews of ``repository`` (at ``at``, now by default; each costing ``cost``) written to store ``url``."""
    store = Store(parse_record_url(url))
    try:
        for _ in range(n):
            store.write(record(at or datetime.now(UTC), repository=repository, review_kwargs={"cost": cost}))
    finally:
        store.close()
