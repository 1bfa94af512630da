"""Which GitHub pull request to review: from its URL, or from the GitHub Actions run this is.

``GitHubTarget``: the REST and GraphQL URLs, repository, PR number and token
(``CODEJURY_GITHUB_TOKEN``, else ``GITHUB_TOKEN``), from a PR URL (``target_from_url``: the URL
only picks the pull request; it must be on the configured GitHub, ``codejury.forges.hosts``, whose
API gets the token) or a GitHub Actions ``pull_request`` / ``pull_request_target`` run
(``target_from_env``). A ``pull_request`` run from a fork gets a read-only token: the target
says so and nothing is posted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codejury.errors import InputError
from codejury.forges.github.api import ACTIONS_BOT_LOGIN, DEFAULT_API_URL
from codejury.forges.hosts import ForgeInstance, github_instance, has_page_shape

TOKEN_ENVS = ("CODEJURY_GITHUB_TOKEN", "GITHUB_TOKEN")
TOKEN_HINT = "CODEJURY_GITHUB_TOKEN (or GITHUB_TOKEN)"
BOT_LOGIN_ENV = "CODEJURY_GITHUB_BOT_LOGIN"
PR_EVENTS = ("pull_request", "pull_request_target")
FORK_REASON = "this pull_request run comes from a fork, whose token is read-only"
URL_SHAPE = "https://HOST/OWNER/REPO/pull/N"
_PR_PATH = re.compile(r"^(?P<repo>[^/]+/[^/]+)/pull/(?P<number>\d+)(?:/.*)?$")


@dataclass(frozen=True)
class GitHubTarget:
    """One pull request on one GitHub, and the token to act there (never printed)."""

    api_url: str
    graphql_url: str
    repo: str
    number: int
    token: str = field(repr=False)
    in_ci: bool = False
    read_only: str | None = None
    """Why the token cannot write (a fork's ``pull_request`` run), or None."""
    bot_login: str | None = None


def github_token(env: Mapping[str, str]) -> tuple[str, str]:
    """``(token, variable)``: ``CODEJURY_GITHUB_TOKEN`` first, else the workflow's ``GITHUB_TOKEN``."""
    for name in TOKEN_ENVS:
        token = env.get(name, "").strip()
        if token:
            return token, name
    raise InputError(
        "CODEJURY_GITHUB_TOKEN and GITHUB_TOKEN are not set: pass the workflow's token "
        "(env: GITHUB_TOKEN: ${{ github.token }}) or a token with pull-requests: write"
    )


def is_pull_request_url(url: str) -> bool:
    """Whether ``url`` has the shape of a GitHub pull request's page."""
    return has_page_shape(url, _PR_PATH)


def pull_request_on(instance: ForgeInstance, url: str) -> tuple[str, int]:
    """``(owner/repo, number)`` of a pull request URL on ``instance``; ``InputError`` for another shape or host."""
    match = instance.page(url, _PR_PATH, "GitHub pull request", URL_SHAPE)
    return match["repo"], int(match["number"])


def target_from_url(url: str, env: Mapping[str, str]) -> GitHubTarget:
    """``https://github.com/o/r/pull/7`` → ``api.github.com``;
    on GitHub Enterprise (``CODEJURY_GITHUB_URL``), its API."""
    instance = github_instance(env)
    repo, number = pull_request_on(instance, url)
    token, _ = github_token(env)
    login = env.get(BOT_LOGIN_ENV) or None
    return GitHubTarget(instance.api_url, instance.graphql_url, repo, number, token, bot_login=login)


def target_from_env(env: Mapping[str, str]) -> GitHubTarget | None:
    """The PR of a GitHub Actions ``pull_request`` / ``pull_request_target`` run, or None when this is not one."""
    event_name = env.get("GITHUB_EVENT_NAME", "")
    if env.get("GITHUB_ACTIONS") != "true" or event_name not in PR_EVENTS:
        return None
    event = _event(env.get("GITHUB_EVENT_PATH", ""))
    found = event.get("pull_request")
    pull: dict[str, object] = found if isinstance(found, dict) else {}
    number = pull.get("number") or event.get("number")
    base_repo = _full_name(pull.get("base")) or env.get("GITHUB_REPOSITORY", "")
    head_repo = _full_name(pull.get("head")) or base_repo
    if not isinstance(number, int) or "/" not in base_repo:
        raise InputError(f"a {event_name} run whose event file (GITHUB_EVENT_PATH) names no pull request")
    api_url = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    graphql_url = env.get("GITHUB_GRAPHQL_URL") or api_url + "/graphql"
    token, variable = github_token(env)
    read_only = FORK_REASON if event_name == "pull_request" and head_repo != base_repo else None
    login = env.get(BOT_LOGIN_ENV) or (ACTIONS_BOT_LOGIN if variable == "GITHUB_TOKEN" else None)
    return GitHubTarget(api_url, graphql_url, base_repo, number, token, True, read_only, login)


def _event(path: str) -> dict[str, object]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the GitHub event file GITHUB_EVENT_PATH={path}: {exc}") from exc
    return data if isinstance(data, dict) else {}


def _full_name(side: object) -> str:
    repo = side.get("repo") if isinstance(side, dict) else None
    return str(repo.get("full_name") or "") if isinstance(repo, dict) else ""
