"""GitLab: the merge-request bot (``adapter``: ``merge_request``, read by ``reader``, published on by
``publisher``), its REST client (``api``), the records it reads and the position JSON of an inline
comment (``types``), and which merge request to review (``target``).
``FORGE`` is how the built-in plugin registers it (``codejury_register_forges``)."""

from __future__ import annotations

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
from codejury.forges.registry import forge_kind

FORGE = forge_kind(
    GitLabMergeRequest,
    url_noun="GitLab merge request",
    url_shape=URL_SHAPE,
    ci_run="a GitLab merge request pipeline (merge_request_event)",
    claims_url=is_merge_request_url,
    target_from_url=target_from_url,
    target_from_env=target_from_env,
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
