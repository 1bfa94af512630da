"""The tier stage: the risk tier of the kept files (``change.classify``) and the panel it calls for
(``reviewers.roster``), from the run's configuration.
"""

from __future__ import annotations

from collections.abc import Sequence

from codejury.change.classify import classify_tier, is_release_file
from codejury.change.types import FileChange
from codejury.config import ReviewConfig
from codejury.findings import Tier
from codejury.reviewers.roster import select_reviewers


def tier_stage(kept: Sequence[FileChange], config: ReviewConfig) -> tuple[Tier, list[str]]:
    """The tier stage: the risk tier of the kept files and the reviewers it calls for (none when nothing is kept)."""
    if not kept:
        return "trivial", []
    tier = classify_tier(kept)
    names = select_reviewers(
        tier,
        kept,
        config.reviewers,
        release_changed=any(is_release_file(f.path) for f in kept),
        has_custom_rules=bool(config.custom_rules),
        has_agent_instructions=bool(config.repo_instructions),
    )
    return tier, names
