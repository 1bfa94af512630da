"""The GitHub pull-request bot: load the PR as a change, read back and publish reviews.

- ``GitHubTarget`` (``github.target``): which PR, from its URL or the Actions run.
- ``GitHubPullRequest`` (a ``plan.Forge``): what one run knows of the PR (``github.pull``), read by
  a ``PullRequestReader`` (``github.reader``: the change, the humans' comments, the bot's previous
  review) and published on by a ``PullRequestPublisher`` (``github.publisher``: one review with
  the inline comments and the approval event, dismissals, thread resolutions, the summary and the
  check run).
"""

from __future__ import annotations

from collections.abc import Sequence

from codejury.change.types import FileChange
from codejury.findings import Review
from codejury.forges.adapter import forge_redactor
from codejury.forges.github.api import GitHubAPI
from codejury.forges.github.checks import Outcome
from codejury.forges.github.publisher import PullRequestPublisher
from codejury.forges.github.pull import PullRequestState
from codejury.forges.github.reader import PullRequestReader
from codejury.forges.github.target import TOKEN_HINT
from codejury.forges.plan import PreviousState, PublishPlan


class GitHubPullRequest(PullRequestState):
    """The bot on one pull request; use ``async with`` (it asks GitHub who the token is first)."""

    def _client(self) -> GitHubAPI:
        target = self.target
        return GitHubAPI(
            target.token,
            api_url=target.api_url,
            graphql_url=target.graphql_url,
            bot_login=target.bot_login,
            token_hint=TOKEN_HINT,
            redactor=forge_redactor(self.env, target.token),
        )

    def _parts(self) -> tuple[PullRequestReader, PullRequestPublisher]:
        return PullRequestReader(self), PullRequestPublisher(self)

    async def publish_review(
        self, review: Review, files: Sequence[FileChange], previous: PreviousState, *, fail_on: str,
        approve: bool, max_inline: int, notices: tuple[str, ...] = (),
    ) -> PublishPlan:  # fmt: skip
        """Plan ``review`` against ``previous`` and publish it; the plan is returned."""
        self.outcome = Outcome(review, fail_on, approve)
        return await super().publish_review(
            review, files, previous, fail_on=fail_on, approve=approve, max_inline=max_inline, notices=notices
        )
