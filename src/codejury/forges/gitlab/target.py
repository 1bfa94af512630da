"""Which GitLab merge request to review: from its URL, or from the merge request pipeline this is.

``GitLabTarget``: the API URL, project, MR iid and token (``CODEJURY_GITLAB_TOKEN`` only), from
an MR URL (``target_from_url``; ``is_merge_request_url`` says whether a URL has that shape) or a
merge request pipeline's variables (``target_from_env``). A URL only picks the merge request: it
must be on the configured GitLab (``codejury.forges.hosts``), whose API gets the token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from codejury.errors import InputError
from codejury.forges.gitlab.api import TOKEN_ENV
from codejury.forges.hosts import ForgeInstance, gitlab_instance, has_page_shape

URL_SHAPE = "https://HOST/GROUP/PROJECT/-/merge_requests/N"
_MR_URL = re.compile(r"^(?P<project>.+?)/-/merge_requests/(?P<iid>\d+)(?:/.*)?$")


@dataclass(frozen=True)
class GitLabTarget:
    """One merge request on one GitLab, and the token to act there (never printed)."""

    api_url: str
    project: int | str
    iid: int
    token: str = field(repr=False)
    in_ci: bool = False


def gitlab_token(env: Mapping[str, str]) -> str:
    token = env.get(TOKEN_ENV, "").strip()
    if not token:
        raise InputError(
            f"{TOKEN_ENV} is not set: create a project access token (api scope, Developer role) "
            "and put it in that variable"
        )
    return token


def is_merge_request_url(url: str) -> bool:
    """Whether ``url`` has the shape of a GitLab merge request's page."""
    return has_page_shape(url, _MR_URL)


def merge_request_on(instance: ForgeInstance, url: str) -> tuple[str, int]:
    """``(project path, iid)`` of a merge request URL on ``instance``; ``InputError`` for another shape or host."""
    match = instance.page(url, _MR_URL, "GitLab merge request", URL_SHAPE)
    return match["project"], int(match["iid"])


def target_from_url(url: str, env: Mapping[str, str]) -> GitLabTarget:
    """``https://host/group/sub/project/-/merge_requests/42`` on the configured GitLab → its API,
    ``group/sub/project``."""
    instance = gitlab_instance(env)
    project, iid = merge_request_on(instance, url)
    return GitLabTarget(instance.api_url, project, iid, gitlab_token(env))


def target_from_env(env: Mapping[str, str]) -> GitLabTarget | None:
    """The MR of a GitLab merge request pipeline, or None when this is not one."""
    if env.get("CI_PIPELINE_SOURCE") != "merge_request_event":
        return None
    api_url, project, iid = (
        env.get(k, "") for k in ("CI_API_V4_URL", "CI_MERGE_REQUEST_PROJECT_ID", "CI_MERGE_REQUEST_IID")
    )
    if not (api_url and project and iid.isdigit()):
        raise InputError(
            "a merge request pipeline without CI_API_V4_URL, CI_MERGE_REQUEST_PROJECT_ID or CI_MERGE_REQUEST_IID"
        )
    ref: int | str = int(project) if project.isdigit() else project
    return GitLabTarget(api_url, ref, int(iid), gitlab_token(env), in_ci=True)
