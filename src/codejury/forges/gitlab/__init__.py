"""GitLab: the merge-request bot (``adapter``), its REST client (``api``), the records it reads and
the position JSON of an inline comment (``types``), and which merge request to review (``target``).
``FORGE`` is how the built-in plugin registers it (``codejury_register_forges``)."""

from __future__ import annotations

from functools import partial

from codejury.forges.gitlab.adapter import GitLabMergeRequest
from codejury.forges.gitlab.target import (
    URL_SHAPE,
    GitLabTarget,
    gitlab_token,
    is_merge_request_url,
    merge_request_on,
    target_from_env,
    target_from_url,
)
from codejury.forges.registry import Env, ForgeKind, Opener, Warn


def _from_url(url: str, env: Env, warn: Warn) -> Opener:
    return partial(GitLabMergeRequest, target_from_url(url, env), env=env, warn=warn)


def _from_ci(env: Env, warn: Warn) -> Opener | None:
    target = target_from_env(env)
    return None if target is None else partial(GitLabMergeRequest, target, env=env, warn=warn)


FORGE = ForgeKind(
    url_noun="GitLab merge request",
    url_shape=URL_SHAPE,
    ci_run="a GitLab merge request pipeline (merge_request_event)",
    claims_url=is_merge_request_url,
    from_url=_from_url,
    from_ci=_from_ci,
)

__all__ = [
    "FORGE",
    "GitLabMergeRequest",
    "GitLabTarget",
    "gitlab_token",
    "is_merge_request_url",
    "merge_request_on",
    "target_from_env",
    "target_from_url",
]
