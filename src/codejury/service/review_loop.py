"""The event loop reviews run on: its own thread, apart from the loop that answers webhooks.

A review does real work between its awaits: git and analyzers, rendering, JSON, SQLite writes.
On the loop that serves HTTP, each of those steps holds every webhook answer behind it (measured
with ``benchmarks/service.py``: the loop stalled up to 300 ms under a burst of reviews). So the
service's and the worker's jobs run on one ``ReviewLoop``: a second event loop in a thread of its
own, where they still run concurrently with each other (the queue decides how many), and the
serving loop is left with signature checks, deduplication and queueing.

One loop for every review, not one per review: the SDK clients of the cached models
(``codejury.models.registry``) keep connection pools that belong to the loop that opened them,
so they are shared by every review on this loop and closed on it by ``close``.

``freeze_start_up_heap`` is the other half of a responsive ``codejury serve``: a full pass of
Python's cycle collector stops every thread, and once a review has imported its libraries the
heap holds about 250,000 objects, whose full pass took 140-220 ms (gen-2 pauses measured under
the benchmark, the longest stalls of the webhook loop). Importing the review path at start-up and
freezing it (``gc.freeze``) takes those long-lived objects out of every later pass.

``prepare_serving_process`` also hands the interpreter lock between threads every millisecond
(``SWITCH_INTERVAL_S``) instead of Python's 5 ms: the serving loop gives the lock up at each socket
read and write and then waits for the review thread's turn to end, several times per answer; with
1 ms its answers wait less behind the reviews running beside it (``benchmarks/service.py``, 500
deliveries in bursts of 25, eleven runs each way taken in turn on 2 cores: webhook p99 median 69.4 ms
with 5 ms, 55.5 ms with 1 ms, lower in 10 of the 11 pairs; p50 14 to 21 ms either way).

``run`` is awaited on the caller's loop; cancelling it cancels the review on the review loop (a
queue that stops leaves the job to run again at its next start). ``home`` runs a coroutine back
on the caller's loop, for what belongs there (a queue's submit, bound to its own connections).
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
CLOSE_TIMEOUT_S = 10.0
REVIEW_PATH_MODULES = ("codejury.cli", "codejury.pipeline", "codejury.service.chat_jobs", "pydantic_ai")
"""What a review (or chat job) imports on first use: imported by ``freeze_start_up_heap`` up front."""


SWITCH_INTERVAL_S = 0.001
"""How long a thread holds the interpreter lock before another may take it, in ``codejury serve`` (Python's default:
0.005)."""


def prepare_serving_process() -> None:
    """Start-up of ``codejury serve``: the review path imported and frozen out of later collections, and the
    interpreter lock handed between threads every ``SWITCH_INTERVAL_S`` (the module's docstring says why)."""
    freeze_start_up_heap()
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def freeze_start_up_heap() -> None:
    """Import the review path, collect, and freeze what is alive: later full collections skip it."""
    for name in REVIEW_PATH_MODULES:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()


class ReviewLoop:
    """An event loop in a daemon thread, started on first use, for the reviews of one process."""

    def __init__(self, name: str = "codejury-reviews") -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    try:
                        loop.run_forever()
                    finally:
                        loop.close()

                self._thread = threading.Thread(target=serve, name=self.name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    async def run(self, job: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """The result of ``job()`` run on the review loop; cancelling this cancels it there."""
        loop = self._started()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(job(), loop))

    @staticmethod
    async def home(loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, T]) -> T:
        """``work`` run on ``loop`` (the caller's), awaited from the review loop."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, loop))

    async def close(self, cleanup: Callable[[], Coroutine[Any, Any, None]] | None = None) -> None:
        """Cancel the reviews still running, run ``cleanup`` on the review loop (close its clients), stop it."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return

        async def wind_down() -> None:
            current = asyncio.current_task()
            left = [t for t in asyncio.all_tasks() if t is not current]
            for task in left:
                task.cancel()
            await asyncio.gather(*left, return_exceptions=True)
            if cleanup is not None:
                await cleanup()

        try:
            await asyncio.wait_for(
                asyncio.wrap_future(asyncio.run_coroutine_threadsafe(wind_down(), loop)), CLOSE_TIMEOUT_S
            )
        finally:
            loop.call_soon_threadsafe(loop.stop)
            await asyncio.to_thread(thread.join, CLOSE_TIMEOUT_S)
