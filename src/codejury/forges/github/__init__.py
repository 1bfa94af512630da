"""GitHub: the pull-request bot (``adapter``: ``pull``, read by ``reader``, published on by ``publisher``),
its REST and GraphQL client (``api``, ``graphql``), the records it reads and writes (``types``), the
check run (``checks``) and which pull request to review (``target``). ``FORGE`` is how the built-in
plugin registers it (``codejury_register_forges``)."""

from __future__ import annotations

from codejury.forges.github.adapter import GitHubPullRequest
from codejury.forges.github.checks import Outcome, check_conclusion
from codejury.forges.github.pull import same_login
from codejury.forges.github.target import (
    URL_SHAPE,
    GitHubTarget,
    github_token,
    is_pull_request_url,
    pull_request_on,
    target_from_env,
    target_from_url,
)
from codejury.forges.registry import forge_kind

FORGE = forge_kind(
    GitHubPullRequest,
    url_noun="GitHub pull request",
    url_shape=URL_SHAPE,
    ci_run="a GitHub pull request workflow (pull_request)",
    claims_url=is_pull_request_url,
    target_from_url=target_from_url,
    target_from_env=target_from_env,
)

__all__ = [
    "FORGE",
    "GitHubPullRequest",
    "GitHubTarget",
    "Outcome",
    "check_conclusion",
    "github_token",
    "is_pull_request_url",
    "pull_request_on",
    "same_login",
    "target_from_env",
    "target_from_url",
]
