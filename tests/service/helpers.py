"""Webhook deliveries as GitHub and GitLab send them: payloads, headers and signatures."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from typing import Any

GITHUB_SECRET = "whsec-test-0123456789"
GITLAB_TOKEN = "gl-hook-token-0123456789"
INGEST_TOKEN = "ingest-token-0123456789"
OLD = "".join(f"line {n}\n" for n in range(1, 31))
NEW = OLD.replace("line 5\n", "line five\n")
"""A change's file before and after: one line changed."""


def github_pr_event(
    url: str,
    repo: str = "octo/app",
    number: int = 7,
    *,
    action: str = "synchronize",
    draft: bool = False,
    sender: str = "alice",
    sender_type: str = "User",
    head_sha: str = "abc123",
    installation: int | None = None,
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "action": action,
        "number": number,
        "pull_request": {
            "number": number,
            "html_url": url,
            "state": "open",
            "draft": draft,
            "head": {"sha": head_sha},
        },
        "repository": {"full_name": repo},
        "sender": {"login": sender, "type": sender_type},
    }
    if installation is not None:
        event["installation"] = {"id": installation}
    return event


def github_delivery(
    payload: dict[str, Any], *, secret: str = GITHUB_SECRET, event: str = "pull_request", delivery: str | None = None
) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": signature,
        "Content-Type": "application/json",
    }
    return body, headers


def gitlab_mr_event(
    url: str,
    project: str = "acme/widgets",
    iid: int = 7,
    *,
    action: str = "update",
    oldrev: str | None = "0" * 40,
    draft: bool = False,
    username: str = "alice",
    head_sha: str = "def456",
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "iid": iid,
        "url": url,
        "action": action,
        "state": "opened",
        "draft": draft,
        "last_commit": {"id": head_sha},
    }
    if oldrev is not None:
        attrs["oldrev"] = oldrev
    return {
        "object_kind": "merge_request",
        "event_type": "merge_request",
        "user": {"username": username},
        "project": {"path_with_namespace": project},
        "object_attributes": attrs,
    }


def gitlab_delivery(
    payload: dict[str, Any], *, token: str = GITLAB_TOKEN, idempotency_key: str | None = None
) -> tuple[bytes, dict[str, str]]:
    headers = {
        "X-Gitlab-Event": "Merge Request Hook",
        "X-Gitlab-Token": token,
        "Idempotency-Key": idempotency_key or str(uuid.uuid4()),
        "Content-Type": "application/json",
    }
    return json.dumps(payload).encode(), headers
