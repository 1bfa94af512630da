"""Webhook deliveries from GitHub and GitLab: authenticated, then read into a ``ReviewRequest``.

Authentication is constant-time (``hmac.compare_digest``) and happens before the body is parsed:
GitHub signs the raw body with the App's webhook secret (``X-Hub-Signature-256: sha256=HEX``),
GitLab sends the hook's secret token as it is (``X-Gitlab-Token``). A delivery that fails is
answered 401 and nothing about it is kept.

Which deliveries become reviews:

- GitHub ``pull_request`` with action ``opened``, ``reopened``, ``synchronize`` (a push) or
  ``ready_for_review``; GitLab ``Merge Request Hook`` with action ``open``, ``reopen``, or
  ``update`` carrying ``oldrev`` (new commits; an edited title is not a push);
- skipped, with the reason in the answer: drafts, events sent by bots (GitHub ``sender.type``
  ``Bot``; GitLab project and group access-token users, ``project_N_bot…`` / ``group_N_bot…``),
  closed or merged changes, other actions and other events (GitHub's ``ping`` is answered);
- comments (GitHub ``issue_comment`` and ``pull_request_review_comment``, GitLab ``Note Hook``)
  are read by ``service.chat``: a command becomes a chat job.

A review or chat job is only for the configured forge (``refused_url``): a payload whose merge
request URL names another host, or another project or number than the payload's own
(``project.path_with_namespace``, ``repository.full_name``), is refused before anything is
queued or fetched.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from itertools import accumulate
from typing import Any

from codejury.errors import InputError
from codejury.forges.github.target import pull_request_on
from codejury.forges.gitlab.target import merge_request_on
from codejury.forges.hosts import ForgeHosts
from codejury.service.chat import (
    GITHUB_CHAT_EVENTS,
    GITLAB_CHAT_EVENT,
    github_chat_request,
    gitlab_chat_request,
    review_key,
)
from codejury.service.requests import ForgeName as ForgeName
from codejury.service.requests import ReviewRequest as ReviewRequest
from codejury.service.requests import Skipped as Skipped

GITHUB_SECRET_ENV = "CODEJURY_GITHUB_WEBHOOK_SECRET"
GITLAB_TOKEN_ENV = "CODEJURY_GITLAB_WEBHOOK_TOKEN"
GITHUB_ACTIONS = ("opened", "reopened", "synchronize", "ready_for_review")
GITLAB_ACTIONS = ("open", "reopen", "update")
_GITLAB_BOT = re.compile(r"^(project|group)_\d+_bot(_[0-9a-f]+)?$")
MAX_JSON_DEPTH = 64
"""Arrays and objects nested deeper than this are refused (a real GitHub or GitLab event is under 15)."""
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_NOT_BRACKET_OR_QUOTE = bytes(b for b in range(256) if b not in b'"[]{}')
_BRACKET_STEP = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")


def github_signature_valid(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``X-Hub-Signature-256`` is ``sha256=`` the HMAC of ``body`` under ``secret`` (constant time)."""
    if not secret or not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode("utf-8", "replace"))


def gitlab_token_valid(token: str, header: str | None) -> bool:
    """Whether ``X-Gitlab-Token`` equals the configured token (constant time)."""
    if not token or header is None:
        return False
    return hmac.compare_digest(token.encode(), header.encode("utf-8", "replace"))


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def json_depth(body: bytes) -> int:
    """How deep ``body``'s arrays and objects nest, counted on its bytes without parsing it.

    Escapes (``\\x``) go first, so every ``"`` left opens or closes a string; the brackets outside
    strings are then summed, ``[``/``{`` as +1 and ``]``/``}`` as -1 (C-speed byte operations only).
    """
    if b"\\" in body:
        body = _ESCAPE.sub(b"", body)
    outside = b"".join(body.translate(None, _NOT_BRACKET_OR_QUOTE).split(b'"')[::2])
    steps = memoryview(outside.translate(_BRACKET_STEP)).cast("b")
    return max(accumulate(steps), default=0)


def parse_json(body: bytes, max_depth: int = MAX_JSON_DEPTH) -> dict[str, Any]:
    """The delivery's JSON object; ValueError for anything else, and before parsing for one nested
    deeper than ``max_depth`` (the parser would recurse once per level)."""
    if json_depth(body) > max_depth:
        raise ValueError(f"the payload nests deeper than {max_depth} levels")
    try:
        data = json.loads(body)
    except RecursionError:  # a body in another encoding than UTF-8, which the byte count cannot read
        raise ValueError(f"the payload nests deeper than {max_depth} levels") from None
    if not isinstance(data, dict):
        raise ValueError("the payload is not a JSON object")
    return data


def github_request(event: str, payload: Mapping[str, Any], delivery: str) -> ReviewRequest | Skipped:
    """The review a GitHub delivery asks for, or why it asks for none."""
    if event == "ping":
        return Skipped("ping: the webhook works")
    if event in GITHUB_CHAT_EVENTS:
        return github_chat_request(event, payload, delivery)
    if event != "pull_request":
        return Skipped(f"event {event or '(none)'} starts no review")
    action = str(payload.get("action") or "")
    pull = _object(payload.get("pull_request"))
    sender = _object(payload.get("sender"))
    if action not in GITHUB_ACTIONS:
        return Skipped(f"pull_request action {action or '(none)'} starts no review")
    if pull.get("state") == "closed":
        return Skipped("the pull request is closed")
    if pull.get("draft") is True:
        return Skipped("the pull request is a draft")
    if sender.get("type") == "Bot" or str(sender.get("login") or "").endswith("[bot]"):
        return Skipped("sent by a bot")
    url, number = pull.get("html_url"), pull.get("number")
    repo = _object(payload.get("repository")).get("full_name")
    if not isinstance(url, str) or not isinstance(number, int) or not isinstance(repo, str):
        raise ValueError("a pull_request event without pull_request.html_url, number or repository.full_name")
    installation = _object(payload.get("installation")).get("id")
    return ReviewRequest(
        forge="github",
        url=url,
        key=f"github:{repo}#{number}",
        head_sha=str(_object(pull.get("head")).get("sha") or ""),
        installation_id=installation if isinstance(installation, int) else None,
        delivery=delivery,
    )


def gitlab_request(event: str, payload: Mapping[str, Any], delivery: str) -> ReviewRequest | Skipped:
    """The review a GitLab delivery asks for, or why it asks for none."""
    if event == GITLAB_CHAT_EVENT:
        return gitlab_chat_request(payload, delivery)
    if event != "Merge Request Hook" or payload.get("object_kind") != "merge_request":
        return Skipped(f"event {event or '(none)'} starts no review")
    attrs = _object(payload.get("object_attributes"))
    user = _object(payload.get("user"))
    action = str(attrs.get("action") or "")
    if action not in GITLAB_ACTIONS:
        return Skipped(f"merge request action {action or '(none)'} starts no review")
    if action == "update" and not attrs.get("oldrev"):
        return Skipped("an update without new commits starts no review")
    if attrs.get("state") in ("closed", "merged", "locked"):
        return Skipped(f"the merge request is {attrs.get('state')}")
    if attrs.get("draft") is True or attrs.get("work_in_progress") is True:
        return Skipped("the merge request is a draft")
    if user.get("bot") is True or _GITLAB_BOT.match(str(user.get("username") or "")):
        return Skipped("sent by a bot")
    url, iid = attrs.get("url"), attrs.get("iid")
    project = _object(payload.get("project")).get("path_with_namespace")
    if not isinstance(url, str) or not isinstance(iid, int) or not isinstance(project, str):
        raise ValueError("a merge request event without object_attributes.url, iid or project.path_with_namespace")
    last_commit = _object(attrs.get("last_commit")).get("id")
    return ReviewRequest(
        forge="gitlab",
        url=url,
        key=f"gitlab:{project}!{iid}",
        head_sha=str(last_commit or ""),
        delivery=delivery,
    )


def refused_url(request: ReviewRequest, hosts: ForgeHosts) -> str | None:
    """Why no token may be used for ``request``'s URL (not a merge request's, another host, or another
    project or number than the payload's), in one line of at most 300 characters; None when it is
    on the configured forge and names the payload's own merge request."""
    try:
        if request.forge == "gitlab":
            project, iid = merge_request_on(hosts.gitlab, request.url)
            named = f"gitlab:{project}!{iid}"
        else:
            repo, number = pull_request_on(hosts.github, request.url)
            named = f"github:{repo}#{number}"
    except InputError as exc:
        return str(exc)[:300]
    payload = review_key(request)
    if named.casefold() != payload.casefold():
        return f"the URL names {named}, the payload {payload}"
    return None
