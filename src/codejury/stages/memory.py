"""The memory stage: findings that match a writer's earlier dismissal in the same repository are not published as new.

Between the judge and the verdict: each finding's keys (``codejury.memory.keys``) are looked up in the review store
in one query (``codejury.record.memory.dismissals_for``); a finding whose rule, rule version and code shape match a
dismissal in another change of the repository, younger than ``[memory] max_age_days``, leaves the published
findings for ``Review.remembered``. A security finding an analyzer backs stays published, marked as dismissed
before, and withholds approval until a writer dismisses it again. A store that cannot be read leaves every finding
published, and the review's notes say that memory was not consulted. The keys of what is published and the
dismissals this review saw on its forge go to the ``memory`` event, which the store records.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from codejury.change.types import RESOLVED_BY_WRITER
from codejury.findings import Finding, Remembered
from codejury.fingerprint import unique_fingerprints
from codejury.memory.keys import MemoryKey, digest, memory_keys, security_backed
from codejury.record.memory import PastDismissal, dismissals_for
from codejury.record.target import parse_record_url
from codejury.runstate import ReviewRun
from codejury.stages.judge import Judgement

LOOKUP_TIMEOUT_S = 5.0
"""The most one lookup may take, connecting included (2 s to connect, 2 s a statement)."""
NOT_CONSULTED = "memory was not consulted"


async def memory_stage(run: ReviewRun, judgement: Judgement) -> tuple[Judgement, list[Remembered]]:
    """``judgement`` without the findings memory suppresses (its notes say when memory could not be read), and
    every finding matched to a dismissal."""
    settings = run.settings
    findings = list(judgement.findings)
    versions = {name: digest(spec.prompt, 8) for name, spec in run.config.reviewers.items()}
    keys = memory_keys(findings, run.change.files, versions)
    found: list[PastDismissal] = []
    unread: str | None = None
    if settings.memory.enabled:
        found, unread = await _lookup(run, keys)
    previous = run.change.meta.previous
    here = {p.fingerprint.split("-")[0] for p in previous.dismissed} if previous is not None else set()
    # Dismissed on this change already: the forge's own bookkeeping (and a security hold's release) decides.
    matched = {i: past for i, past in _match(keys, found, run.change.meta.change_id).items() if i not in here}
    kept: list[Finding] = []
    remembered: list[Remembered] = []
    kept_keys: list[MemoryKey] = []
    for finding, key in zip(findings, keys, strict=True):
        past = matched.get(key.fingerprint)
        if past is None:
            kept.append(finding)
            kept_keys.append(key)
            continue
        anyway = security_backed(finding)
        shown = finding.model_copy(update={"withholds_approval": True}) if anyway else finding
        remembered.append(_remembered(shown, past, suppressed=not anyway))
        if anyway:
            kept.append(shown)
            kept_keys.append(key)
    notes = [*judgement.notes, *([f"{NOT_CONSULTED}: {unread}"] if unread else [])]
    if unread:
        run.options.warn(f"{NOT_CONSULTED}: {unread}")
    keys_by_id = {f.id: k for f, k in zip(findings, keys, strict=True)}
    consulted = settings.memory.enabled and unread is None
    _emit(run, judgement, kept, kept_keys, remembered, keys_by_id, consulted=consulted)
    return replace(judgement, findings=kept, notes=notes), remembered


async def _lookup(run: ReviewRun, keys: Sequence[MemoryKey]) -> tuple[list[PastDismissal], str | None]:
    """The dismissals matching ``keys`` in the review's repository, and why the store could not be read (or None)."""
    pairs = [(k.rule, k.shape) for k in keys if k.shape]
    repository = run.change.meta.repository
    if not pairs or not repository:
        return [], None
    try:
        target = parse_record_url(run.settings.record_url)
    except ValueError as exc:
        return [], f"record.url: {exc}"
    if target.kind == "none":
        return [], None  # nothing is recorded, so nothing is remembered: the setting says so
    if target.kind == "service":
        return [], f"{target.shown} is a review service's ingest URL, which is not read from here"
    since = datetime.now(UTC).replace(tzinfo=None) - timedelta(days=run.settings.memory.max_age_days)
    try:
        return await asyncio.wait_for(
            asyncio.to_thread(_read, target, repository, pairs, since), LOOKUP_TIMEOUT_S
        ), None
    except TimeoutError:
        return [], f"the store {target.shown} did not answer within {LOOKUP_TIMEOUT_S:g} s"
    except Exception as exc:  # noqa: BLE001 - a store that cannot be read never fails the review
        return [], str(exc) or type(exc).__name__


def _read(target: object, repository: str, pairs: list[tuple[str, str]], since: datetime) -> list[PastDismissal]:
    from codejury.record.store import Store
    from codejury.record.target import RecordTarget

    assert isinstance(target, RecordTarget)
    store = Store(target, connect_timeout_s=2.0, statement_timeout_s=2.0)
    try:
        if not store.exists():
            return []
        with store.connect() as conn:
            return dismissals_for(conn, repository, pairs, since)
    finally:
        store.close()


def _match(keys: Sequence[MemoryKey], found: Sequence[PastDismissal], change_id: str) -> dict[str, PastDismissal]:
    """Each finding's latest dismissal in another change with its rule, rule version and shape (by fingerprint)."""
    latest: dict[tuple[str, str, str], PastDismissal] = {}
    for past in found:  # latest first
        if past.change_id != change_id:
            latest.setdefault((past.rule, past.rule_version, past.shape), past)
    out: dict[str, PastDismissal] = {}
    for key in keys:
        hit = latest.get((key.rule, key.rule_version, key.shape)) if key.shape else None
        if hit is not None:
            out[key.fingerprint] = hit
    return out


def _remembered(finding: Finding, past: PastDismissal, *, suppressed: bool) -> Remembered:
    return Remembered(
        finding=finding, dismissed_in=past.change_id, dismissed_by=past.dismissed_by, how=past.how,
        dismissed_at=past.dismissed_at.date().isoformat(), suppressed=suppressed,
    )  # fmt: skip


def seen_dismissals(run: ReviewRun, judgement: Judgement) -> list[dict[str, str]]:
    """The earlier findings of this change that a person with write access dismissed, as this review saw them:
    a ``won't fix`` reply or a thread they resolved (the forge's earlier state), a dispute the coordinator accepted."""
    out: dict[str, dict[str, str]] = {}
    previous = run.change.meta.previous
    for prior in previous.dismissed if previous is not None else ():
        if prior.fingerprint and prior.why.startswith("reply by "):
            out[prior.fingerprint] = {"fingerprint": prior.fingerprint, "by": prior.why[9:], "how": "won't fix"}
        elif prior.fingerprint and prior.why == RESOLVED_BY_WRITER:
            out[prior.fingerprint] = {"fingerprint": prior.fingerprint, "by": "", "how": "resolved"}
    disputes = {d.thread_id: d for d in run.options.disputes}
    for reply in judgement.replies:
        dispute = disputes.get(reply.thread_id)
        if reply.decision == "resolve" and dispute is not None:
            out[dispute.fingerprint] = {
                "fingerprint": dispute.fingerprint,
                "by": dispute.author,
                "how": "dispute accepted",
            }
    return [{**d, "by": d["by"][:200]} for d in out.values()]


def _emit(
    run: ReviewRun,
    judgement: Judgement,
    kept: Sequence[Finding],
    kept_keys: Sequence[MemoryKey],
    remembered: Sequence[Remembered],
    keys_by_id: dict[str, MemoryKey],
    *,
    consulted: bool,
) -> None:
    run.events.emit(
        "memory",
        consulted=consulted,
        suppressed=sum(1 for r in remembered if r.suppressed),
        published_anyway=sum(1 for r in remembered if not r.suppressed),
        keys=[
            {"fingerprint": fp, "rule": k.rule, "rule_version": k.rule_version, "shape": k.shape}
            for fp, k in zip(unique_fingerprints(kept), kept_keys, strict=True)
        ],
        remembered=[
            {"id": r.finding.id, "fingerprint": k.fingerprint, "rule": k.rule}
            for r in remembered
            if (k := keys_by_id.get(r.finding.id)) is not None
        ],
        dismissals=seen_dismissals(run, judgement),
    )
