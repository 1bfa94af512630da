"""Reviewers as agents: the read-only repository tools they use."""

from __future__ import annotations

from codejury.agents.agent_tools import as_agent_tools
from codejury.agents.tools import TOOL_NAMES, RepoTools

__all__ = ["TOOL_NAMES", "RepoTools", "as_agent_tools"]
