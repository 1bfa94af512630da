"""The record stage: the finished review and its events go to each of the caller's recorders.

Recording never blocks or fails a review: each recorder gets at most ``RECORD_TIMEOUT_S``, and
one that raises, times out or cannot write is reported in one warning line (and an event) while
the review goes on.
"""

from __future__ import annotations

import asyncio

from codejury.findings import Review
from codejury.runstate import ReviewRun

RECORD_TIMEOUT_S = 2.0


async def record_stage(run: ReviewRun, review: Review) -> None:
    for recorder in run.options.recorders:
        try:
            await asyncio.wait_for(
                asyncio.to_thread(recorder.record, review, list(run.events.events)), RECORD_TIMEOUT_S
            )
            failed = getattr(recorder, "write_error", None)
            if failed:
                raise OSError(failed)
        except Exception as exc:  # a sink must never fail the review it records
            name = type(recorder).__name__
            why = f"no answer within {RECORD_TIMEOUT_S:g} s" if isinstance(exc, TimeoutError) else str(exc)
            run.options.warn(f"recorder {name} failed, the review was not recorded there: {why}")
            run.events.emit("record_failed", recorder=name, error=why[:300])
