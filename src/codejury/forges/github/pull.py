"""What one run knows of a pull request, shared by its reader (``github.reader``) and its publisher
(``github.publisher``): the client, who the token is, the head commit, the lines GitHub takes comments on,
the bot's previous review and its reviews that still count."""

from __future__ import annotations

from typing import Literal
from urllib.parse import quote

from codejury.forges.adapter import ForgeAdapter
from codejury.forges.github.api import CommentableLines, GitHubAPI, ReviewThread
from codejury.forges.github.api import Review as GitHubReview
from codejury.forges.github.checks import Outcome
from codejury.forges.github.target import GitHubTarget
from codejury.forges.plan import PreviousState

ReviewState = Literal["APPROVED", "CHANGES_REQUESTED"]


def same_login(a: str | None, b: str | None) -> bool:
    """GraphQL names the Actions bot ``github-actions``, REST ``github-actions[bot]``: the same user."""
    return bool(a) and bool(b) and (a or "").removesuffix("[bot]").lower() == (b or "").removesuffix("[bot]").lower()


class PullRequestState(ForgeAdapter[GitHubTarget, GitHubAPI]):
    """The bot on one pull request, as far as reading and publishing share it; use ``async with`` (it asks
    GitHub who the token is first)."""

    forge_name = "github"
    noun = "pull request"
    suggestion_offsets = False
    """GitHub's ```suggestion replaces start_line..line, so no line offsets."""

    def _start(self) -> None:
        self.read_only = self.target.read_only
        self.outcome: Outcome | None = None
        """What was reviewed and how it may block (set by ``publish_review``)."""
        self.commentable: dict[str, CommentableLines] = {}
        """The lines GitHub takes an inline comment on, per file."""
        self.previous = PreviousState()
        self.threads: dict[str, ReviewThread] = {}
        """The bot's finding threads, by id."""
        self.active: list[GitHubReview] = []
        """The bot's approvals and change requests not dismissed since, oldest first."""
        self._me = ""
        self._head_sha = ""
        self._html_url = ""

    async def _identify(self) -> None:
        self._me = await self.api.current_login()

    @property
    def me(self) -> str:
        return self._me

    @property
    def head_sha(self) -> str:
        return self._head_sha

    @property
    def web_url(self) -> str:
        return self._html_url or f"{self.target.repo}#{self.target.number}"

    def opened(self, head_sha: str, html_url: str) -> None:
        """The pull request as read: its head commit and its page."""
        self._head_sha, self._html_url = head_sha, html_url

    def line_url(self, path: str, start: int, end: int) -> str | None:
        if "/pull/" not in self._html_url or not self._head_sha:
            return None
        repo_url = self._html_url.rsplit("/pull/", 1)[0]
        lines = f"L{start}" if end <= start else f"L{start}-L{end}"
        return f"{repo_url}/blob/{self._head_sha}/{quote(path)}#{lines}"

    def review_state(self) -> ReviewState | None:
        """What the bot's reviews that still count say: its last approval or change request."""
        if not self.active:
            return None
        state = self.active[-1].state
        return "APPROVED" if state == "APPROVED" else "CHANGES_REQUESTED"
