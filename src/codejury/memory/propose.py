"""Opening the merge request (GitLab) or pull request (GitHub) that proposes learned rules (``--propose``).

One branch per content (``codejury/learned-rules-<digest>``) from the default branch, one commit that creates or
updates ``.codejury/rules/learned.md``, one merge or pull request into the default branch. A file on the default
branch that already says the same is nothing to propose; a branch of that content that exists already means the
same rules were proposed before (their request is open, or a person closed it): neither opens another.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from codejury.errors import InputError
from codejury.forges.errors import ForgeRefused
from codejury.forges.github.api import GitHubAPI
from codejury.forges.github.target import github_token
from codejury.forges.gitlab.api import GitLabAPI
from codejury.forges.gitlab.target import gitlab_token
from codejury.forges.hosts import github_instance, gitlab_instance, origin
from codejury.memory.keys import digest
from codejury.memory.learn import LEARNED_PATH

BRANCH_PREFIX = "codejury/learned-rules-"
TITLE = "codejury: rules learned from this repository's reviews"


@dataclass(frozen=True)
class Proposal:
    """What ``--propose`` did, in one line, and the merge request's page when it opened one."""

    line: str
    url: str = ""


async def propose_at(project_url: str, text: str, rules: int, env: Mapping[str, str]) -> Proposal:
    """The request on whichever configured forge ``project_url`` is on (its token only ever goes there): a pull
    request on the configured GitHub, else a merge request on the configured GitLab."""
    github, gitlab = github_instance(env), gitlab_instance(env)
    if origin(project_url) in {origin(u) for u in (github.web_url, *github.web_aliases)}:
        repo = github.path_of(project_url).strip("/")
        if repo.count("/") != 1:
            raise InputError(f"--propose expects a GitHub repository's URL, {github.web_url}/OWNER/NAME")
        token = github_token(env)[0]
        async with GitHubAPI(token, api_url=github.api_url, graphql_url=github.graphql_url) as hub:
            return await propose_on_github(hub, repo, text, rules)
    project = gitlab.path_of(project_url).strip("/")
    if not project or "/-/" in project:
        raise InputError(f"--propose expects a GitLab project's URL below {gitlab.web_url}, not {project_url!r}")
    async with GitLabAPI(gitlab.api_url, gitlab_token(env)) as lab:
        return await propose_on_gitlab(lab, project, text, rules)


async def propose_on_gitlab(api: GitLabAPI, project: str, text: str, rules: int) -> Proposal:
    """A merge request on GitLab project ``project`` that writes ``text`` to the learned rules file."""
    target = await api.default_branch(project)
    current = await api.file_text(project, LEARNED_PATH, target)
    if current == text:
        return Proposal(f"nothing new to propose: {LEARNED_PATH} on {target} already holds these rules")
    branch = BRANCH_PREFIX + digest(text, 10)
    try:
        await api.commit_files(project, branch, target, _message(rules), {LEARNED_PATH: (text, current is not None)})
    except ForgeRefused as exc:
        if exc.status == 400 and "already exists" in str(exc):
            return Proposal(f"already proposed: the branch {branch} holds these rules")
        raise
    iid, url = await api.create_merge_request(project, branch, target, TITLE, _description(rules))
    return Proposal(f"opened !{iid} with {rules} learned rule(s): {url}", url)


async def propose_on_github(api: GitHubAPI, repo: str, text: str, rules: int) -> Proposal:
    """A pull request on GitHub repository ``repo`` (owner/name) that writes ``text`` to the learned rules file."""
    target = await api.default_branch(repo)
    current = await api.file_version(repo, LEARNED_PATH, target)
    if current is not None and current[0] == text:
        return Proposal(f"nothing new to propose: {LEARNED_PATH} on {target} already holds these rules")
    branch = BRANCH_PREFIX + digest(text, 10)
    try:
        await api.create_branch(repo, branch, target)
    except ForgeRefused as exc:
        if exc.status == 422 and "already exists" in str(exc):
            return Proposal(f"already proposed: the branch {branch} holds these rules")
        raise
    await api.put_file(repo, LEARNED_PATH, branch, _message(rules), text, current[1] if current else None)
    number, url = await api.create_pull(repo, branch, target, TITLE, _description(rules))
    return Proposal(f"opened #{number} with {rules} learned rule(s): {url}", url)


def _message(rules: int) -> str:
    return f"{TITLE}\n\n{rules} rule(s) proposed by codejury learn; nothing applies until a person merges this."


def _description(rules: int) -> str:
    return (
        f"{rules} rule(s) learned from what people with write access dismissed, and what authors fixed after a "
        f"finding, in this repository's recorded reviews. The compliance reviewer reads {LEARNED_PATH} once this "
        "is merged; edit or delete any rule before merging, or close this to apply none."
    )
