"""Issues of another tracker (Jira and the like), read by key through ``issue_tracker_url``.

``read_tracker_issues`` reads each key from the URL template (``{key}`` replaced, URL-quoted) with the token sent as
Jira takes it (``authorization_header``: ``email:api_token`` as basic auth for Jira Cloud, anything else as a bearer
personal access token for Jira Data Center and Server) to the template's own host only: a URL that would leave it is
not read, redirects are not followed, and the forge's token never goes there. The answer is read as Jira's REST API
gives it: ``fields.summary`` for the title and ``fields.description`` for the body, as text (REST v2) or as an
Atlassian Document Format tree (REST v3), whose text nodes are joined into lines (a list item as ``- ``, a task item
as ``- [ ]`` or ``- [x]``, so acceptance criteria read as they do on the page). What cannot be read is one note: a
refused token (401/403) or a tracker that does not answer stops the reading there, with one note for the keys left.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlsplit

import httpx2

from codejury.change.types import LinkedIssue
from codejury.tls import tls_context

TIMEOUT_S = 10.0
MAX_BYTES = 1_000_000
"""An answer larger than this is not read (an issue is a few kilobytes)."""
_BLOCK_BREAK = frozenset({"paragraph", "heading", "blockquote", "codeBlock", "rule", "panel", "listItem", "taskItem"})


def authorization_header(token: str) -> str:
    """``Basic`` with ``token`` base64-encoded when it is Jira Cloud's ``email:api_token`` (a colon with an ``@``
    before it and something after it), else ``Bearer`` with ``token`` (a Data Center personal access token)."""
    user, colon, secret = token.partition(":")
    if colon and "@" in user and secret:
        return "Basic " + base64.b64encode(token.encode()).decode()
    return f"Bearer {token}"


def issue_url(template: str, key: str) -> str | None:
    """``template`` with ``{key}`` replaced by ``key`` URL-quoted; None when it has no ``{key}`` or the result would
    leave its host."""
    if "{key}" not in template:
        return None
    url = template.replace("{key}", quote(key, safe=""))
    before, after = urlsplit(template.replace("{key}", "KEY")), urlsplit(url)
    same = (before.scheme, before.hostname, before.port) == (after.scheme, after.hostname, after.port)
    return url if same and after.scheme in ("http", "https") else None


def document_text(node: Any, depth: int = 0) -> str:
    """The text of an Atlassian Document Format node: its text nodes, one line per block, list items marked."""
    if not isinstance(node, dict):
        return ""
    kind = node.get("type")
    if kind == "text":
        return str(node.get("text") or "")
    if kind == "hardBreak":
        return "\n"
    children = [document_text(child, depth + 1) for child in node.get("content") or []]
    if kind in ("bulletList", "orderedList", "taskList"):
        return "\n".join(c for c in children if c.strip())
    text = "".join(children) if kind in ("paragraph", "heading") else "\n".join(c for c in children if c.strip())
    if kind == "heading":
        level = int((node.get("attrs") or {}).get("level") or 1)
        return "#" * max(1, min(6, level)) + " " + text
    if kind == "listItem":
        return "- " + text
    if kind == "taskItem":
        done = str((node.get("attrs") or {}).get("state") or "").upper() == "DONE"
        return ("- [x] " if done else "- [ ] ") + text
    return text


def issue_fields(data: Any) -> tuple[str, str] | None:
    """The title and body of a Jira issue answer (REST v2 or v3), or None when it is not one."""
    fields = data.get("fields") if isinstance(data, dict) else None
    if not isinstance(fields, dict):
        return None
    description = fields.get("description")
    body = description if isinstance(description, str) else document_text(description)
    return str(fields.get("summary") or ""), body.strip()


def _browse_url(template: str, key: str) -> str:
    parts = urlsplit(template)
    return f"{parts.scheme}://{parts.netloc}/browse/{quote(key, safe='')}"


async def read_tracker_issues(
    keys: Sequence[str],
    template: str,
    token: str | None,
    *,
    token_env: str | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> tuple[list[LinkedIssue], list[str]]:
    """The issues ``keys`` name, read from ``template`` with ``token`` (None: no credential sent), and one note for
    each that could not be read (one for all the keys left when the tracker refuses the token or does not answer)."""
    issues: list[LinkedIssue] = []
    notes: list[str] = []
    headers = {"accept": "application/json", "user-agent": "codejury"}
    if token:
        headers["authorization"] = authorization_header(token)
    refused = _refusal_hint(token, token_env)
    client = httpx2.AsyncClient(
        headers=headers, timeout=TIMEOUT_S, follow_redirects=False, transport=transport, verify=tls_context()
    )
    async with client:
        for index, key in enumerate(keys):
            url = issue_url(template, key)
            if url is None:
                notes.append(
                    f"issue {key} was not read: issue_tracker_url has no {{key}}, or the key would leave its host"
                )
                continue
            try:
                response = await client.get(url)
            except httpx2.HTTPError as exc:
                left = ", ".join(keys[index:])
                notes.append(f"the issue tracker did not answer ({type(exc).__name__}): {left} not read")
                break
            if response.status_code in (401, 403):
                left = ", ".join(keys[index:])
                notes.append(
                    f"the issue tracker refused the token ({response.status_code}, {refused}): {left} not read"
                )
                break
            if response.status_code != 200:
                why = "not found, or not visible to the token" if response.status_code == 404 else "error"
                notes.append(f"issue {key} could not be read: {why} ({response.status_code})")
                continue
            found = _fields_of(response)
            if found is None:
                notes.append(f"issue {key} could not be read: the tracker's answer is not a Jira issue")
                continue
            issues.append(LinkedIssue(ref=key, title=found[0], body=found[1], url=_browse_url(template, key)))
    return issues, notes


def _refusal_hint(token: str | None, token_env: str | None) -> str:
    """How the token went (never what it is) and where it comes from, for the note of a refusal."""
    where = f"the variable {token_env}" if token_env else "issue_tracker_token_env"
    if not token:
        return f"none was sent; set {where}"
    how = "basic auth (email:api_token)" if authorization_header(token).startswith("Basic ") else "a bearer token"
    return f"sent as {how}; check {where}"


def _fields_of(response: httpx2.Response) -> tuple[str, str] | None:
    if len(response.content) > MAX_BYTES:
        return None
    try:
        return issue_fields(response.json())
    except ValueError:
        return None
