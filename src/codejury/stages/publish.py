"""The publish stage: the finished review goes to each of the caller's publishers, in order.

A review that failed (no reviewer succeeded) is published as a failure note, never as an approval.
"""

from __future__ import annotations

from codejury.findings import Plan, Review
from codejury.runstate import ReviewRun


async def publish_stage(run: ReviewRun, result: Review | Plan) -> None:
    for publisher in run.options.publishers:
        await publisher.publish(result)


async def publish_failure_stage(run: ReviewRun, reason: str) -> None:
    for publisher in run.options.publishers:
        await publisher.publish_failure(reason)
