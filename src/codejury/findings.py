"""Findings, reviews and plans: the JSON contract that renderers, CI users and forges rely on."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Severity = Literal["critical", "warning", "suggestion"]
Verdict = Literal["approved", "approved_with_comments", "significant_concerns", "requested_changes", "not_reviewed"]
"""``not_reviewed``: no model looked at any changed file (all skipped as noise, or no reviewer ran);
never an approval, and outside the approval scale that ``VERDICT_RANK`` orders."""
Tier = Literal["trivial", "lite", "full"]
ReviewerStatus = Literal["ok", "failed", "skipped"]

SEVERITY_RANK: dict[str, int] = {"suggestion": 1, "warning": 2, "critical": 3}
VERDICT_RANK: dict[str, int] = {
    "approved": 0,
    "approved_with_comments": 1,
    "significant_concerns": 2,
    "requested_changes": 3,
}


class FindingDraft(BaseModel):
    """One finding as a reviewer model returns it (the engine adds id and reviewer)."""

    category: str = Field(description="Short category, e.g. 'sql-injection', 'n+1-query', 'stale-docstring'.")
    severity: Severity = Field(
        description="critical = outage or exploitable; warning = measurable regression or concrete risk; "
        "suggestion = worth considering."
    )
    path: str = Field(description="Path of the changed file, exactly as in the change's file list.")
    start_line: int = Field(ge=1, description="First line on the NEW side of the file.")
    end_line: int | None = Field(default=None, ge=1, description="Last line on the new side (defaults to start_line).")
    title: str = Field(description="One-line summary of the problem.")
    body: str = Field(description="Why this is a problem and what to do, in a few sentences.")
    suggestion: str | None = Field(default=None, description="Optional replacement code for the lines.")
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are, 0 to 1.")

    @field_validator("confidence", mode="before")
    @classmethod
    def _percent_to_fraction(cls, value: object) -> object:
        """Small models often answer a percentage (90) where a fraction (0.9) is asked for."""
        if isinstance(value, int | float) and 1 < value <= 100:
            return value / 100
        return value


class ReviewerOutput(BaseModel):
    """What a reviewer returns: its findings, possibly none."""

    findings: list[FindingDraft] = Field(default_factory=list)


INLINE_MAX_FINDINGS = 3
"""The most findings one reviewer answering inline (a small local model) may return: the grammar enforces it.

Measured on the golden set: the embedded model returned up to 9 findings on a one-problem change, each
costing ~5 s to write and ~3 s to check, and the extra ones were noise."""


class NotedReviewerOutput(BaseModel):
    """Reviewer output for small models answering JSON inline: short notes first, then findings.

    Writing the notes before the findings lets a small model look at the lines before the
    grammar makes it commit to a list; the notes are discarded.
    """

    notes: str = Field(description="Short notes: each problem you see on a '+' line, with its line number.")
    findings: list[FindingDraft] = Field(max_length=INLINE_MAX_FINDINGS)

    def to_output(self) -> ReviewerOutput:
        return ReviewerOutput(findings=self.findings)


class Finding(BaseModel):
    """A finding in a published review."""

    model_config = ConfigDict(frozen=True)

    id: str
    reviewer: str
    category: str
    severity: Severity
    path: str
    start_line: int
    end_line: int
    title: str
    body: str
    suggestion: str | None = None
    confidence: float
    evidence: list[str] = Field(default_factory=list)
    """The analyzer rules that back the finding, as ``analyzer:rule`` (e.g. ``ruff:S608``)."""
    verified: bool | None = None
    """True: a separate verification call confirmed the claim on its code; False: its check said it does not
    hold, and it is published anyway (held security evidence); None: not checked, or the check failed."""
    advisory: bool = False
    """Published, but never counted toward a blocking verdict: a weak model's claim nothing verified."""
    withholds_approval: bool = False
    """Held: analyzer evidence of a security problem that a model rejected, dropped, downgraded or could not
    check. It is published at the analyzer's severity and the verdict is at least ``significant_concerns``
    until a person with write access dismisses it (``won't fix``, an accepted dispute, break glass)."""


class Usage(BaseModel):
    """Token usage, cost and time; adds up across requests, reviewers and models."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=round(self.cost_usd + other.cost_usd, 6),
            duration_s=round(self.duration_s + other.duration_s, 3),
        )

    def usage(self) -> Usage:
        """The usage alone, without what a subclass adds (a reviewer's name, a record's change)."""
        return Usage.model_validate({name: getattr(self, name) for name in Usage.model_fields})


class ReviewerReport(Usage):
    """How one reviewer (or the coordinator) ran: its usage, and its name, model, status and error."""

    name: str
    model: str
    status: ReviewerStatus
    error: str | None = None

    @classmethod
    def from_usage(
        cls, name: str, model: str, status: ReviewerStatus, usage: Usage, error: str | None = None
    ) -> ReviewerReport:
        return cls(name=name, model=model, status=status, error=error, **usage.usage().model_dump())


class SkippedFile(BaseModel):
    """A changed file no model sees, with the reason."""

    path: str
    reason: str


class Disagreement(BaseModel):
    """A human reply in one of the bot's threads that disputes the finding (re-review on a forge)."""

    model_config = ConfigDict(frozen=True)

    thread_id: str
    fingerprint: str
    path: str
    start_line: int
    end_line: int
    title: str
    author: str
    reply: str


class ReplyVerdict(BaseModel):
    """The coordinator's answer to a Disagreement: resolve the thread, or answer once."""

    thread_id: str
    decision: Literal["resolve", "answer"]
    message: str


class SuspectedInjection(BaseModel):
    """A passage of what the review read that looks like instructions to the reviewer (``guardrails.injection``).

    It was read as data like everything else; it is logged and shown so that people see the attempt."""

    model_config = ConfigDict(frozen=True)

    source: str
    """Where the text came from: title, description, commit_message, comment, diff, tool_result, instructions."""
    place: str
    """Where in it: ``description line 3``, ``src/app.py:12``, ``read_file docs/x.md line 4``."""
    rule: str
    excerpt: str
    """A short excerpt on one line, invisible characters written as ``<U+XXXX>``, secrets scrubbed."""


class WalkthroughFile(BaseModel):
    """One changed file in the walkthrough, with one line on what its change does."""

    path: str
    line: str


class WalkthroughGroup(BaseModel):
    """Changed files that serve one purpose."""

    purpose: str
    files: list[WalkthroughFile] = Field(default_factory=list)


class Walkthrough(BaseModel):
    """What the change does and why, its files grouped by purpose, and a Mermaid diagram of a new or rerouted
    flow between components. Every statement was checked against the diff: one naming a file the change does not
    touch, or a name the diff does not show, was left out (``unsupported`` counts them)."""

    summary: str
    groups: list[WalkthroughGroup] = Field(default_factory=list)
    diagram: str | None = None
    """Mermaid source (``sequenceDiagram`` or ``flowchart``), or None when the change reroutes no flow."""
    model: str = ""
    source: Literal["model", "diff"] = "model"
    """Who wrote it: the coordinator's ``model``, or codejury from the diff alone (``diff``: on a weak model,
    ``stages.outline``; ``model`` is then empty)."""
    unsupported: int = 0
    """Statements of the model's draft left out because the diff does not support them."""
    usage: Usage = Field(default_factory=Usage)
    """What writing it cost (in the review's usage too)."""
    criteria_met: dict[int, str] = Field(default_factory=dict)
    """The linked issues' acceptance criteria (by number, from 1) the model showed met, each with its evidence,
    checked against the diff (``Review.criteria`` reads it; not shown on its own)."""


CriterionStatus = Literal["unmet", "met", "not_judged"]


class Criterion(BaseModel):
    """An acceptance criterion of a linked issue, and what the review said of it: ``unmet`` when a finding cites
    it, ``met`` when the walkthrough showed where the diff meets it, else ``not_judged`` (nobody could say)."""

    issue: str
    text: str
    status: CriterionStatus = "not_judged"
    cited_by: list[str] = Field(default_factory=list)
    """The findings that cite it, as ``path:line title``."""
    evidence: str = ""
    """Where the diff meets it (``met``), in the walkthrough's words checked against the diff."""


class Remembered(BaseModel):
    """A finding whose rule and code match one a person with write access dismissed before in the same repository
    (``codejury.memory``): not published as new, or, for a security finding an analyzer backs, published anyway."""

    model_config = ConfigDict(frozen=True)

    finding: Finding
    dismissed_in: str
    """Where it was dismissed: the change's id on its forge (``!123``, ``#45``), which the forge links."""
    dismissed_by: str = ""
    """Who dismissed it; empty when the forge did not name them."""
    how: str = ""
    """``won't fix``, ``resolved``, ``dispute accepted``."""
    dismissed_at: str = ""
    """When the dismissal was recorded (ISO 8601 date, UTC)."""
    suppressed: bool = True
    """False: a security finding an analyzer backs, published anyway and still withholding approval."""


class Review(BaseModel):
    """One complete review: what every renderer and publisher consumes."""

    verdict: Verdict
    tier: Tier
    summary: str
    findings: list[Finding] = Field(default_factory=list)
    reviewers: list[ReviewerReport] = Field(default_factory=list)
    coordinator: ReviewerReport | None = None
    skipped_files: list[SkippedFile] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    judged: bool = True
    break_glass: bool = False
    dropped_findings: dict[str, int] = Field(default_factory=dict)
    cut_files: list[str] = Field(default_factory=list)
    """Files whose patch was cut or left out of some reviewer's prompt to fit its model's context."""
    replies: list[ReplyVerdict] = Field(default_factory=list)
    """Decisions on human replies that disputed earlier findings (forge re-reviews only; not in the JSON)."""
    notes: list[str] = Field(default_factory=list)
    """One line each about what the review could not look at: analyzers skipped or failed, files left out."""
    tests: str | None = None
    """The CI job's test reports (``--tests``) in one line: how many tests ran and the failing ones by name (those
    covering a changed function first); None when no report was given."""
    below_threshold: list[Finding] = Field(default_factory=list)
    """Findings under the confidence threshold (``[confidence]``): not published, not counted toward the verdict,
    kept here (and in the JSON and the store) so that the threshold can be tuned."""
    suspected_injections: list[SuspectedInjection] = Field(default_factory=list)
    """Passages that look like instructions to the reviewer; they were read as data and change nothing."""
    approval_withheld: list[str] = Field(default_factory=list)
    """Why this review may not approve whatever its findings (a file skipped for a reason its author controls,
    a head tree that could not be read, models that all failed), one line each; the verdict is then at most
    ``significant_concerns``."""
    refused: str | None = None
    """Why no model was called: a daily cap reached or the kill switch (verdict ``not_reviewed``); in the JSON
    as the summary and a note."""
    remembered: list[Remembered] = Field(default_factory=list)
    """Findings that match a dismissal in this repository (``[memory]``): the suppressed ones are not published
    and not counted toward the verdict; all are in the JSON and the store."""
    walkthrough: Walkthrough | None = None
    """The change explained (``describe``); None when none was written, and a note says why."""
    criteria: list[Criterion] = Field(default_factory=list)
    """The linked issues' acceptance criteria and what the review said of each (none without linked issues)."""


class PlannedReviewer(BaseModel):
    """A reviewer in a dry-run plan."""

    name: str
    model: str
    files: list[str]


class Plan(BaseModel):
    """What a review would do, without calling any model (``--dry-run``)."""

    tier: Tier
    reviewers: list[PlannedReviewer]
    coordinator_model: str
    skipped_files: list[SkippedFile] = Field(default_factory=list)
    estimated_input_tokens: int
    estimated_cost_usd: float
    model_problems: dict[str, str] = Field(default_factory=dict)
    """Chosen models that could not run here, and why (a missing API key, an uninstalled runtime)."""
    refusal: str | None = None
    """Why a review run now would be refused (a daily cap reached, the kill switch); None: it would run."""
    estimate_notes: list[str] = Field(default_factory=list)
    """What the token estimate counts besides the prompts and patches, one line each (the failing tests of
    ``--tests``, the change's discussion on its forge)."""
