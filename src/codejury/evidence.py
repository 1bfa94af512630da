"""Evidence: what an analyzer (a linter, a type checker, a scanner) found in a change.

Analyzers are registered through the ``codejury_register_analyzers`` hook; each is an object
with ``async analyze(change) -> list[Evidence]``. Reviewers and the judge read evidence as
facts about the change, so every item names the exact lines it is about.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from codejury.findings import Severity


class Evidence(BaseModel):
    """One fact an analyzer established about the changed code."""

    model_config = ConfigDict(frozen=True)

    analyzer: str = Field(description="Name the analyzer was registered under, e.g. 'ruff'.")
    rule: str = Field(description="The analyzer's own rule id, e.g. 'F401'.")
    path: str = Field(description="Path of the file, relative to the repository root.")
    start_line: int = Field(ge=1, description="First line on the new side of the file.")
    end_line: int = Field(ge=1, description="Last line on the new side (equal to start_line for one line).")
    severity: Severity
    message: str = Field(description="What the analyzer says, in one or a few lines.")
    fix: str | None = Field(default=None, description="Replacement text for the lines, when the analyzer has one.")

    @model_validator(mode="after")
    def _lines_in_order(self) -> Evidence:
        if self.end_line < self.start_line:
            raise ValueError(f"end_line {self.end_line} is before start_line {self.start_line}")
        return self
