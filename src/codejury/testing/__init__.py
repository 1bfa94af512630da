"""Test doubles for codejury and its plugins: a scripted model, a fake provider, fake forges.

They are part of the product (as pydantic-ai ships ``TestModel``), for codejury's own suite,
its benchmarks, and users' tests of their plugins and configuration; see ``docs/testing.md``.

- ``scripted``: ``ScriptedResolver`` plays scripted steps (``ToolCall``, ``Final``, ``Raw``,
  ``Fail``, ``Sleep``) as the model behind ``scripted:NAME`` model strings, in process;
- ``provider_server``: ``FakeProviderServer``, a real HTTP server on 127.0.0.1 speaking the
  OpenAI Chat Completions and Anthropic Messages wire formats, with scripted replies and faults
  (``provider_wire``: the replies; ``panel_replies``: healthy replies for a panel of reviewers);
- ``gitlab``, ``github``: ``FakeGitLab`` and ``FakeGitHub``, stateful forges on loopback that
  refuse what the real ones refuse;
- ``routing_server``: a remote routing document server and the ways it goes wrong;
- ``loopback``: what every fake server shares (a free loopback port, a daemon thread).
- ``postgres``: a real PostgreSQL server of its own in a temporary directory (not a fake), and
  ``scripted_worker``: a ``codejury worker`` process on the scripted model, for the distributed
  service's tests and benchmark (neither is among the names below).

Nothing in codejury itself imports this package, and ``import codejury`` does not load it. The
names below are loaded on first use, so ``from codejury.testing import FakeGitLab`` does not
import the model layer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codejury.testing.github import FakeGitHub
    from codejury.testing.gitlab import FakeGitLab
    from codejury.testing.loopback import LoopbackServer
    from codejury.testing.provider_server import (
        DropReply,
        ErrorReply,
        FakeProviderServer,
        HangReply,
        MalformedReply,
        RandomFaults,
        RecordedRequest,
        Reply,
        SlowDripReply,
        TextReply,
        TokenUsage,
        ToolCallReply,
    )
    from codejury.testing.routing_server import RoutingServer
    from codejury.testing.scripted import (
        Fail,
        Final,
        Raw,
        ScriptedModel,
        ScriptedResolver,
        Sleep,
        Step,
        ToolCall,
        finding,
    )

_HOMES = {
    "scripted": (
        "Fail",
        "Final",
        "Raw",
        "ScriptedModel",
        "ScriptedResolver",
        "Sleep",
        "Step",
        "ToolCall",
        "finding",
    ),
    "provider_server": (
        "DropReply",
        "ErrorReply",
        "FakeProviderServer",
        "HangReply",
        "MalformedReply",
        "RandomFaults",
        "RecordedRequest",
        "Reply",
        "SlowDripReply",
        "TextReply",
        "TokenUsage",
        "ToolCallReply",
    ),
    "gitlab": ("FakeGitLab",),
    "github": ("FakeGitHub",),
    "routing_server": ("RoutingServer",),
    "loopback": ("LoopbackServer",),
}
_MODULE_OF = {name: f"{__name__}.{module}" for module, names in _HOMES.items() for name in names}

__all__ = [
    "DropReply",
    "ErrorReply",
    "Fail",
    "FakeGitHub",
    "FakeGitLab",
    "FakeProviderServer",
    "Final",
    "HangReply",
    "LoopbackServer",
    "MalformedReply",
    "RandomFaults",
    "Raw",
    "RecordedRequest",
    "Reply",
    "RoutingServer",
    "ScriptedModel",
    "ScriptedResolver",
    "Sleep",
    "SlowDripReply",
    "Step",
    "TextReply",
    "TokenUsage",
    "ToolCall",
    "ToolCallReply",
    "finding",
]


def __getattr__(name: str) -> Any:
    """Import the module that defines ``name`` on first use."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
