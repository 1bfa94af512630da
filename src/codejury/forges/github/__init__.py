"""GitHub: the pull-request bot (``adapter``), its REST and GraphQL client (``api``, ``graphql``), the
records it reads and writes (``types``), the check run (``checks``) and which pull request to review
(``target``). ``FORGE`` is how the built-in plugin registers it (``codejury_register_forges``)."""

from __future__ import annotations

from functools import partial

from codejury.forges.github.adapter import GitHubPullRequest, same_login
from codejury.forges.github.checks import Outcome, check_conclusion
from codejury.forges.github.target import (
    URL_SHAPE,
    GitHubTarget,
    github_token,
    is_pull_request_url,
    pull_request_on,
    target_from_env,
    target_from_url,
)
from codejury.forges.registry import Env, ForgeKind, Opener, Warn


def _from_url(url: str, env: Env, warn: Warn) -> Opener:
    return partial(GitHubPullRequest, target_from_url(url, env), env=env, warn=warn)


def _from_ci(env: Env, warn: Warn) -> Opener | None:
    target = target_from_env(env)
    return None if target is None else partial(GitHubPullRequest, target, env=env, warn=warn)


FORGE = ForgeKind(
    url_noun="GitHub pull request",
    url_shape=URL_SHAPE,
    ci_run="a GitHub pull request workflow (pull_request)",
    claims_url=is_pull_request_url,
    from_url=_from_url,
    from_ci=_from_ci,
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
