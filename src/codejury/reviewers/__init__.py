"""The reviewer roster: packaged prompts, repository reviewers, and who runs for each tier."""

from __future__ import annotations

from codejury.reviewers.roster import (
    ALL_TOOLS,
    BUILTIN_REVIEWERS,
    ReviewerSpec,
    coordinator_prompt,
    load_builtin_reviewers,
    load_custom_rules,
    load_repo_instructions,
    load_repo_reviewers,
    parse_reviewer_file,
    select_reviewers,
    shared_rules,
)

__all__ = [
    "ALL_TOOLS",
    "BUILTIN_REVIEWERS",
    "ReviewerSpec",
    "coordinator_prompt",
    "load_builtin_reviewers",
    "load_custom_rules",
    "load_repo_instructions",
    "load_repo_reviewers",
    "parse_reviewer_file",
    "select_reviewers",
    "shared_rules",
]
