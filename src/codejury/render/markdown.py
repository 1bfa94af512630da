"""Reviews and plans as markdown: the summary comment a forge shows and ``--format markdown`` prints.

Model-written text (summary, titles, bodies, suggestions, error messages) passes through
``clean_text``; titles and table cells are collapsed to one line; code goes in fences longer
than any backtick run it contains, so a model cannot close them early.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from codejury.findings import Criterion, Finding, Plan, Review, ReviewerReport, SkippedFile, Verdict, Walkthrough
from codejury.render import (
    SEVERITY_LABELS,
    clean_text,
    counted,
    format_cost,
    format_duration,
    format_tokens,
    grounding_note,
    group_by_section,
    injection_note,
    injection_places,
    location,
    one_line,
    remembered_note,
    remembered_places,
)

VERDICT_HEADLINES: dict[Verdict, str] = {
    "approved": "Approved",
    "approved_with_comments": "Approved with comments",
    "significant_concerns": "Significant concerns",
    "requested_changes": "Changes requested",
    "not_reviewed": "Not reviewed",
}
_BACKTICKS = re.compile(r"`+")


def _longest_backtick_run(text: str) -> int:
    return max((len(m) for m in _BACKTICKS.findall(text)), default=0)


def fenced(text: str, info: str = "") -> str:
    """``text`` in a backtick fence longer than any backtick run inside it."""
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


def code_span(text: str) -> str:
    """``text`` as inline code, safe whatever backticks it holds."""
    text = one_line(text)
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _cell(text: str) -> str:
    return one_line(text).replace("|", "\\|")


def _finding(f: Finding) -> list[str]:
    label = SEVERITY_LABELS.get(f.severity, f.severity.title())
    lines = [f"**{label}** · {code_span(location(f))} · **{one_line(f.title)}**", ""]
    body = clean_text(f.body).strip()
    if body:
        lines += [body, ""]
    lines += [f"_{grounding_note(f)}_", ""]
    if f.suggestion is not None and f.suggestion.strip():
        lines += ["Suggested change:", "", fenced(clean_text(f.suggestion)), ""]
    return lines


def _failed(review: Review) -> list[ReviewerReport]:
    reports = [r for r in review.reviewers if r.status == "failed"]
    if review.coordinator is not None and review.coordinator.status == "failed":
        reports.append(review.coordinator)
    return reports


def _details(title: str, items: list[str]) -> list[str]:
    return ["<details>", f"<summary>{title}</summary>", "", *items, "", "</details>", ""] if items else []


def _skipped(skipped: list[SkippedFile], *, open_: bool = False) -> list[str]:
    if not skipped:
        return []
    lines = ["<details open>" if open_ else "<details>", f"<summary>Skipped files ({len(skipped)})</summary>", ""]
    lines += [f"- {code_span(s.path)}: {one_line(s.reason)}" for s in skipped]
    return [*lines, "", "</details>", ""]


def _usage_table(review: Review) -> list[str]:
    reports = [*review.reviewers, *([review.coordinator] if review.coordinator is not None else [])]
    if not reports:
        return []
    lines = [
        "<details>",
        "<summary>Reviewers and usage</summary>",
        "",
        "| Reviewer | Model | Status | Tokens | Cost | Time |",
        "|---|---|---|---|---|---|",
    ]
    for r in reports:
        lines.append(
            f"| {_cell(r.name)} | {_cell(r.model)} | {r.status} | {_cell(format_tokens(r.usage()))} "
            f"| {format_cost(r.cost_usd)} | {format_duration(r.duration_s)} |"
        )
    if (w := review.walkthrough) is not None:
        lines.append(
            f"| walkthrough | {_cell(w.model or 'none: listed from the diff')} | ok | {_cell(format_tokens(w.usage))} "
            f"| {format_cost(w.usage.cost_usd)} | {format_duration(w.usage.duration_s)} |"
        )
    return [*lines, "", "</details>", ""]


def walkthrough_lines(
    walkthrough: Walkthrough | None,
    *,
    text: Callable[[str], str] | None = None,
    cell: Callable[[str], str] | None = None,
    code: Callable[[str], str] = code_span,
    fence: Callable[[str, str], str] = fenced,
) -> list[str]:
    """The walkthrough: its summary, the changed files by purpose and its diagram (a ``mermaid`` fence).

    ``text``, ``cell``, ``code`` and ``fence`` make its model-written text safe where it goes (``--format
    markdown`` by default; the forge's summary comment passes the publishing checks' own)."""
    if walkthrough is None:
        return []
    text = text or (lambda t: one_line(clean_text(t)))
    cell = cell or (lambda t: _cell(clean_text(t)))
    lines = ["### Walkthrough", "", text(walkthrough.summary), ""]
    if (provenance := walkthrough_provenance(walkthrough)) is not None:
        lines += [f"_{text(provenance)}_", ""]
    if walkthrough.groups:
        lines += ["| Purpose | File | Change |", "|---|---|---|"]
        for group in walkthrough.groups:
            for i, file in enumerate(group.files):
                purpose = cell(group.purpose) if i == 0 else ""
                lines.append(f"| {purpose} | {code(file.path)} | {cell(file.line)} |")
        lines.append("")
    if walkthrough.diagram:
        lines += [fence(walkthrough.diagram, "mermaid"), ""]
    return lines


FROM_THE_DIFF = (
    "Listed from the diff by codejury, without a model (the coordinator's model is weak, and its summaries of a "
    "change were not reliable): the names are the definitions the patches add, change and remove, the diagram the "
    "calls its added lines make to definitions it adds; the title is the author's."
)


def walkthrough_provenance(walkthrough: Walkthrough) -> str | None:
    """Who wrote the walkthrough, and how far it was checked (a reader weighs a summary by it)."""
    if walkthrough.source == "diff":
        return FROM_THE_DIFF
    if not walkthrough.model:
        return None
    model = walkthrough.model
    return f"Written by {model}; the code and files it names are checked against the diff, its claims are not."


CRITERIA_HEADING = "### Acceptance criteria of the linked issues"
NOT_JUDGED = "could not judge: no reviewer raised it and the diff does not show it met; check it by hand"


def criterion_verdict(criterion: Criterion) -> str:
    """What the review says of ``criterion``, in words (before the place's own escaping)."""
    if criterion.status == "unmet":
        return "not met: " + "; ".join(criterion.cited_by)
    if criterion.status == "met":
        return "met: " + criterion.evidence
    return NOT_JUDGED


def criteria_lines(criteria: list[Criterion], *, cell: Callable[[str], str] | None = None) -> list[str]:
    """The linked issues' acceptance criteria, each with what the review says of it, as a table (``cell`` makes
    the untrusted text safe in a cell; the forge's summary passes its own)."""
    if not criteria:
        return []
    cell = cell or (lambda t: _cell(clean_text(t)))
    counts = {s: sum(1 for c in criteria if c.status == s) for s in ("unmet", "met", "not_judged")}
    lines = [
        CRITERIA_HEADING,
        "",
        f"{counts['unmet']} not met, {counts['met']} met, {counts['not_judged']} not judged.",
        "",
        "| Issue | Criterion | Review |",
        "|---|---|---|",
    ]
    lines += [f"| {cell(c.issue)} | {cell(c.text)} | {cell(criterion_verdict(c))} |" for c in criteria]
    return [*lines, ""]


def render_review_markdown(review: Review) -> str:
    """The review as one markdown comment: verdict, summary, findings by section, caveats, usage."""
    headline = VERDICT_HEADLINES.get(review.verdict, review.verdict)
    lines = ["## codejury review", "", f"**Verdict: {headline}**", ""]
    summary = clean_text(review.summary).strip()
    if summary:
        lines += [summary, ""]
    if review.break_glass:
        lines += ["> **Break glass:** a human override forced approval; the findings below still stand.", ""]
    lines += walkthrough_lines(review.walkthrough)
    lines += criteria_lines(review.criteria)
    if not review.judged:
        lines += [
            "> **Unjudged:** the coordinator could not run, so these findings are shown as the reviewers "
            "reported them (not checked for false positives), and the review does not approve on its own.",
            "",
        ]
    unreviewed = review.verdict == "not_reviewed"
    if unreviewed and review.refused is not None:
        lines += [
            "> **Not reviewed:** no model was called for this change (the reason is above), so it has no "
            "findings and is not approved. A human should review it.",
            "",
        ]
    elif unreviewed and review.skipped_files:
        lines += [
            "> **Not reviewed:** no model looked at this change (see the skipped files below), so it has no "
            "findings and is not approved. A human should review it.",
            "",
        ]
    if review.findings:
        for title, findings in group_by_section(review.findings):
            lines += [f"### {_cell(title)} ({len(findings)})", ""]
            for f in findings:
                lines += _finding(f)
    elif not unreviewed:
        lines += ["No findings.", ""]
    failed = _failed(review)
    if failed:
        lines += ["### Reviewers that failed", ""]
        lines += [
            f"- **{_cell(r.name)}** ({code_span(r.model)}): {one_line(r.error or 'no reason given')}" for r in failed
        ]
        lines.append("")
    if review.dropped_findings:
        total = sum(review.dropped_findings.values())
        parts = ", ".join(f"{one_line(k)}: {v}" for k, v in sorted(review.dropped_findings.items()))
        lines += [f"{counted(total, 'finding')} dropped ({parts}).", ""]
    if (remembered := remembered_note(review)) is not None:
        lines += [remembered, "", *_details("Dismissed before", [f"- {p}" for p in remembered_places(review)])]
    if review.tests:
        lines += ["### Tests", "", f"- {one_line(review.tests)}", ""]
    if review.notes:
        lines += ["### Notes", "", *[f"- {one_line(n)}" for n in review.notes], ""]
    if (injected := injection_note(review)) is not None:
        lines += [injected, "", *_details("Where", [f"- {code_span(p)}" for p in injection_places(review)])]
    if review.cut_files:
        shown = ", ".join(code_span(p) for p in review.cut_files[:20])
        more = f" and {len(review.cut_files) - 20} more" if len(review.cut_files) > 20 else ""
        lines += [
            f"Cut to fit the model's context (reviewers saw part or none of these): {shown}{more}.",
            "",
        ]
    lines += _skipped(review.skipped_files, open_=unreviewed)
    lines += _usage_table(review)
    u = review.usage
    lines.append(
        f"<sub>codejury · tier {review.tier} · {format_tokens(u)} tokens · {format_cost(u.cost_usd)} · "
        f"{format_duration(u.duration_s)}</sub>"
    )
    return "\n".join(lines) + "\n"


def render_plan_markdown(plan: Plan) -> str:
    """The dry-run plan: tier, reviewers with their models and files, skipped files, estimates."""
    lines = [
        "## codejury plan (dry run)",
        "",
        f"**Tier:** {plan.tier}",
        "",
        "| Reviewer | Model | Files |",
        "|---|---|---|",
    ]
    for r in plan.reviewers:
        files = ", ".join(code_span(p).replace("|", "\\|") for p in r.files)
        lines.append(f"| {_cell(r.name)} | {_cell(r.model)} | {len(r.files)}{': ' + files if files else ''} |")
    lines += ["", f"**Coordinator:** {code_span(plan.coordinator_model)}", ""]
    if plan.model_problems:
        lines += ["**Cannot run here:**", ""]
        lines += [f"- {code_span(m)}: {one_line(why)}" for m, why in sorted(plan.model_problems.items())] + [""]
    if plan.refusal is not None:
        lines += [f"**Would be refused now:** {one_line(plan.refusal)}; no model would be called.", ""]
    if not plan.reviewers:
        lines += [
            "**Nothing to review:** no reviewer would run (every changed file is skipped, or no reviewer is "
            "enabled), so no model is called and the review's verdict would be *not reviewed*.",
            "",
        ]
    lines += _skipped(plan.skipped_files, open_=not plan.reviewers)
    lines.append(
        f"**Estimate:** {plan.estimated_input_tokens:,} input tokens, about {format_cost(plan.estimated_cost_usd)}."
    )
    if plan.estimate_notes:
        lines += ["", *(f"- {one_line(note)}" for note in plan.estimate_notes)]
    return "\n".join(lines) + "\n"
