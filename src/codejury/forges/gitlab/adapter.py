"""The GitLab merge-request bot: load the MR as a change, read back and publish reviews.

- ``GitLabTarget`` (``gitlab.target``): which MR, from its URL or the merge request pipeline.
- ``GitLabMergeRequest`` (a ``plan.Forge``): what one run knows of the MR (``gitlab.merge_request``),
  read by a ``MergeRequestReader`` (``gitlab.reader``: the change, the humans' comments, the bot's
  previous review) and published on by a ``MergeRequestPublisher`` (``gitlab.publisher``: inline
  threads, resolutions, the approval and the summary).
"""

from __future__ import annotations

from codejury.forges.adapter import forge_redactor
from codejury.forges.gitlab.api import GitLabAPI
from codejury.forges.gitlab.merge_request import MergeRequestState
from codejury.forges.gitlab.publisher import MergeRequestPublisher
from codejury.forges.gitlab.reader import MergeRequestReader


class GitLabMergeRequest(MergeRequestState):
    """The bot on one merge request; use ``async with`` (it asks GitLab who the token is first)."""

    def _client(self) -> GitLabAPI:
        target = self.target
        return GitLabAPI(target.api_url, target.token, redactor=forge_redactor(self.env, target.token))

    def _parts(self) -> tuple[MergeRequestReader, MergeRequestPublisher]:
        return MergeRequestReader(self), MergeRequestPublisher(self)
