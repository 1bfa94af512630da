"""Chat commands in merge-request comments, read from webhook deliveries (no forge call here).

A comment whose first line starting ``/codejury`` (at the start of a line, outside any fence)
names a command becomes a queued chat job:

- ``/codejury review``: review the merge request again now;
- ``/codejury ask <question>``: the coordinator's model answers in the thread;
- ``/codejury describe``: the walkthrough of the change, written again now, answered in the thread;
- ``/codejury help``, or any word it does not know: a short help reply;
- a comment that says exactly ``break glass`` (as ``codejury review`` reads it): a re-review,
  which forces approval;
- a reply in a thread codejury started: a re-review, whose dispute flow reads the reply.

Read here: GitHub ``issue_comment`` (``created``, on a pull request) and
``pull_request_review_comment`` (``created``); GitLab ``Note Hook`` on a merge request (created,
not an edit). Bots (GitHub ``sender.type: Bot``, GitLab access-token users) are skipped at once.
Whether the author may command codejury (write access) is asked of the forge by the job, never
inside the webhook request: a command from anyone else ends there, with no reply.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from codejury.service.requests import ChatCommand as ChatCommand
from codejury.service.requests import CommandName, ReviewRequest, Skipped

GITHUB_CHAT_EVENTS = ("issue_comment", "pull_request_review_comment")
GITLAB_CHAT_EVENT = "Note Hook"
MAX_QUESTION_CHARS = 4000
_COMMAND = re.compile(r"^/codejury(?![\w-])(?:[ \t]+(?P<word>[^\s]+))?(?P<rest>.*)$", re.MULTILINE | re.DOTALL)
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~).*?^[ \t]{0,3}\1[^\n]*$", re.MULTILINE | re.DOTALL)
_GITLAB_BOT = re.compile(r"^(project|group)_\d+_bot(_[0-9a-f]+)?$")
_BREAK_GLASS = re.compile(r"^\s*break\s+glass\s*[.!]?\s*$", re.IGNORECASE | re.MULTILINE)


def parse_command(body: str) -> tuple[CommandName, str] | None:
    """The command a comment gives (``/codejury …`` outside code fences, or ``break glass``), or None."""
    text = _FENCE.sub("", body.replace("\r\n", "\n"))
    match = _COMMAND.search(text)
    if match is not None:
        word = (match["word"] or "").lower()
        rest = (match["rest"] or "").strip()
        if word == "review":
            return "review", ""
        if word == "ask" and rest:
            return "ask", rest[:MAX_QUESTION_CHARS]
        if word == "describe":
            return "describe", ""
        return "help", word
    if _BREAK_GLASS.search(text):
        return "break_glass", ""
    return None


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def github_chat_request(event: str, payload: Mapping[str, Any], delivery: str) -> ReviewRequest | Skipped:
    """The chat job a GitHub comment delivery asks for, or why it asks for none."""
    action = str(payload.get("action") or "")
    if action != "created":
        return Skipped(f"{event} action {action or '(none)'} is no command")
    sender = _object(payload.get("sender"))
    login = str(sender.get("login") or "")
    if sender.get("type") == "Bot" or login.endswith("[bot]"):
        return Skipped("sent by a bot")
    comment = _object(payload.get("comment"))
    repo = _object(payload.get("repository")).get("full_name")
    thread = ""
    if event == "issue_comment":
        issue = _object(payload.get("issue"))
        if "pull_request" not in issue:
            return Skipped("a comment on an issue, not on a pull request")
        url = _object(issue.get("pull_request")).get("html_url") or issue.get("html_url")
        number = issue.get("number")
    else:
        pull = _object(payload.get("pull_request"))
        url, number = pull.get("html_url"), pull.get("number")
        thread = str(comment.get("in_reply_to_id") or comment.get("id") or "")
    comment_id = comment.get("id")
    if not isinstance(url, str) or not isinstance(repo, str) or not isinstance(number, int):
        raise ValueError(f"a {event} event without its pull request's URL and number, or repository")
    if not isinstance(comment_id, int):
        raise ValueError(f"a {event} event without comment.id")
    command = parse_command(str(comment.get("body") or ""))
    if command is None and event == "pull_request_review_comment" and comment.get("in_reply_to_id"):
        command = ("reply", "")
    if command is None:
        return Skipped("the comment gives codejury no command")
    key = f"github:{repo}#{number}"
    installation = _object(payload.get("installation")).get("id")
    return ReviewRequest(
        forge="github",
        url=url,
        key=f"{key} chat {comment_id}",
        installation_id=installation if isinstance(installation, int) else None,
        delivery=delivery,
        chat=ChatCommand(command[0], command[1], login, comment_id, thread=thread),
    )


def gitlab_chat_request(payload: Mapping[str, Any], delivery: str) -> ReviewRequest | Skipped:
    """The chat job a GitLab note delivery asks for, or why it asks for none."""
    attrs = _object(payload.get("object_attributes"))
    if payload.get("object_kind") != "note" or attrs.get("noteable_type") != "MergeRequest":
        return Skipped("a comment on something other than a merge request")
    if attrs.get("action") not in (None, "create"):
        return Skipped("an edited comment is no new command")
    user = _object(payload.get("user"))
    username = str(user.get("username") or "")
    if user.get("bot") is True or _GITLAB_BOT.match(username):
        return Skipped("sent by a bot")
    mr = _object(payload.get("merge_request"))
    if mr.get("state") in ("closed", "merged", "locked"):
        return Skipped(f"the merge request is {mr.get('state')}")
    project = _object(payload.get("project")).get("path_with_namespace")
    iid, url, note_id, user_id = mr.get("iid"), mr.get("url"), attrs.get("id"), user.get("id")
    if not isinstance(project, str) or not isinstance(url, str) or not isinstance(iid, int):
        raise ValueError("a note event without merge_request.url, iid or project.path_with_namespace")
    if not isinstance(note_id, int) or not isinstance(user_id, int):
        raise ValueError("a note event without object_attributes.id or user.id")
    discussion = str(attrs.get("discussion_id") or "")
    command = parse_command(str(attrs.get("note") or ""))
    if command is None and attrs.get("type") in ("DiffNote", "DiscussionNote") and discussion:
        command = ("reply", "")
    if command is None:
        return Skipped("the comment gives codejury no command")
    return ReviewRequest(
        forge="gitlab",
        url=url,
        key=f"gitlab:{project}!{iid} chat {note_id}",
        delivery=delivery,
        chat=ChatCommand(command[0], command[1], username, note_id, author_id=user_id, thread=discussion),
    )


def review_key(request: ReviewRequest) -> str:
    """The merge request's own key (a chat job's key names its comment too)."""
    return request.key.split(" chat ", 1)[0]
