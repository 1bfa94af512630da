"""Reviews run on a loop of their own: a review's blocking work never holds the loop that answers webhooks."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading

import pytest

from codejury.service.review_loop import SWITCH_INTERVAL_S, ReviewLoop, prepare_serving_process


async def test_a_blocking_review_leaves_the_serving_loop_free() -> None:
    reviews = ReviewLoop()
    blocking, released = threading.Event(), threading.Event()

    async def review() -> tuple[str, bool]:
        blocking.set()
        # A review's synchronous work, held until the serving loop has run ten times meanwhile: on a loop it
        # blocked, that could never happen, and the review would give up after 30 s.
        return threading.current_thread().name, released.wait(30)

    try:
        job = asyncio.create_task(reviews.run(review))
        ticks = 0
        while not job.done():  # what the webhook routes would do meanwhile
            await asyncio.sleep(0.01)
            if blocking.is_set() and not released.is_set():
                ticks += 1
                if ticks == 10:
                    released.set()
        assert await job == ("codejury-reviews", True)  # it ran on the review loop's thread, and never stalled this one
        assert ticks == 10
    finally:
        released.set()
        await reviews.close()


async def test_cancelling_a_job_cancels_its_review_and_close_runs_the_cleanup_on_the_review_loop() -> None:
    reviews = ReviewLoop()
    started, cancelled = threading.Event(), threading.Event()
    cleaned: list[str] = []

    async def review() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def cleanup() -> None:
        cleaned.append(threading.current_thread().name)

    job = asyncio.create_task(reviews.run(review))
    await asyncio.to_thread(started.wait, 5)
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert await asyncio.to_thread(cancelled.wait, 5)  # the review itself was cancelled, not left running
    await reviews.close(cleanup)
    assert cleaned == ["codejury-reviews"]


async def test_home_runs_work_on_the_callers_loop() -> None:
    reviews = ReviewLoop()
    home = asyncio.get_running_loop()

    async def on_home() -> bool:
        return asyncio.get_running_loop() is home

    async def review() -> bool:
        assert asyncio.get_running_loop() is not home
        return await ReviewLoop.home(home, on_home())

    try:
        assert await reviews.run(review) is True
    finally:
        await reviews.close()


def test_the_serving_process_hands_the_interpreter_to_the_webhook_loop_every_millisecond() -> None:
    # codejury serve's start-up: the review path's long-lived objects out of the collector's passes, and a thread
    # running a review gives the interpreter lock up after 1 ms (Python's default: 5 ms), so a webhook answer
    # that waits for it at each socket read and write waits less.
    default = sys.getswitchinterval()
    try:
        prepare_serving_process()
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S) and default > SWITCH_INTERVAL_S
        assert gc.get_freeze_count() > 0
    finally:
        sys.setswitchinterval(default)
        gc.unfreeze()
