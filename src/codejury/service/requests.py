"""What a queued job carries (plain JSON): the merge request to review, and the chat command of a comment."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

ForgeName = Literal["github", "gitlab"]
CommandName = Literal["review", "ask", "describe", "help", "break_glass", "reply"]


@dataclass(frozen=True)
class ChatCommand:
    """One command from a comment: what a chat job carries besides the merge request (plain JSON)."""

    name: CommandName
    text: str
    """The question (``ask``), or the word that was not understood (``help``)."""
    author: str
    """The commenter's login (GitHub) or username (GitLab)."""
    comment_id: int
    author_id: int | None = None
    """The commenter's GitLab user id (access levels are asked by id)."""
    thread: str = ""
    """Where to answer: the GitLab discussion id, the GitHub review comment replied to ("": a new comment)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChatCommand:
        name: CommandName = data.get("name")  # type: ignore[assignment]  # checked on the next line
        if name not in get_args(CommandName):
            raise ValueError(f"a queued chat job names no known command: {name!r}")
        author_id = data.get("author_id")
        return cls(
            name=name,
            text=str(data.get("text") or ""),
            author=str(data.get("author") or ""),
            comment_id=int(data.get("comment_id") or 0),
            author_id=int(author_id) if author_id is not None else None,
            thread=str(data.get("thread") or ""),
        )


@dataclass(frozen=True)
class ReviewRequest:
    """One merge request to review: what a queued job carries (plain JSON)."""

    forge: ForgeName
    url: str
    """The merge request's web URL, as ``codejury review --url`` takes it."""
    key: str
    """The merge request's identity across pushes: ``github:octo/app#7``, ``gitlab:acme/widgets!7``."""
    head_sha: str = ""
    installation_id: int | None = None
    """The GitHub App installation that sent it (its token reviews the pull request)."""
    delivery: str = ""
    chat: ChatCommand | None = None
    """A command from a comment (``service.chat``); None for a review asked by a push."""
    forced: bool = False
    """Asked by a person with write access (``/codejury review``, break glass, a reply in codejury's thread):
    the review runs even when the bot's summary already records a review of the head; a push's review
    (False) stops there instead."""

    @property
    def queueing_key(self) -> str:
        """Per merge request, at most one review waits for each of these keys: a push's and a person's are
        never merged into one, so a push already waiting cannot swallow a person's command."""
        return f"{self.key} forced" if self.forced else self.key

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReviewRequest:
        forge = data.get("forge")
        if forge not in ("github", "gitlab"):
            raise ValueError(f"a queued review names no known forge: {forge!r}")
        installation = data.get("installation_id")
        return cls(
            forge=forge,
            url=str(data["url"]),
            key=str(data["key"]),
            head_sha=str(data.get("head_sha") or ""),
            installation_id=int(installation) if installation is not None else None,
            delivery=str(data.get("delivery") or ""),
            chat=ChatCommand.from_json(data["chat"]) if data.get("chat") else None,
            forced=data.get("forced") is True,
        )


@dataclass(frozen=True)
class Skipped:
    """An authenticated delivery that asks for no review, and why (said in the 202 answer)."""

    reason: str
