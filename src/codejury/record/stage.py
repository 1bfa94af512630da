"""The record stage: the finished review goes to each of the caller's recorders.

Recording never blocks or fails a review: a recorder that raises is reported in one warning
line and the review goes on (the event log says which recorder failed).
"""

from __future__ import annotations

from codejury.findings import Review
from codejury.runstate import ReviewRun


async def record_stage(run: ReviewRun, review: Review) -> None:
    for recorder in run.options.recorders:
        try:
            await recorder.record(review, run.events)
        except Exception as exc:  # a sink must never fail the review it records
            name = type(recorder).__name__
            run.options.warn(f"recorder {name} failed, the review was not recorded there: {exc}")
            run.events.emit("record_failed", recorder=name, error=str(exc)[:300])
