"""The summary comment's text: the body a review publishes on the conversation, and the failure note.

``summary_body`` renders a planned review (verdict, re-review counts, findings by section with
what each stands on (``grounds_line``), the findings not published counted by reason, the
threads fixed or still open, reviewers that failed, files reviewed and skipped, cost) and
``failure_note`` the short body of a review in which no reviewer succeeded; both end with the
summary marker that carries the state the next run reads back. Deciding what to publish stays
in ``publish``; this module only writes it out, so the wording can change without touching
the matching rules. Every untrusted string goes through ``safety``, every body through ``checked``.
"""

from __future__ import annotations

from collections.abc import Sequence

from codejury.change.types import FileChange
from codejury.findings import Finding, Review, ReviewerReport, Walkthrough
from codejury.forges.markers import SummaryState, summary_marker, with_marker
from codejury.forges.plan import PlanOptions, PreviousState, PreviousThread, PublishPlan
from codejury.forges.safety import checked, inline_code, safe_code, safe_line, safe_text
from codejury.render import (
    SEVERITY_LABELS,
    counted,
    finding_grounds,
    format_cost,
    format_duration,
    grounding_note,
    group_by_section,
    injection_note,
    injection_places,
    location,
    remembered_note,
    remembered_places,
)
from codejury.render.markdown import VERDICT_HEADLINES, criteria_lines, walkthrough_lines


def _link(finding: Finding, options: PlanOptions) -> str:
    text = inline_code(location(finding))
    url = options.line_url(finding.path, finding.start_line, finding.end_line) if options.line_url else None
    return f"[{text}]({url})" if url else text


def _reviewer_lines(review: Review) -> list[str]:
    reports: list[ReviewerReport] = [*review.reviewers, *([review.coordinator] if review.coordinator else [])]
    out = []
    for r in reports:
        if r.status == "failed":
            out.append(f"- {safe_line(r.name)} failed: {safe_line(r.error or 'no reason given')}")
        elif r.status == "skipped" and r.name != "coordinator":
            out.append(f"- {safe_line(r.name)} was skipped{': ' + safe_line(r.error) if r.error else ''}")
    return out


def _details(title: str, items: list[str], *, open_: bool = False) -> list[str]:
    """A collapsed list (``open_``: shown unfolded); nothing when ``items`` is empty."""
    tag = "<details open>" if open_ else "<details>"
    return [tag, f"<summary>{title}</summary>", "", *items, "", "</details>", ""] if items else []


def summary_body(
    review: Review,
    files: Sequence[FileChange],
    plan: PublishPlan,
    previous: PreviousState,
    options: PlanOptions,
    shown: list[tuple[str, Finding]],
    *,
    lingering: Sequence[PreviousThread],
    fixed: Sequence[PreviousThread],
) -> str:
    """The summary comment of ``plan`` (its ``summary`` still empty), marker and state included.

    ``shown`` lists the findings the summary names, with their fingerprints; ``lingering`` the
    earlier threads not reported again but whose lines did not change, ``fixed`` those resolved."""
    headline = VERDICT_HEADLINES.get(review.verdict, review.verdict)
    lines = ["## codejury review", "", f"**Verdict: {headline}** · commit {inline_code(options.head_sha[:12])}", ""]
    if previous.state is not None:
        lines += [f"Re-review: {plan.fixed} fixed, {plan.still_open} still open, {plan.new} new.", ""]
    summary = safe_text(review.summary).strip()
    if summary:
        lines += [summary, ""]
    lines += walkthrough_section(review.walkthrough)
    lines += criteria_lines(review.criteria, cell=_cell)
    if review.break_glass:
        who = ", ".join(safe_line(w) for w in options.break_glass_by) or "the --break-glass flag"
        lines += [f"**Break glass** invoked by {who}: approval is forced; the findings below still stand.", ""]
    if options.break_glass_ignored:
        who = ", ".join(safe_line(w) for w in options.break_glass_ignored)
        lines += [f"A break-glass comment by {who} was ignored: it needs Developer access or more.", ""]
    if not review.judged:
        lines += ["**Unjudged:** the coordinator could not run; findings are unchecked and nothing is approved.", ""]
    unreviewed = review.verdict == "not_reviewed"
    if unreviewed and review.refused is not None:
        lines += [
            "**Nothing was reviewed:** no model was called for this change (the reason is above), so codejury "
            "does not approve it; an approval it gave before is withdrawn. A human should review it.",
            "",
        ]
    elif unreviewed:
        lines += [
            f"**Nothing was reviewed:** no model looked at this change ({len(review.skipped_files)} file(s) "
            "skipped, listed below with the reason), so codejury does not approve it. A human should review it.",
            "",
        ]
    lines += [f"{notice}" for notice in options.notices] + ([""] if options.notices else [])
    if review.tests:  # the CI job's test results: what the tests said, not something the review could not do
        lines += [f"**Tests:** {safe_line(review.tests)}", ""]
    if (remembered := remembered_note(review)) is not None:  # a writer dismissed these before: one collapsed line
        lines += _details(safe_line(remembered), [f"- {safe_line(p)}" for p in remembered_places(review)])
    if review.notes:  # what did not run, or ran on less than the change: said before any "no findings"
        lines += ["**What this review could not do:**", "", *[f"- {safe_line(n)}" for n in review.notes], ""]
    if (injected := injection_note(review)) is not None:  # shown, never obeyed: the text was fenced as data
        lines += [safe_line(injected), ""]
        lines += _details("Where", [f"- {inline_code(p)}" for p in injection_places(review)])
    only = {id(f): reason for f, reason in plan.summary_only}
    findings = [f for _, f in shown]
    if findings:
        for title, group in group_by_section(findings):
            lines += [f"### {safe_line(title)} ({len(group)})", ""]
            for f in group:
                lines += _summary_finding(f, only.get(id(f)), options)
    elif not unreviewed:
        lines += ["No open findings.", ""]
    if lingering:
        lines += ["### Still open from an earlier review", ""]
        lines += [
            f"- {inline_code(t.path)} line {t.start_line}: not reported this time, but its lines did not change"
            for t in lingering
        ]
        lines.append("")
    if fixed:
        lines += [f"- Fixed: {inline_code(t.path)} line {t.start_line} (thread resolved)" for t in fixed] + [""]
    dismissed = sorted(fp for fp, s in plan.state.findings.items() if s == "dismissed")
    if dismissed:
        lines += [f"{len(dismissed)} finding(s) dismissed by a reply are not raised again unless they get worse.", ""]
    reviewers = _reviewer_lines(review)
    if reviewers:
        lines += ["### Reviewers that failed or were skipped", "", *reviewers, ""]
    skipped = {s.path for s in review.skipped_files}
    lines += _details(
        f"Files reviewed ({len([f for f in files if f.path not in skipped])})",
        [f"- {inline_code(f.path)}" for f in files if f.path not in skipped],
    )
    lines += _details(
        f"Files skipped ({len(review.skipped_files)})",
        [f"- {inline_code(s.path)}: {safe_line(s.reason)}" for s in review.skipped_files],
        open_=unreviewed,
    )
    lines += _details(
        f"Cut to fit the model's context ({len(review.cut_files)}): reviewers saw part or none of these",
        [f"- {inline_code(p)}" for p in review.cut_files],
    )
    if review.dropped_findings:
        total = sum(review.dropped_findings.values())
        reasons = ", ".join(f"{safe_line(k)}: {v}" for k, v in sorted(review.dropped_findings.items()))
        lines += [f"{counted(total, 'finding')} not published ({reasons}).", ""]
    u = review.usage
    lines.append(
        f"<sub>codejury · tier {review.tier} · {format_cost(u.cost_usd)} · {format_duration(u.duration_s)}</sub>"
    )
    marker = summary_marker(plan.state.head_sha, plan.state.findings, plan.state.verdict)
    return checked(with_marker(marker, "\n".join(lines) + "\n"))


def walkthrough_section(walkthrough: Walkthrough | None) -> list[str]:
    """The walkthrough in the summary comment: rewritten with it on each push, so there is only ever one."""
    return walkthrough_lines(walkthrough, text=safe_line, cell=_cell, code=inline_code, fence=safe_code)


def _cell(text: str) -> str:
    """Untrusted text in a table cell: one safe line whose ``|`` cannot split the row."""
    return safe_line(text).replace("|", "\\|")


def grounds_line(finding: Finding) -> str:
    """What the finding stands on, as published (inline comments and the summary): ``render.grounding_note``
    (``Grounds: ruff S608; checked against the code``, ``Grounds: model alone; advisory: …``)."""
    return safe_line(grounding_note(finding))


def _summary_finding(finding: Finding, summary_reason: str | None, options: PlanOptions) -> list[str]:
    label = SEVERITY_LABELS.get(finding.severity, finding.severity)
    head = f"**{label}** · {_link(finding, options)} · **{safe_line(finding.title)}**"
    if summary_reason is None:
        return [f"{head} · grounds: {safe_line(finding_grounds(finding))} · see its thread", ""]
    out = [f"{head} · not commented inline: {summary_reason}", ""]
    body = safe_text(finding.body).strip()
    if body:
        out += [body, ""]
    out += [grounds_line(finding), ""]
    if finding.suggestion is not None and finding.suggestion.strip():
        out += ["Suggested code:", "", safe_code(finding.suggestion), ""]
    return out


def failure_note(previous: PreviousState, message: str, head_sha: str) -> tuple[str, SummaryState]:
    """The summary body of a review in which no reviewer succeeded: no approval, state kept."""
    old = previous.state
    state = SummaryState(
        head_sha=old.head_sha if old else head_sha, findings=dict(old.findings) if old else {}, verdict=None
    )
    lines = [
        "## codejury review",
        "",
        f"**Review failed** for commit {inline_code(head_sha[:12])}: {safe_line(message)}",
        "",
        "Nothing was approved. Threads from earlier reviews are left as they were; the next push or a re-run "
        "of the job reviews again.",
        "",
    ]
    return checked(with_marker(summary_marker(state.head_sha, state.findings), "\n".join(lines))), state
