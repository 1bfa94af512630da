"""A fake Jira on 127.0.0.1: issues by key over REST v2 and v3, behind Jira Data Center's bearer personal access
token or, given an ``email``, Jira Cloud's basic auth with ``email:api_token``.

    with FakeJira(token="jira-secret") as jira:                      # Data Center: Authorization: Bearer jira-secret
    with FakeJira(token="api-token", email="ann@example.com") as jira:  # Cloud: Basic base64(ann@example.com:api-token)

        jira.add_issue("SHOP-12", "Export orders", "Acceptance criteria:\\n- [ ] commas are escaped")
        template = jira.url_template(version=3)   # http://127.0.0.1:PORT/rest/api/3/issue/{key}

``GET /rest/api/2/issue/{key}`` answers ``fields.description`` as text (Jira Server, REST v2);
``/rest/api/3/issue/{key}`` as an Atlassian Document Format tree (Jira Cloud, REST v3): paragraphs, headings
(``## ...``), bullet lists (``- ...``) and task lists (``- [ ] ...`` / ``- [x] ...``) built from the text given.
It refuses as Jira does: no ``Authorization`` header, a wrong token, or the other mode's scheme (a bearer token on
Cloud, basic auth on Data Center) is a 401; a key it does not hold is a 404
with Jira's ``errorMessages``. ``requests`` records every request (path and whether it carried the right token,
never the header itself) so a test can tell which host got which credential.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from codejury_fakes.loopback import LoopbackServer, QuietHandler

_PATH = re.compile(r"^/rest/api/(?P<version>[23])/issue/(?P<key>[^/]+)$")
_TASK = re.compile(r"^- \[(?P<mark>[ xX])\] (?P<text>.*)$")


@dataclass(frozen=True)
class JiraRequest:
    path: str
    authorization: str
    """``none``, ``right`` or ``wrong``: what the request's credential was, never its value."""
    status: int
    scheme: str = ""
    """The ``Authorization`` header's scheme as sent (``bearer``, ``basic``; empty without one)."""


def document(text: str) -> dict[str, Any]:
    """``text`` as Atlassian Document Format: a heading per ``#`` line, a list per run of ``- `` lines (a task
    list when they are ``- [ ]`` items), a paragraph per other line."""
    content: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        task = _TASK.match(line)
        if task is not None:
            state = "TODO" if task["mark"] == " " else "DONE"
            item = {"type": "taskItem", "attrs": {"localId": str(len(content)), "state": state},
                    "content": [_text(task["text"])]}  # fmt: skip
            _append_item(content, "taskList", item)
        elif line.startswith("- "):
            _append_item(content, "bulletList", {"type": "listItem", "content": [_paragraph(line[2:])]})
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            content.append(
                {"type": "heading", "attrs": {"level": min(6, level)}, "content": [_text(line[level:].strip())]}
            )
        else:
            content.append(_paragraph(line))
    return {"type": "doc", "version": 1, "content": content}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _paragraph(text: str) -> dict[str, Any]:
    return {"type": "paragraph", "content": [_text(text)]}


def _append_item(content: list[dict[str, Any]], kind: str, item: dict[str, Any]) -> None:
    if not content or content[-1]["type"] != kind:
        content.append({"type": kind, "content": []})
    content[-1]["content"].append(item)


class FakeJira(LoopbackServer):
    """Jira's issue endpoint (v2 and v3) with a bearer token, or basic auth when an ``email`` is given (Jira Cloud);
    see the module docstring."""

    thread_name = "fake-jira"

    def __init__(self, *, token: str = "jira-token", email: str | None = None) -> None:
        self.token = token
        self.email = email
        pair = f"{email}:{token}".encode()
        self._accepted = f"Basic {base64.b64encode(pair).decode()}" if email else f"Bearer {token}"
        self._issues: dict[str, tuple[str, str]] = {}
        self._requests: list[JiraRequest] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                status, body = outer._answer(self.path, self.headers.get("authorization"))
                self.send_body(status, "application/json;charset=UTF-8", json.dumps(body).encode())

        super().__init__(Handler)

    def add_issue(self, key: str, summary: str, description: str) -> None:
        """An issue: its summary and its description (text; v3 serves it as a document)."""
        with self._lock:
            self._issues[key] = (summary, description)

    def url_template(self, *, version: int = 2) -> str:
        """The ``issue_tracker_url`` that reads this fake over REST ``version`` (2 or 3)."""
        return f"{self.origin}/rest/api/{version}/issue/{{key}}"

    @property
    def requests(self) -> list[JiraRequest]:
        with self._lock:
            return list(self._requests)

    def _answer(self, target: str, authorization: str | None) -> tuple[int, Any]:
        path = unquote(urlsplit(target).path)
        given = "none" if not authorization else "right" if authorization == self._accepted else "wrong"
        status, body = self._issue(path, given)
        scheme = (authorization or "").partition(" ")[0].lower()
        with self._lock:
            self._requests.append(JiraRequest(path, given, status, scheme))
        return status, body

    def _issue(self, path: str, given: str) -> tuple[int, Any]:
        if given != "right":
            return 401, {
                "errorMessages": ["You are not authenticated. Authentication required to perform this operation."]
            }
        match = _PATH.match(path)
        with self._lock:
            found = self._issues.get(match["key"]) if match is not None else None
        if match is None or found is None:
            return 404, {
                "errorMessages": ["Issue does not exist or you do not have permission to see it."],
                "errors": {},
            }
        summary, description = found
        served: Any = description if match["version"] == "2" else document(description)
        key = match["key"]
        return 200, {"id": str(10_000 + len(key)), "key": key, "self": f"{self.origin}{path}",
                     "fields": {"summary": summary, "description": served}}  # fmt: skip
