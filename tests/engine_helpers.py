"""Build changes and run whole reviews on scripted models (shared by the engine tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from codejury.change.types import ChangeSet
from codejury.config import Settings
from codejury.findings import Plan, Review
from codejury.pipeline import ReviewOptions, review
from codejury.plugins import Plugins
from codejury.record.events import EventLog
from codejury.reviewers.roster import BUILTIN_REVIEWERS
from codejury.testing.changes import AUTH_NEW, AUTH_OLD, DictBase, make_change, unified_diff
from codejury.testing.scripted import ScriptedResolver, Step

__all__ = [
    "AUTH_NEW", "AUTH_OLD", "DictBase", "make_change", "run_review", "scripted_settings", "unified_diff",
]  # fmt: skip


def scripted_settings(**changes: Any) -> Settings:
    """Every reviewer and the coordinator on its own scripted model ('scripted:NAME').

    The analyzers are off unless a test turns them on: a test of the panel scripts every model
    request, and an analyzer hit would add a confirmation request to the owning reviewer's script.
    """
    names = [*BUILTIN_REVIEWERS, "coordinator"]
    return Settings(
        models={"top": "scripted:top", "standard": "scripted:standard", "light": "scripted:light"},
        reviewer_models={n: f"scripted:{n}" for n in names},
        **{"analyzers": False, **changes},
    )


async def run_review(
    change: ChangeSet,
    scripts: Mapping[str, Sequence[Step]],
    *,
    settings: Settings | None = None,
    tools: bool = True,
    dry_run: bool = False,
    break_glass: bool = False,
    plugins: Sequence[str] = (),
    warnings: list[str] | None = None,
    walkthroughs: Mapping[str, Sequence[Step]] | None = None,
) -> tuple[Review | Plan, ScriptedResolver, EventLog]:
    resolver = ScriptedResolver(scripts, tools=tools, walkthroughs=walkthroughs)
    warnings = [] if warnings is None else warnings
    with EventLog(None, run_id="test") as events:
        opts = ReviewOptions(
            settings=settings or scripted_settings(),
            env={},
            events=events,
            warn=warnings.append,
            plugins=Plugins(resolver.plugin_manager(plugins)),  # the scripted models, registered as a plugin
            dry_run=dry_run,
            break_glass=break_glass,
        )
        result = await review(change, opts)
    return result, resolver, events
