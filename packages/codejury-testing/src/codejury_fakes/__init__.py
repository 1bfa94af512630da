"""codejury's stateful fakes, for its own tests and benchmarks and for users' tests of their setup.

A separate distribution (``codejury-testing``, installed by ``make install`` and the development setup), so a
production install of codejury carries none of it:

- ``provider_server``: ``FakeProviderServer``, a real HTTP server on 127.0.0.1 speaking the
  OpenAI Chat Completions and Anthropic Messages wire formats, with scripted replies and faults
  (``provider_wire``: the replies; ``panel_replies``: healthy replies for a panel of reviewers;
  ``embeddings_wire``: ``/embeddings`` and ``/rerank``);
- ``gitlab``, ``github``: ``FakeGitLab`` and ``FakeGitHub``, stateful forges on loopback that
  refuse what the real ones refuse (``git_http``: their git smart-HTTP side);
- ``routing_server``: a remote routing document server and the ways it goes wrong;
- ``bedrock``, ``vertex``, ``azure_openai``: ``FakeBedrock`` (SigV4-checked Converse / ConverseStream),
  ``FakeVertex`` (Gemini with its own OAuth token endpoint) and ``FakeAzureOpenAI`` (deployments, api-version,
  api-key), each refusing what the cloud refuses (``cloud_server``: what the first two share);
- ``loopback``: what every fake server shares (a free loopback port, a daemon thread).

The names below are loaded on first use, so ``from codejury_fakes import FakeGitLab`` does not
import the model layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codejury.testing import lazy_exports

if TYPE_CHECKING:
    from codejury_fakes.azure_openai import FakeAzureOpenAI
    from codejury_fakes.bedrock import FakeBedrock
    from codejury_fakes.github import FakeGitHub
    from codejury_fakes.gitlab import FakeGitLab
    from codejury_fakes.loopback import LoopbackServer
    from codejury_fakes.provider_server import (
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
    from codejury_fakes.routing_server import RoutingServer
    from codejury_fakes.vertex import FakeVertex

_HOMES = {
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
    "bedrock": ("FakeBedrock",),
    "vertex": ("FakeVertex",),
    "azure_openai": ("FakeAzureOpenAI",),
}
_MODULE_OF = {name: f"{__name__}.{module}" for module, names in _HOMES.items() for name in names}

__all__ = [
    "DropReply",
    "ErrorReply",
    "FakeAzureOpenAI",
    "FakeBedrock",
    "FakeGitHub",
    "FakeGitLab",
    "FakeProviderServer",
    "FakeVertex",
    "HangReply",
    "LoopbackServer",
    "MalformedReply",
    "RandomFaults",
    "RecordedRequest",
    "Reply",
    "RoutingServer",
    "SlowDripReply",
    "TextReply",
    "TokenUsage",
    "ToolCallReply",
]


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, __all__)
