"""Reviewers as agents: the read-only repository tools they use."""

from __future__ import annotations

from codejury.agents.tools import TOOL_NAMES, RepoTools, as_agent_tools

__all__ = ["TOOL_NAMES", "RepoTools", "as_agent_tools"]
