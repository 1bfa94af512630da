"""The dashboard's table by repository counts the findings memory did not publish again, per repository."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html import unescape

from codejury.dashboard.page import dashboard_data, render_dashboard
from codejury.record.model import RememberedRecord, ReviewRecord
from codejury.record.store import Store
from codejury.record.target import parse_record_url

NOW = datetime(2026, 11, 24, 12, tzinfo=UTC)


def _remembered(suppressed: bool) -> RememberedRecord:
    return RememberedRecord(
        fingerprint="f", rule="generalist:magic number", severity="suggestion", path="a.py", title="Magic number",
        suppressed=suppressed,
    )  # fmt: skip


def test_the_repository_table_counts_what_memory_suppressed(store_url: str) -> None:
    store = Store(parse_record_url(store_url))
    at = NOW - timedelta(days=1)
    common = {"tier": "lite", "verdict": "approved", "recorded_at": at}
    store.write(ReviewRecord(repository="host/acme/a", change_id="!1", remembered=[_remembered(True)] * 2, **common))
    store.write(ReviewRecord(repository="host/acme/a", change_id="!2", remembered=[_remembered(False)], **common))
    store.write(ReviewRecord(repository="host/acme/b", change_id="!1", **common))
    old = {**common, "recorded_at": NOW - timedelta(days=90)}
    store.write(ReviewRecord(repository="host/acme/b", change_id="!2", remembered=[_remembered(True)], **old))
    rows = {row.repository: row.suppressed for row in dashboard_data(store, now=NOW).repositories}
    assert rows == {"host/acme/a": 2, "host/acme/b": 1}
    month = dashboard_data(store, since=NOW - timedelta(days=30), now=NOW).repositories
    assert {row.repository: row.suppressed for row in month} == {"host/acme/a": 2, "host/acme/b": 0}
    page = unescape(render_dashboard(store, now=NOW))
    store.close()
    table = page[page.index('<table class="repositories">') :]
    assert '<th class="n">suppressed</th>' in table[: table.index("</thead>")]
    assert "<code>host/acme/a</code>" in table and '<td class="n">2</td>' in table[: table.index("</tbody>")]
