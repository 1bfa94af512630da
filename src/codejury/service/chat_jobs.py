"""A queued chat job: the command of a comment, carried out for a user with write access.

The job opens the merge request with the forge's adapter (the token the review would use) and
checks, through the forge's API, that the author is not codejury itself and may write (GitLab:
Developer or more on the project; GitHub: ``write``, ``maintain`` or ``admin``). Anyone else's
command ends the job with one log line and nothing posted: no reply tells them why.

- ``review``, ``break_glass``: a review of the merge request is queued (``forced``: it runs even when
  the head was already reviewed, and a push waiting for the same merge request never swallows it);
  break glass is read by that review from the comments.
- ``reply``: when the thread is codejury's, a re-review is queued the same way; its dispute flow
  reads the reply (a ``won't fix`` dismisses the finding, and the verdict is published again).
- ``ask``: the coordinator's model answers from the change (its numbered patches, fenced as
  data) and may read files of the merge request's head (``codejury.service.ask``: the model
  wrapped as a review's, its usage counted in ``/metrics``).
- ``help``: a short list of the commands, as a reply.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from codejury.forges.safety import checked, inline_code, safe_line
from codejury.service.ask import LIGHTHEARTED_FOOTER, answer_question
from codejury.service.chat import ChatCommand, review_key
from codejury.service.webhooks import ReviewRequest

if TYPE_CHECKING:
    from codejury.forges.plan import Forge
    from codejury.session import Session
    from codejury.telemetry.metrics import ReviewMetrics

Submit = Callable[[ReviewRequest], Awaitable[str]]
GITLAB_DEVELOPER = 30
GITHUB_WRITERS = frozenset({"admin", "maintain", "write"})
HELP = "\n".join(
    [
        "codejury answers these commands from people with write access, at the start of a comment:",
        "",
        "- `/codejury review`: review this merge request again now",
        "- `/codejury ask QUESTION`: ask about this change",
        "- `/codejury describe`: the walkthrough of this change, written again now",
        "- `break glass` on a line of its own: approve whatever the review finds (recorded)",
        "",
        "A reply in one of codejury's threads starts a re-review: `won't fix` dismisses the finding.",
    ]
)


async def run_chat(
    request: ReviewRequest,
    env: dict[str, str],
    setup: Any,
    session: Session,
    submit: Submit | None,
    say: Callable[[str], None],
    metrics: ReviewMetrics | None = None,
) -> str:
    """Carry out ``request.chat`` (checked, queued or answered); returns a one-line outcome for the log."""
    command = request.chat
    assert command is not None
    async with session.open_forge(request.url, env, say)() as forge:
        conversation = _conversation(forge, command)
        if await conversation.by_bot():
            return "ignored: codejury's own comment"
        if not await conversation.can_write():
            return f"ignored: {command.name} from a user without write access"
        if command.name in ("review", "break_glass", "reply"):
            if command.name == "reply" and not await conversation.in_bot_thread():
                return "ignored: a reply in a thread that is not codejury's"
            if submit is None:
                return "not queued: this process has no queue to submit reviews to"
            review = replace(request, key=review_key(request), chat=None, head_sha="", forced=True)
            return f"{command.name}: review {await submit(review)}"
        if command.name == "help":
            await conversation.reply(_help_reply(command))
            return "help posted"
        if command.name == "describe":
            reply, outcome = await _described(request, env, setup, session, forge)
            await conversation.reply(reply)
            return outcome
        asked = await answer_question(
            await forge.load_change(),
            command,
            already_lighthearted=await conversation.lighthearted_answered(),
            read_head=conversation.read_head,
            env=env,
            setup=setup,
            session=session,
            metrics=metrics,
            say=say,
        )
        await conversation.reply(asked.reply)
        return asked.outcome()


async def _described(
    request: ReviewRequest, env: dict[str, str], setup: Any, session: Session, forge: Forge
) -> tuple[str, str]:
    """The walkthrough of the merge request, written now by the session as ``codejury describe`` writes it (the
    review's settings, kill switch, daily caps and models), as the reply and its outcome line. With
    ``describe_in = "description"`` it replaces the description's block and the reply says so; where the token
    may not edit the description, the reply carries it with the reason."""
    from codejury.errors import ReviewRefused
    from codejury.forges.description import walkthrough_block
    from codejury.forges.summary import walkthrough_section
    from codejury.session import ReviewFlags

    flags = ReviewFlags(
        url=request.url, model=setup.model, model_for=setup.model_for, config_file=setup.config_file,
        remote_config=setup.remote_config, plugins=setup.plugins,
    )  # fmt: skip
    try:
        written = await session.describe(env, flags)
    except ReviewRefused as exc:
        return checked(f"codejury is not describing this merge request now: {safe_line(str(exc))}."), "refused"
    if written.walkthrough is None:
        note = safe_line(written.note or "its model did not write one")
        return checked(f"codejury could not write the walkthrough: {note}."), "walkthrough not written"
    lines = walkthrough_section(written.walkthrough)
    if written.placed_in == "description":
        refused = await forge.place_walkthrough(walkthrough_block(written.walkthrough))
        if refused is None:
            return checked("codejury wrote the walkthrough again in the description."), "walkthrough in the description"
        lines = [*lines, f"It is here, not in the description: {safe_line(refused)}."]
    return checked("\n".join(lines)), "walkthrough posted"


def _help_reply(command: ChatCommand) -> str:
    if command.text == "ask":
        return checked("`/codejury ask` needs a question after it.\n\n" + HELP)
    unknown = f"Unknown command {inline_code(command.text)}.\n\n" if command.text and command.text != "help" else ""
    return checked(unknown + HELP)


class _Conversation(ABC):
    """The forge calls a chat job needs, for one comment on one merge request."""

    @abstractmethod
    async def by_bot(self) -> bool:
        """Whether the comment is codejury's own."""

    @abstractmethod
    async def can_write(self) -> bool:
        """Whether the comment's author has write access (asked of the forge)."""

    @abstractmethod
    async def in_bot_thread(self) -> bool:
        """Whether the comment replies in a thread codejury started."""

    @abstractmethod
    async def lighthearted_answered(self) -> bool:
        """Whether codejury already answered a lighthearted question on this merge request."""

    @abstractmethod
    async def read_head(self, path: str) -> str | None:
        """A file of the merge request's head, None when absent."""

    @abstractmethod
    async def reply(self, body: str) -> None:
        """Post ``body`` (already checked) as the answer to the comment."""


def _conversation(forge: Any, command: ChatCommand) -> _Conversation:
    from codejury.forges.github import GitHubPullRequest
    from codejury.forges.gitlab.adapter import GitLabMergeRequest

    if isinstance(forge, GitLabMergeRequest):
        return _GitLabConversation(forge, command)
    if isinstance(forge, GitHubPullRequest):
        return _GitHubConversation(forge, command)
    raise TypeError(f"chat commands are not supported on {type(forge).__name__}")


class _GitLabConversation(_Conversation):
    def __init__(self, forge: Any, command: ChatCommand) -> None:
        self.api, self.target, self.me, self.command = forge.api, forge.target, forge.me, command
        self._head: str | None = None

    async def by_bot(self) -> bool:
        me_id: int = self.me.id
        me_name: str = self.me.username
        return self.command.author_id == me_id or self.command.author == me_name

    async def can_write(self) -> bool:
        if self.command.author_id is None:
            return False
        level = await self.api.member_access_level(self.target.project, self.command.author_id)
        return level is not None and level >= GITLAB_DEVELOPER

    async def in_bot_thread(self) -> bool:
        for discussion in await self.api.discussions(self.target.project, self.target.iid):
            if discussion.id == self.command.thread and discussion.notes:
                return bool(discussion.notes[0].author.id == self.me.id)
        return False

    async def lighthearted_answered(self) -> bool:
        notes = await self.api.notes(self.target.project, self.target.iid)
        me: int = self.me.id
        return any(n.author.id == me and LIGHTHEARTED_FOOTER in n.body for n in notes)

    async def read_head(self, path: str) -> str | None:
        if self._head is None:
            self._head = (await self.api.merge_request(self.target.project, self.target.iid)).sha
        text: str | None = await self.api.file_text(self.target.project, path, self._head)
        return text

    async def reply(self, body: str) -> None:
        project, iid = self.target.project, self.target.iid
        if self.command.thread:
            await self.api.reply(project, iid, self.command.thread, body)
        else:
            await self.api.create_note(project, iid, body)


class _GitHubConversation(_Conversation):
    def __init__(self, forge: Any, command: ChatCommand) -> None:
        self.api, self.target, self.command = forge.api, forge.target, command
        self.me: str = forge.me
        self._head: str | None = None

    async def by_bot(self) -> bool:
        from codejury.forges.github import same_login

        return bool(same_login(self.command.author, self.me))

    async def can_write(self) -> bool:
        from codejury.forges.errors import ForgeAuthError, ForgeRefused

        try:
            permission = await self.api.permission(self.target.repo, self.command.author)
        except (ForgeAuthError, ForgeRefused):  # not a collaborator, or a login GitHub does not know
            return False
        return permission in GITHUB_WRITERS

    async def in_bot_thread(self) -> bool:
        from codejury.forges.github import same_login

        comments = await self.api.review_comments(self.target.repo, self.target.number)
        first = next((c for c in comments if str(c.id) == self.command.thread), None)
        return first is not None and bool(same_login(first.author, self.me))

    async def lighthearted_answered(self) -> bool:
        from codejury.forges.github import same_login

        repo, number = self.target.repo, self.target.number
        bodies = [c for c in await self.api.issue_comments(repo, number) if same_login(c.author, self.me)]
        bodies += [c for c in await self.api.review_comments(repo, number) if same_login(c.author, self.me)]
        return any(LIGHTHEARTED_FOOTER in c.body for c in bodies)

    async def read_head(self, path: str) -> str | None:
        if self._head is None:
            self._head = (await self.api.pull_request(self.target.repo, self.target.number)).head_sha
        text: str | None = await self.api.file_text(self.target.repo, path, self._head)
        return text

    async def reply(self, body: str) -> None:
        repo, number = self.target.repo, self.target.number
        if self.command.thread:
            await self.api.reply_to_comment(repo, number, int(self.command.thread), body)
        else:
            await self.api.create_issue_comment(repo, number, body)
