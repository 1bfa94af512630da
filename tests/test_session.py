"""One ``Session`` per process: its plugins' registries are read once for all its reviews, and ``/codejury ask``
is set up by it as a review is (the same settings, plugin lifecycle and kill switch)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from codejury.change.types import ChangeSet
from codejury.hookspecs import hookimpl
from codejury.plugin import PostConfigureContext
from codejury.plugins import Plugins, make_plugin_manager
from codejury.session import ReviewFlags, Session

DIFF = "--- a/app.py\n+++ b/app.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n"


class Counting:
    """A plugin that counts how often its registry hook is read, and may stop every review."""

    def __init__(self, stop: str | None = None) -> None:
        self.registrations = 0
        self.stop = stop

    @hookimpl
    def codejury_register_model_kinds(self, register: Callable[..., None]) -> None:
        self.registrations += 1

    @hookimpl
    def codejury_post_configure(self, ctx: PostConfigureContext) -> None:
        if self.stop is not None:
            ctx.stop_review(self.stop)


def _session(plugin: Counting) -> Session:
    pm = make_plugin_manager()
    pm.register(plugin, name="counting")
    return Session(Plugins(pm), warn=lambda _line: None, progress=None)


async def test_a_session_reads_its_plugins_registries_once_for_all_its_reviews(tmp_path: Path) -> None:
    diff = tmp_path / "change.diff"
    diff.write_text(DIFF, encoding="utf-8")
    counting = Counting()
    plans = []
    async with _session(counting) as session:
        for n in (1, 2):
            output = tmp_path / f"plan{n}.json"
            flags = ReviewFlags(diff_file=str(diff), dry_run=True, fmt="json", output=output)
            await session.review({"CODEJURY_RECORD_URL": "none"}, flags)
            plans.append(json.loads(output.read_text(encoding="utf-8")))
    assert [plan["tier"] for plan in plans] == ["trivial", "trivial"]
    assert counting.registrations == 1  # the first review read it; the second used what the session kept


async def test_ask_is_configured_by_the_session_as_a_review_with_its_plugins_stop(tmp_path: Path) -> None:
    counting = Counting(stop="the team paused reviews")
    async with _session(counting) as session:
        configured = await session.configured(
            {"CODEJURY_RECORD_URL": "none"}, ReviewFlags(), ChangeSet(files=()), run_id="chat-1", warn=lambda _l: None
        )
    assert configured.stopped == "the team paused reviews"
    assert configured.options.events.run_id == "chat-1"
