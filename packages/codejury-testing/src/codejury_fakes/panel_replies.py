"""Healthy provider replies for a panel of reviewers, keyed by model name ``REVIEWER-x``.

Used with ``FakeProviderServer.script_source`` by the fault tests and ``make chaos``: each
reviewer finds one problem of its own in ``PATH`` (the lines match the ``AUTH_NEW`` sample
change of codejury's test suite, ``tests/engine_helpers.py``), on its own line with its own
title, so deduplication keeps one finding per reviewer; the coordinator keeps everything.
"""

from __future__ import annotations

from codejury_fakes.provider_wire import Reply, ToolCallReply

PATH = "app/auth/users.py"
REVIEWERS = ("security", "performance", "code_quality", "documentation")
LINES = {"security": 10, "performance": 11, "code_quality": 14, "documentation": 9}
TITLES = {
    "security": "SQL built from user input",
    "performance": "Query result fetched without a limit",
    "code_quality": "Live key committed in code",
    "documentation": "find_user has no docstring",
}


def healthy(index: int, model: str | None) -> Reply:
    """The reply of model ``REVIEWER-x`` (or ``coordinator-x``) when nothing goes wrong."""
    name = (model or "").rsplit("-", 1)[0]
    if name == "coordinator":
        return ToolCallReply([("final_result", {"decisions": []})])
    line = LINES.get(name, 12)
    finding = {
        "category": name,
        "severity": "warning",
        "path": PATH,
        "start_line": line,
        "end_line": line,
        "title": TITLES.get(name, f"{name} problem"),
        "body": f"Found by {name}.",
        "confidence": 0.9,
    }
    return ToolCallReply([("final_result", {"findings": [finding]})])
