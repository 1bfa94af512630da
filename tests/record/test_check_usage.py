"""The grounding stage's checks are recorded with the time and tokens they took, so that the stats and
the dashboard show where a review's time goes."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from codejury.findings import Review
from codejury.record import schema
from codejury.record.model import record_from_review
from codejury.record.stats import compute_stats
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from codejury.testing.scripted import Final, Raw, Sleep, Step, finding
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings
from tests.timing import FOREVER, limit

PATH = "app/auth/users.py"
CHECK_S = 0.3


async def test_a_verification_call_is_recorded_with_its_wall_time_and_tokens(tmp_path: Path) -> None:
    claim = finding(PATH, 10, "SQL injection in find_user", severity="critical", category="security")
    verdict = Raw({"quote": "query = ...", "holds": True, "line": 10})
    scripts: dict[str, list[Step]] = {
        "security": [Final([claim]), Sleep(CHECK_S, verdict)],
        "coordinator": [Raw({"decisions": []})],
    }
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    review, _, events = await run_review(change, scripts, settings=scripted_settings(weak_models=("scripted:*",)))
    assert isinstance(review, Review)
    [check] = [r for r in review.reviewers if r.name.endswith(":check")]
    assert check.name == "verifier:check" and check.model == "scripted:security"
    assert CHECK_S <= check.duration_s < limit(CHECK_S, hung_s=FOREVER)
    assert check.requests == 1 and check.input_tokens > 0 and check.output_tokens > 0

    store = Store(parse_record_url(f"sqlite:///{tmp_path}/reviews.sqlite3"))
    try:
        store.write(record_from_review(review, events.events))
        with store.connect() as conn:
            runs = conn.execute(select(schema.reviewer_runs).where(schema.reviewer_runs.c.name == "verifier:check"))
            [stored] = runs.all()
            stats = compute_stats(conn)
    finally:
        store.close()
    assert stored.duration_s == check.duration_s >= CHECK_S
    [row] = [r for r in stats.tokens_by_model.rows if r.model == "scripted:security"]
    assert row.input_tokens >= check.input_tokens  # the check's tokens count toward its model
