"""The GitHub pull-request bot: load the PR as a change, read back and publish reviews.

- ``GitHubTarget`` (``github.target``): which PR, from its URL or the Actions run.
- ``GitHubPullRequest`` (a ``plan.Forge``): what one run knows of the PR (``github.pull``), read by
  a ``PullRequestReader`` (``github.reader``: the change, the humans' comments, the bot's previous
  review) and published on by a ``PullRequestPublisher`` (``github.publisher``: one review with
  the inline comments and the approval event, dismissals, thread resolutions, the summary and the
  check run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from codejury.change.types import ChangeSet, FileChange
from codejury.findings import Review
from codejury.forges.adapter import forge_redactor
from codejury.forges.github.api import GitHubAPI
from codejury.forges.github.checks import Outcome, check_conclusion
from codejury.forges.github.publisher import PullRequestPublisher
from codejury.forges.github.pull import PullRequestState, Warn, same_login
from codejury.forges.github.reader import PullRequestReader
from codejury.forges.github.target import (
    TOKEN_HINT,
    GitHubTarget,
    github_token,
    is_pull_request_url,
    target_from_env,
    target_from_url,
)
from codejury.forges.plan import PreviousState, PublishPlan, Replan

__all__ = [
    "GitHubPullRequest",
    "GitHubTarget",
    "Outcome",
    "check_conclusion",
    "github_token",
    "is_pull_request_url",
    "same_login",
    "target_from_env",
    "target_from_url",
]


class GitHubPullRequest(PullRequestState):
    """The bot on one pull request; use ``async with`` (it asks GitHub who the token is first)."""

    def __init__(
        self,
        target: GitHubTarget,
        *,
        env: Mapping[str, str] | None = None,
        warn: Warn = lambda _: None,
        api: GitHubAPI | None = None,
    ) -> None:
        env = dict(env or {})
        api = api or GitHubAPI(
            target.token,
            api_url=target.api_url,
            graphql_url=target.graphql_url,
            bot_login=target.bot_login,
            token_hint=TOKEN_HINT,
            redactor=forge_redactor(env, target.token),
        )
        super().__init__(target, api, env=env, warn=warn)
        self.reader = PullRequestReader(self)
        self.publisher = PullRequestPublisher(self)

    async def load_change(self) -> ChangeSet:
        return await self.reader.load_change()

    async def _read_previous(self) -> PreviousState:
        return await self.reader.read_previous()

    async def publish_review(
        self, review: Review, files: Sequence[FileChange], previous: PreviousState, *, fail_on: str,
        approve: bool, max_inline: int,
    ) -> PublishPlan:  # fmt: skip
        """Plan ``review`` against ``previous`` and publish it; the plan is returned."""
        self.outcome = Outcome(review, fail_on, approve)
        return await super().publish_review(
            review, files, previous, fail_on=fail_on, approve=approve, max_inline=max_inline
        )

    async def publish(self, plan: PublishPlan, replan: Replan) -> list[str]:
        return await self.publisher.publish(plan, replan)

    async def publish_failure(self, previous: PreviousState, message: str, head_sha: str) -> list[str]:
        return await self.publisher.publish_failure(previous, message, head_sha)
