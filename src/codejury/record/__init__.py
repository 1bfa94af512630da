"""The record stage: JSONL event stream, token usage and cost."""

from __future__ import annotations

from codejury.record.events import EventLog

__all__ = ["EventLog"]
