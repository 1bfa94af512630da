"""Renderers: a review or a plan as markdown, terminal output or JSON, plus their shared helpers."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from codejury.findings import SEVERITY_RANK, Finding, Review, Usage

SECTION_TITLES: dict[str, str] = {
    "security": "Security",
    "performance": "Performance",
    "code_quality": "Code quality",
    "documentation": "Documentation",
    "release": "Release",
    "agents_md": "AGENTS.md",
    "compliance": "Team rules",
    "generalist": "General",
}
SEVERITY_LABELS: dict[str, str] = {"critical": "Critical", "warning": "Warning", "suggestion": "Suggestion"}

_UNSAFE_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean_text(text: str) -> str:
    """Normalise newlines and drop control and bidi-override characters (terminal escapes, trojan source)."""
    return _UNSAFE_CHARS.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def one_line(text: str) -> str:
    """Clean text and collapse all whitespace, newlines included, to single spaces."""
    return " ".join(clean_text(text).split())


def section_title(reviewer: str) -> str:
    """The section a reviewer's findings appear under; unknown names are title-cased."""
    known = SECTION_TITLES.get(reviewer)
    if known is not None:
        return known
    return " ".join(reviewer.replace("_", " ").replace("-", " ").split()).title() or "General"


def _section_order(title: str) -> tuple[int, str]:
    titles = list(SECTION_TITLES.values())
    return (titles.index(title), "") if title in titles else (len(titles), title.lower())


def group_by_section(findings: Sequence[Finding]) -> list[tuple[str, list[Finding]]]:
    """Findings grouped by section title, known sections first; most severe first within one."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(section_title(f.reviewer), []).append(f)
    return [
        (title, sorted(groups[title], key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), f.path, f.start_line)))
        for title in sorted(groups, key=_section_order)
    ]


GROUNDS_SHOWN = 5
"""The most evidence keys a grounds phrase names; the rest are counted."""
RULELESS: dict[str, str] = {"junit": "failing test"}
"""Evidence that backs a finding without being a tool's rule, and how it reads: a failing test covering the
finding's function (``junit:<test id>``)."""


def tool_rule(key: str) -> tuple[str, str] | None:
    """The (tool, rule) an evidence key ``analyzer:rule`` names (``ruff:S608`` → ``("ruff", "S608")``); None for a
    key that names no rule (a failing test, ``junit:<test id>``) or has no tool."""
    tool, sep, rule = key.partition(":")
    if not sep or not tool.strip() or not rule.strip() or tool in RULELESS:
        return None
    return tool.strip(), rule.strip()


def finding_rule(finding: Finding) -> tuple[str | None, str]:
    """The rule a finding belongs to in the formats that carry rules (SARIF, rdjson, Code Quality): (tool, rule)
    of the first analyzer rule that backs it, else (None, its category; ``general`` when it has none)."""
    for key in finding.evidence:
        if (found := tool_rule(key)) is not None:
            return found
    return None, finding.category.strip() or "general"


def ground_words(key: str) -> str:
    """One evidence key in words: ``ruff:S608`` → ``ruff S608``, ``junit:<id>`` → ``failing test <id>``."""
    tool, sep, rule = one_line(key).partition(":")
    if not sep:
        return tool
    return f"{RULELESS.get(tool, tool)} {rule}"


def grounds_phrase(evidence: Sequence[str], *, verified: bool | None) -> str:
    """What a finding stands on, in the words every format uses: the analyzers and rules that flag its lines
    (``ruff S608``), with ``; checked against the code`` when a verification passed; else ``model, checked
    against the code`` or ``model alone``."""
    if not evidence:
        return "model, checked against the code" if verified else "model alone"
    shown = ", ".join(ground_words(e) for e in evidence[:GROUNDS_SHOWN])
    if len(evidence) > GROUNDS_SHOWN:
        shown += f" and {len(evidence) - GROUNDS_SHOWN} more"
    return f"{shown}; checked against the code" if verified else shown


def finding_grounds(f: Finding) -> str:
    """``grounds_phrase`` of a finding."""
    return grounds_phrase(f.evidence, verified=f.verified)


def grounds(evidence: Sequence[str], *, verified: bool | None, advisory: bool, withholds: bool = False) -> list[str]:
    """What backs a finding, in words: ``grounds: `` and its ``grounds_phrase``, then why it does not block when
    advisory, and why it withholds approval when it is held on security evidence."""
    parts = [f"grounds: {grounds_phrase(evidence, verified=verified)}"]
    if withholds:
        held = "a model confirmed" if verified else "no model confirmed"  # confirmed: held as dismissed before (memory)
        parts.append(f"security evidence {held}: withholds approval until a person dismisses it")
    if advisory:
        if evidence and not verified:
            parts.append("advisory: the reviewing model did not confirm the hit, does not block")
        elif verified:
            parts.append("advisory: a small model's finding without analyzer evidence, does not block")
        else:
            parts.append("advisory: not verified, does not block")
    return parts


def grounding_note(f: Finding) -> str:
    """A finding's ``grounds`` as one sentence: ``Grounds: ruff S608; checked against the code``,
    ``Grounds: model alone; advisory: not verified, does not block``."""
    note = "; ".join(grounds(f.evidence, verified=f.verified, advisory=f.advisory, withholds=f.withholds_approval))
    return note[:1].upper() + note[1:]


def not_reviewed_notice(review: Review) -> str | None:
    """One line saying that no model looked at the change and why (the review's summary), or None
    when something was reviewed.

    CI formats without a verdict (SARIF, rdjson, Code Quality) carry it as a notice, so a change
    that nobody reviewed never reads as a clean pass.
    """
    if review.verdict != "not_reviewed":
        return None
    return f"codejury: {one_line(review.summary) or 'nothing was reviewed.'}"


def coverage_lines(review: Review) -> list[str]:
    """What the review could not do, one line each: every note (an analyzer skipped or failed, no
    head-side tree, files left out, prompts near a model's context window) and the files cut to fit
    a model's context.

    Every format carries these lines, so a review that ran without its analyzers never reads as a
    clean pass; the CI formats without a verdict (SARIF, rdjson, Code Quality) carry them as notices.
    """
    lines = [line for line in (one_line(n) for n in review.notes) if line]
    if review.cut_files:
        shown = ", ".join(one_line(p) for p in review.cut_files[:10])
        more = f" and {len(review.cut_files) - 10} more" if len(review.cut_files) > 10 else ""
        lines.append(f"Cut to fit the model's context (reviewers saw part or none of these): {shown}{more}.")
    return lines


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``n`` and ``word``, plural unless ``n`` is 1: "1 review", "1,204 reviews"."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def injection_note(review: Review) -> str | None:
    """One line on the passages that look like instructions to the reviewer (rule names and counts), or None."""
    found = review.suspected_injections
    if not found:
        return None
    counts = Counter(one_line(i.rule) for i in found)
    ordered = sorted(counts.items(), key=lambda c: (-c[1], c[0]))
    rules = ", ".join(f"{rule} ×{n}" if n > 1 else rule for rule, n in ordered)
    n = len(found)
    if n == 1:
        return f"1 passage in this change looks like instructions to the reviewer ({rules}); it was read as data."
    return f"{n} passages in this change look like instructions to the reviewer ({rules}); they were read as data."


def injection_places(review: Review, limit: int = 20) -> list[str]:
    """``place · rule`` of the first ``limit`` suspected passages, and how many more there are."""
    found = review.suspected_injections
    lines = [f"{one_line(i.place)} · {one_line(i.rule)}" for i in found[:limit]]
    if len(found) > limit:
        lines.append(f"and {len(found) - limit} more")
    return lines


def remembered_note(review: Review) -> str | None:
    """One line on the findings that match a writer's earlier dismissal in the repository (``[memory]``), or None."""
    held = [r for r in review.remembered if r.suppressed]
    anyway = len(review.remembered) - len(held)
    parts = (
        [f"{counted(len(held), 'finding')} dismissed before in this repository, not published again"] if held else []
    )
    if anyway:
        parts.append(f"{counted(anyway, 'security finding')} dismissed before, published anyway (an analyzer backs it)")
    return "; ".join(parts) + "." if parts else None


def remembered_places(review: Review) -> list[str]:
    """Each remembered finding in one line: title, place, and where, by whom and how it was dismissed."""
    lines = []
    for r in review.remembered:
        who = f" by {one_line(r.dismissed_by)}" if r.dismissed_by else ""
        how = f": {one_line(r.how)}" if r.how else ""
        where = one_line(r.dismissed_in) or "another change"
        shown = "" if r.suppressed else " (published)"
        lines.append(f"{one_line(r.finding.title)} · {location(r.finding)} · dismissed in {where}{who}{how}{shown}")
    return lines


def location(finding: Finding) -> str:
    """``path:start-end`` (or ``path:line`` for a single line)."""
    if finding.end_line > finding.start_line:
        return f"{finding.path}:{finding.start_line}-{finding.end_line}"
    return f"{finding.path}:{finding.start_line}"


def format_duration(seconds: float) -> str:
    """``12.3s`` below a minute, ``2m 05s`` above."""
    if round(seconds, 1) < 60:  # 59.96 would print as "60.0s"
        return f"{seconds:.1f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m {rest:02d}s"


def format_cost(cost_usd: float) -> str:
    """A dollar amount with four decimals (cheap models cost fractions of a cent)."""
    return f"${cost_usd:.4f}"


def format_tokens(usage: Usage) -> str:
    """Input, output and cache tokens in one phrase."""
    text = f"{usage.input_tokens:,} in / {usage.output_tokens:,} out"
    if usage.cache_read_tokens or usage.cache_write_tokens:
        text += f" (cache {usage.cache_read_tokens:,} read / {usage.cache_write_tokens:,} write)"
    return text
