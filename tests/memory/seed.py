"""Dismissals written straight into a store: the review that published a finding, and the re-review that saw a
person with write access dismiss it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from codejury.record.model import DismissalRecord, FindingRecord, MemoryKeyRecord, ReviewRecord
from codejury.record.store import Store
from codejury.record.target import parse_record_url


def remember(
    url: str,
    repository: str,
    change_id: str,
    rule: str,
    shape: str,
    *,
    by: str = "bob",
    how: str = "won't fix",
    rule_version: str = "",
    days_ago: float = 1.0,
    title: str = "Magic number",
    path: str = "pkg/a.py",
) -> None:
    """Record that ``by`` dismissed, in ``change_id`` of ``repository``, a finding of ``rule`` on code of ``shape``."""
    at = datetime.now(UTC) - timedelta(days=days_ago)
    fp = f"{abs(hash((repository, change_id, rule, shape))) % 16**16:016x}"
    found = FindingRecord(
        fingerprint=fp, reviewer="generalist", category="style", severity="suggestion", path=path, start_line=2,
        end_line=2, title=title,
    )  # fmt: skip
    key = MemoryKeyRecord(fingerprint=fp, rule=rule, rule_version=rule_version, shape=shape)
    common = {"repository": repository, "change_id": change_id, "tier": "trivial", "verdict": "approved"}
    store = Store(parse_record_url(url))
    try:
        store.write(ReviewRecord(**common, recorded_at=at - timedelta(hours=1), findings=[found], memory_keys=[key]))
        gone = DismissalRecord(fingerprint=fp, by=by, how=how)
        store.write(ReviewRecord(**common, recorded_at=at, dismissals=[gone]))
    finally:
        store.close()
