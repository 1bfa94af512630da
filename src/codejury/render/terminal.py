"""Reviews and plans for a terminal, with rich.

Model-written text goes through ``clean_text`` (no terminal escapes or bidi overrides reach the
screen) and is only ever placed in ``rich.text.Text`` objects, never in markup strings, so no
``[bold]``-style markup or ``:emoji:`` code in it is interpreted (``rich.markup.escape`` where a
markup string is unavoidable).
"""

from __future__ import annotations

from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from codejury.findings import Finding, Plan, Review, ReviewerReport, Verdict, Walkthrough
from codejury.render import (
    SEVERITY_LABELS,
    clean_text,
    coverage_lines,
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
from codejury.render.markdown import VERDICT_HEADLINES, criterion_verdict, walkthrough_provenance

VERDICT_STYLES: dict[Verdict, str] = {
    "approved": "bold green",
    "approved_with_comments": "bold green",
    "significant_concerns": "bold yellow",
    "requested_changes": "bold red",
    "not_reviewed": "bold yellow",
}
SEVERITY_STYLES: dict[str, str] = {"critical": "bold red", "warning": "yellow", "suggestion": "cyan"}


def _finding(f: Finding) -> RenderableType:
    label = SEVERITY_LABELS.get(f.severity, f.severity.title())
    head = Text.assemble(
        (f"{label:<10}", SEVERITY_STYLES.get(f.severity, "")),
        " ",
        (one_line(location(f)), "bold"),
        "  ",
        one_line(f.title),
    )
    parts: list[RenderableType] = [head]
    body = clean_text(f.body).strip()
    if body:
        parts.append(Text(body, style="default"))
    parts.append(Text(grounding_note(f), style="dim italic"))
    if f.suggestion is not None and f.suggestion.strip():
        parts.append(Text("Suggested change:", style="dim"))
        parts.append(Panel(Text(clean_text(f.suggestion).rstrip("\n")), box=box.SIMPLE, padding=(0, 1), expand=False))
    return Group(*parts, Text(""))


def _usage_table(reports: list[ReviewerReport]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("Reviewer", "Model", "Status", "Tokens", "Cost", "Time"):
        table.add_column(column, justify="right" if column in ("Cost", "Time") else "left")
    for r in reports:
        status_style = {"ok": "green", "failed": "red"}.get(r.status, "dim")
        table.add_row(
            Text(one_line(r.name)),
            Text(one_line(r.model)),
            Text(r.status, style=status_style),
            format_tokens(r.usage()),
            format_cost(r.cost_usd),
            format_duration(r.duration_s),
        )
    return table


def render_walkthrough_terminal(walkthrough: Walkthrough, console: Console) -> None:
    """The walkthrough: its summary, the changed files by purpose, and its diagram's Mermaid source."""
    console.rule(Text("Walkthrough", style="bold"), align="left")
    console.print(Text(one_line(clean_text(walkthrough.summary))))
    if (provenance := walkthrough_provenance(walkthrough)) is not None:
        console.print(Text(one_line(clean_text(provenance)), style="dim"))
    for group in walkthrough.groups:
        console.print(Text(one_line(clean_text(group.purpose)), style="bold"))
        for file in group.files:
            console.print(Text.assemble("  ", (one_line(file.path), "cyan"), ": ", one_line(clean_text(file.line))))
    if walkthrough.diagram:
        console.print(Text(clean_text(walkthrough.diagram), style="dim"))


def render_criteria_terminal(review: Review, console: Console) -> None:
    """The linked issues' acceptance criteria, each with what the review says of it."""
    if not review.criteria:
        return
    console.rule(Text("Acceptance criteria of the linked issues", style="bold"), align="left")
    styles = {"unmet": "red", "met": "green", "not_judged": "yellow"}
    for c in review.criteria:
        verdict = one_line(clean_text(criterion_verdict(c)))
        console.print(Text.assemble((f"{one_line(c.issue)} ", "cyan"), one_line(clean_text(c.text)), ": ",
                                    (verdict, styles[c.status])))  # fmt: skip


def render_review_terminal(review: Review, console: Console) -> None:
    """Print the review: a verdict panel, findings by section, caveats and usage."""
    verdict = VERDICT_HEADLINES.get(review.verdict, review.verdict)
    header: list[RenderableType] = [
        Text(f"Verdict: {verdict}", style=VERDICT_STYLES.get(review.verdict, "bold")),
        Text(clean_text(review.summary).strip()),
    ]
    if review.break_glass:
        header.append(Text("Break glass: a human override forced approval; the findings still stand.", "magenta"))
    if not review.judged:
        header.append(
            Text(
                "Unjudged: the coordinator could not run; findings are as the reviewers reported them.",
                "yellow",
            )
        )
    unreviewed = review.verdict == "not_reviewed"
    if unreviewed and review.refused is not None:
        header.append(
            Text(
                "Not reviewed: no model was called for this change (the reason is above); nothing is approved.",
                "yellow",
            )
        )
    elif unreviewed:
        header.append(
            Text(
                "Not reviewed: no model looked at this change (skipped files below); nothing is approved. "
                "A human should review it.",
                "yellow",
            )
        )
    console.print(Panel(Group(*header), title=f"codejury review · tier {review.tier}", title_align="left"))
    if review.walkthrough is not None:
        render_walkthrough_terminal(review.walkthrough, console)
    render_criteria_terminal(review, console)
    if not review.findings and not unreviewed:
        console.print("No findings.")
    for title, findings in group_by_section(review.findings):
        console.rule(Text(f"{one_line(title)} ({len(findings)})", style="bold"), align="left")
        for f in findings:
            console.print(_finding(f))
    failed = [r for r in review.reviewers if r.status == "failed"]
    if review.coordinator is not None and review.coordinator.status == "failed":
        failed.append(review.coordinator)
    for r in failed:
        console.print(
            Text.assemble(
                ("Failed: ", "bold red"),
                one_line(r.name),
                f" ({one_line(r.model)}): ",
                one_line(r.error or "no reason given"),
            )
        )
    if review.dropped_findings:
        parts = ", ".join(f"{one_line(k)}: {v}" for k, v in sorted(review.dropped_findings.items()))
        console.print(Text(f"Dropped findings: {parts}", style="dim"))
    if (remembered := remembered_note(review)) is not None:
        console.print(Text(remembered, style="dim"))
        for place in remembered_places(review):
            console.print(Text(f"  {place}", style="dim"))
    if review.tests:
        console.print(Text.assemble(("Tests: ", "bold"), one_line(review.tests)))
    for line in coverage_lines(review):
        console.print(Text.assemble(("Could not do: ", "bold yellow"), line))
    if (injected := injection_note(review)) is not None:
        console.print(Text(injected, style="yellow"))
        for place in injection_places(review):
            console.print(Text(f"  {place}", style="dim"))
    for s in review.skipped_files:
        console.print(Text.assemble(("Skipped ", "dim"), one_line(s.path), ("  " + one_line(s.reason), "dim")))
    reports = [*review.reviewers, *([review.coordinator] if review.coordinator is not None else [])]
    if reports:
        console.print(_usage_table(reports))
    u = review.usage
    console.print(
        Text(
            f"tier {review.tier} · {format_tokens(u)} tokens · {format_cost(u.cost_usd)} · "
            f"{format_duration(u.duration_s)}",
            style="dim",
        )
    )


def render_plan_terminal(plan: Plan, console: Console) -> None:
    """Print the dry-run plan: reviewers with models and files, coordinator, skipped files, estimate."""
    table = Table(title=f"codejury plan (dry run) · tier {plan.tier}", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("Reviewer")
    table.add_column("Model")
    table.add_column("Files", overflow="fold")
    for r in plan.reviewers:
        files = f"{len(r.files)}: " + ", ".join(one_line(p) for p in r.files) if r.files else "0"
        table.add_row(Text(one_line(r.name)), Text(one_line(r.model)), Text(files))
    console.print(table)
    console.print(Text.assemble(("Coordinator: ", "bold"), one_line(plan.coordinator_model)))
    for model, why in sorted(plan.model_problems.items()):
        console.print(Text.assemble(("Cannot run here: ", "bold red"), one_line(model), ("  " + one_line(why), "red")))
    if plan.refusal is not None:
        console.print(Text(f"Would be refused now: {one_line(plan.refusal)}; no model would be called.", "yellow"))
    if not plan.reviewers:
        console.print(
            Text(
                "Nothing to review: no reviewer would run (every changed file is skipped, or no reviewer is "
                "enabled), so no model is called and the verdict would be 'not reviewed'.",
                "yellow",
            )
        )
    for s in plan.skipped_files:
        console.print(Text.assemble(("Skipped ", "dim"), one_line(s.path), ("  " + one_line(s.reason), "dim")))
    console.print(
        Text(f"Estimate: {plan.estimated_input_tokens:,} input tokens, about {format_cost(plan.estimated_cost_usd)}")
    )
    for note in plan.estimate_notes:
        console.print(Text(f"  {one_line(note)}", "dim"))
