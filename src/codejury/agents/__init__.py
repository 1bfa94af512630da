"""Reviewers as agents: the read-only repository tools they use."""

from __future__ import annotations

# Nothing is imported here: ``codejury.agents.tools`` (the tool names, read with the configuration) must not
# bring pydantic-ai in, so a review refused for bad input is answered before the model layer is imported.
