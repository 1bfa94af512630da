"""The record of one finished review: what the store writes and a review service's ingest receives.

``ReviewRecord`` is the one payload: ``record_from_review(review, events)`` builds it from the
finished (already scrubbed) ``Review`` and the run's redacted events, which carry what the review
itself does not: the change's identity (``change``), failbacks (``model_failback``), breaker
transitions (``breaker``), who broke the glass and what became of the last review's findings on a
forge re-review (``published``), the passages that look like instructions to the reviewer
(``injection_suspected``), and the daily-cap slot its admission reserved (``caps_reserved``).
``PAYLOAD_VERSION`` is bumped when a field changes meaning.

Every closed set is typed with the review's own (``Verdict``, ``Tier``, ``Severity``,
``ReviewerStatus``, the breaker's states), so an ingest whose record names anything else is refused
whole. Rows an older codejury stored are read as plain text by ``stats`` and the dashboard, which
show an unknown value as it is (escaped) rather than fail on it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from codejury.findings import Review, ReviewerReport, Severity, Tier, Usage, Verdict
from codejury.fingerprint import unique_fingerprints

PAYLOAD_VERSION = 1
EarlierStatus = Literal["open", "fixed", "dismissed"]
BreakerStateName = Literal["closed", "open", "half_open"]
"""``resilience.breaker.BreakerState``, named here so reading a record never imports the model stack
(a test keeps the two equal)."""
BREAKER_STATES = frozenset(get_args(BreakerStateName))


class ReviewerRun(ReviewerReport):
    """How one reviewer, the coordinator or a verifier ran: model, status, tokens, cost and time, and its role."""

    role: Literal["reviewer", "coordinator"] = "reviewer"


class FindingRecord(BaseModel):
    """One published finding, keyed by its fingerprint (as the forge threads key it)."""

    fingerprint: str
    reviewer: str
    category: str
    severity: Severity
    path: str
    start_line: int
    end_line: int
    title: str
    evidence: list[str] = Field(default_factory=list)
    verified: bool | None = None
    advisory: bool = False


class Failback(BaseModel):
    from_model: str
    to_model: str
    reason: str = ""


class BreakerTransition(BaseModel):
    model: str
    from_state: BreakerStateName
    to_state: BreakerStateName


class EarlierFinding(BaseModel):
    """A finding the previous review of this change published, as this re-review found it."""

    fingerprint: str
    status: EarlierStatus
    """fixed: its lines changed and it is gone; dismissed: a human resolved or declined it; open: still there."""
    disputed: bool = False
    """A human replied that they disagree (the coordinator judged the reply in this review)."""


class InjectionRecord(BaseModel):
    """A passage the review read that looks like instructions to the reviewer (an ``injection_suspected`` event)."""

    source: str = Field(max_length=40)
    place: str = Field(max_length=2000)
    rule: str = Field(max_length=60)
    excerpt: str = Field(default="", max_length=2000)


class MemoryKeyRecord(BaseModel):
    """The keys a published finding is remembered by (``codejury.memory.keys``)."""

    fingerprint: str = Field(max_length=80)
    rule: str = Field(max_length=300)
    rule_version: str = Field(default="", max_length=16)
    shape: str = Field(default="", max_length=16)


class DismissalRecord(BaseModel):
    """A finding of an earlier review of this change that a person with write access dismissed, seen by this one."""

    fingerprint: str = Field(max_length=80)
    by: str = Field(default="", max_length=200)
    how: str = Field(default="", max_length=60)


class RememberedRecord(BaseModel):
    """A finding this review matched to an earlier dismissal (``Review.remembered``)."""

    fingerprint: str = Field(max_length=80)
    rule: str = Field(max_length=300)
    severity: Severity
    path: str
    title: str
    dismissed_in: str = Field(default="", max_length=200)
    suppressed: bool = True


class ReviewRecord(Usage):
    """Everything recorded about one review (the store's rows and the ingest payload): its usage totals, and the
    fields below."""

    payload_version: int = PAYLOAD_VERSION
    uid: str = Field(default_factory=lambda: uuid.uuid4().hex)
    """Unique per review: a retried ingest of the same record is stored once."""
    recorded_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    repository: str = ""
    change_id: str = ""
    head_sha: str = ""
    tier: Tier
    verdict: Verdict
    judged: bool = True
    break_glass: bool = False
    break_glass_by: list[str] = Field(default_factory=list)
    reviewers: list[ReviewerRun] = Field(default_factory=list)
    findings: list[FindingRecord] = Field(default_factory=list)
    dropped: dict[str, int] = Field(default_factory=dict)
    """Findings dropped by reason (failed verification, judged speculative …)."""
    failbacks: list[Failback] = Field(default_factory=list)
    breaker_transitions: list[BreakerTransition] = Field(default_factory=list)
    earlier_findings: list[EarlierFinding] = Field(default_factory=list)
    changed_since: list[str] | None = None
    """Files changed since the previously reviewed head (a forge re-review); None when unknown."""
    suspected_injections: list[InjectionRecord] = Field(default_factory=list)
    """Passages of what the review read that look like instructions to the reviewer (for people to look at)."""
    review: dict[str, Any] = Field(default_factory=dict)
    """The whole review as ``codejury review --format json`` has it, for a dashboard to show."""
    memory_keys: list[MemoryKeyRecord] = Field(default_factory=list)
    """The keys of the published findings (a ``memory`` event), which later dismissals of them are stored by."""
    dismissals: list[DismissalRecord] = Field(default_factory=list)
    """Earlier findings of this change a writer dismissed, as this review saw them (a ``memory`` event)."""
    remembered: list[RememberedRecord] = Field(default_factory=list)
    """Findings matched to an earlier dismissal in the repository: suppressed, or published anyway (security)."""
    slot: str | None = Field(default=None, max_length=64)
    """The daily-cap slot the review's admission reserved in the store (a ``caps_reserved`` event): the
    record replaces it."""


def _run(report: ReviewerReport, role: Literal["reviewer", "coordinator"]) -> ReviewerRun:
    return ReviewerRun(role=role, **report.model_dump())


def _of_type(events: Sequence[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [e for e in events if e.get("type") == kind]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def record_from_review(review: Review, events: Sequence[Mapping[str, Any]]) -> ReviewRecord:
    """The record of ``review``, completed from the run's ``events`` (missing events leave defaults)."""
    change = next(iter(_of_type(events, "change")), {})
    published = next(iter(_of_type(events, "published")), {})
    disputed = {fp for fp in change.get("disputed") or () if isinstance(fp, str)}
    earlier = published.get("earlier") or {}
    runs = [_run(r, "reviewer") for r in review.reviewers]
    if review.coordinator is not None:
        runs.append(_run(review.coordinator, "coordinator"))
    changed = change.get("changed_since")
    return ReviewRecord(
        repository=_text(change.get("repository")),
        change_id=_text(change.get("change_id")),
        head_sha=_text(change.get("head_sha")),
        tier=review.tier,
        verdict=review.verdict,
        judged=review.judged,
        break_glass=review.break_glass,
        break_glass_by=[str(who) for who in published.get("break_glass_by") or ()],
        **review.usage.model_dump(),
        reviewers=runs,
        findings=[
            FindingRecord(fingerprint=fp, **f.model_dump(include=set(FindingRecord.model_fields)))
            for fp, f in zip(unique_fingerprints(review.findings), review.findings, strict=True)
        ],
        dropped=dict(review.dropped_findings),
        failbacks=[
            Failback(from_model=str(e.get("from_model")), to_model=str(e.get("to_model")), reason=str(e.get("reason")))
            for e in _of_type(events, "model_failback")
        ],
        breaker_transitions=[
            BreakerTransition(model=str(e.get("model")), from_state=e["from_state"], to_state=e["to_state"])
            for e in _of_type(events, "breaker")
            if e.get("from_state") in BREAKER_STATES and e.get("to_state") in BREAKER_STATES
        ],
        earlier_findings=[
            EarlierFinding(fingerprint=fp, status=status, disputed=fp in disputed)
            for fp, status in sorted(earlier.items())
            if status in ("open", "fixed", "dismissed")
        ],
        changed_since=[str(p) for p in changed] if isinstance(changed, list) else None,
        suspected_injections=[
            InjectionRecord(
                source=str(e.get("source", ""))[:40],
                place=str(e.get("place", ""))[:2000],
                rule=str(e.get("rule", ""))[:60],
                excerpt=str(e.get("excerpt", ""))[:2000],
            )  # fmt: skip
            for e in _of_type(events, "injection_suspected")
        ],
        review=review.model_dump(mode="json", exclude={"replies"}),
        **_memory(review, events),
        slot=_slot(events),
    )


def _memory(review: Review, events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``memory_keys``, ``dismissals`` and ``remembered`` from the run's ``memory`` event and the review."""
    memory = next(iter(_of_type(events, "memory")), {})
    keys = [k for k in memory.get("keys") or () if isinstance(k, Mapping)]
    gone = [d for d in memory.get("dismissals") or () if isinstance(d, Mapping)]
    matched = {str(m.get("id")): m for m in memory.get("remembered") or () if isinstance(m, Mapping)}
    return {
        "memory_keys": [MemoryKeyRecord.model_validate(dict(k)) for k in keys],
        "dismissals": [DismissalRecord.model_validate(dict(d)) for d in gone],
        "remembered": [
            RememberedRecord(
                fingerprint=str(matched.get(r.finding.id, {}).get("fingerprint", ""))[:80],
                rule=str(matched.get(r.finding.id, {}).get("rule", ""))[:300],
                severity=r.finding.severity,
                path=r.finding.path,
                title=r.finding.title,
                dismissed_in=r.dismissed_in[:200],
                suppressed=r.suppressed,
            )  # fmt: skip
            for r in review.remembered
        ],
    }


def _slot(events: Sequence[Mapping[str, Any]]) -> str | None:
    reserved = next(iter(_of_type(events, "caps_reserved")), {})
    slot = reserved.get("slot")
    return slot if isinstance(slot, str) and 0 < len(slot) <= 64 else None
