"""A plugin whose one analyzer always fails: a review loading it must say so wherever it is shown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from codejury.plugin import ChangeSet, Evidence, hookimpl

REASON = "the parser crashed on line 3"
LINE = f"analyzer crashing failed, its evidence is left out: {REASON}"
"""The one line every output format and the forge summary must carry."""


class CrashingAnalyzer:
    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        raise RuntimeError(REASON)


@hookimpl
def codejury_register_analyzers(register: Callable[[str, Any], None]) -> None:
    register("crashing", CrashingAnalyzer())
