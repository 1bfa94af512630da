"""``codejury stats`` output: the ``Stats`` tables as markdown, a terminal (rich) view, or JSON.

``stats_tables(stats)`` lays every table out once as (title, headers, rows of strings); markdown
and the terminal only draw it. Everything from the store (verdicts, tiers, reviewers, categories,
models, whatever an ingest or an older codejury wrote) is text, never markup: in markdown each cell
goes through ``markdown_text`` (the forge comments' ``safe_line``: no HTML, mention, quick action or
code span; every ``|``, ``[`` and ``]`` escaped; all on one line), so the output can be pasted into a
merge request comment or a CI job summary as it is. The terminal view cleans control and escape
sequences and hands rich ``Text`` objects, which never read ``[style]`` markup. JSON needs neither.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from codejury.forges.safety import safe_line
from codejury.record.stats import ActedOnRow, Spread, Stats
from codejury.render import counted, one_line

_CELL_ESCAPES = str.maketrans({"|": "\\|", "[": "\\[", "]": "\\]"})


@dataclass(frozen=True)
class TextTable:
    title: str
    headers: tuple[str, ...]
    rows: list[tuple[str, ...]]
    note: str = ""


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate * 100:.1f}%"


def _usd(value: float | None) -> str:
    return "—" if value is None else f"${value:,.4f}"


def _secs(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} s"


def _int(value: int) -> str:
    return f"{value:,}"


def _spread(s: Spread, unit: str = "s") -> tuple[str, ...]:
    fmt = _usd if unit == "usd" else _secs
    return (fmt(s.median), fmt(s.p90), fmt(s.p95), fmt(s.p99))


def _acted(row: ActedOnRow, *, category: bool) -> tuple[str, ...]:
    head = (row.reviewer, row.category or "") if category else (row.reviewer,)
    counts = (_int(row.published), _int(row.followed_up), _int(row.acted_on), _int(row.dismissed))
    return (*head, *counts, _pct(row.acted_on_rate), _pct(row.dismissed_rate))


def stats_tables(stats: Stats) -> list[TextTable]:
    """Every table of ``stats`` as text cells, in the order the commands print them."""
    o = stats.overview
    verdicts = ", ".join(f"{v} {n:,}" for v, n in o.verdicts.items()) or "—"
    tables = [
        TextTable(
            "Reviews",
            ("reviews", "changes", "repositories", "first", "last", "verdicts"),
            [
                (
                    _int(o.reviews),
                    _int(o.changes),
                    _int(o.repositories),
                    o.first.strftime("%Y-%m-%d %H:%M") if o.first else "—",
                    o.last.strftime("%Y-%m-%d %H:%M") if o.last else "—",
                    verdicts,
                )
            ],  # fmt: skip
        ),
        TextTable(
            "Cost per review by tier",
            ("tier", "reviews", "total", "median", "P90", "P95", "P99"),
            [
                (r.tier, _int(r.reviews), _usd(r.cost_total_usd), *_spread(r.cost_usd, "usd"))
                for r in stats.cost_duration.rows
            ],
        ),
        TextTable(
            "Duration per review by tier",
            ("tier", "reviews", "median", "P90", "P95", "P99"),
            [(r.tier, _int(r.reviews), *_spread(r.duration_s)) for r in stats.cost_duration.rows],
        ),
        TextTable(
            "Findings by reviewer and severity",
            ("reviewer", "critical", "warning", "suggestion", "total"),
            [
                (r.reviewer, _int(r.critical), _int(r.warning), _int(r.suggestion), _int(r.total))
                for r in stats.findings_by_reviewer.rows
            ],
        ),
        TextTable(
            "Tokens by model",
            ("model", "runs", "input", "output", "cache read", "cache write", "cache hit rate", "cost"),
            [
                (
                    r.model,
                    _int(r.runs),
                    _int(r.input_tokens),
                    _int(r.output_tokens),
                    _int(r.cache_read_tokens),
                    _int(r.cache_write_tokens),
                    _pct(r.cache_hit_rate),
                    "unpriced" if r.unpriced else _usd(r.cost_usd),
                )  # fmt: skip
                for r in stats.tokens_by_model.rows
            ],
            "cache hit rate = cache read / input tokens (input includes cached tokens)" + _unpriced(stats),
        ),
        TextTable(
            "Break glass",
            ("reviews", "break glass", "rate"),
            [(_int(stats.break_glass.reviews), _int(stats.break_glass.break_glass), _pct(stats.break_glass.rate))],
        ),
    ]
    rel = stats.reliability
    tables.append(
        TextTable(
            "Failed reviewers and failbacks",
            (
                "reviewer runs",
                "failed",
                "failed-reviewer rate",
                "reviews with a failed reviewer",
                "failbacks",
                "reviews with a failback",
                "failback rate",
            ),  # fmt: skip
            [
                (
                    _int(rel.reviewer_runs),
                    _int(rel.failed_runs),
                    _pct(rel.failed_reviewer_rate),
                    _int(rel.reviews_with_failed_reviewer),
                    _int(rel.failbacks),
                    _int(rel.reviews_with_failback),
                    _pct(rel.failback_rate),
                )
            ],  # fmt: skip
        )
    )
    failing = [r for r in rel.by_reviewer if r.failed]
    if failing:
        tables.append(
            TextTable(
                "Failed runs by reviewer",
                ("reviewer", "runs", "failed", "rate"),
                [(r.reviewer, _int(r.runs), _int(r.failed), _pct(r.rate)) for r in failing],
            )
        )
    acted_headers = ("published", "followed up", "acted on", "dismissed", "acted-on rate", "dismissed rate")
    note = (
        "followed up: the change was reviewed again; acted on: before that next review its lines changed and "
        "it was no longer reported (docs/telemetry.md has the exact rule)"
    )
    tables += [
        TextTable(
            "Acted-on rate by reviewer",
            ("reviewer", *acted_headers),
            [_acted(r, category=False) for r in stats.acted_on.by_reviewer],
            note,
        ),
        TextTable(
            "Acted-on rate by reviewer and category",
            ("reviewer", "category", *acted_headers),
            [_acted(r, category=True) for r in stats.acted_on.by_reviewer_category],
        ),
    ]
    injections = stats.injections
    tables += [
        TextTable(
            "Suspected prompt injections by rule",
            ("rule", "passages", "reviews"),
            [(r.rule, _int(r.passages), _int(r.reviews)) for r in injections.by_rule],
            "passages of what a review read that look like instructions to the reviewer; read as data, never obeyed",
        ),
        TextTable(
            "Latest suspected prompt injections",
            ("recorded", "repository", "change", "place", "rule", "excerpt"),
            [
                (
                    r.recorded_at.strftime("%Y-%m-%d %H:%M"),
                    r.repository or "—",
                    r.change_id or "—",
                    r.place,
                    r.rule,
                    r.excerpt,
                )
                for r in injections.latest
            ],  # fmt: skip
        ),
    ]
    tables.append(
        TextTable(
            "Suppressed by memory, by rule",
            ("rule", "suppressed", "published anyway"),
            [(r.key, _int(r.suppressed), _int(r.published_anyway)) for r in stats.suppressed_by_rule],
            "findings that match one a writer dismissed before in the same repository; published anyway: security "
            "findings an analyzer backs",
        )
    )
    return tables


def _unpriced(stats: Stats) -> str:
    """The tokens table's note when a model in it is unpriced (named in its row: model names are store text, never
    put in a note)."""
    if not stats.tokens_by_model.unpriced:
        return ""
    return "; unpriced = no known price: its runs counted as $0 in every cost here"


def _scope(stats: Stats) -> str:
    since = stats.since.strftime("%Y-%m-%d %H:%M UTC") if stats.since else "the beginning"
    where = f"repository {stats.repository}" if stats.repository else "all repositories"
    return f"{counted(stats.reviews, 'review')} since {since}, {where} ({stats.store})"


def markdown_text(text: str) -> str:
    """``text`` from the store on one markdown line (a table cell, the scope line), rendering as the text it is.

    Its backslashes and backticks are escaped first, so ``safe_line`` opens no code span and every
    character after it stands behind an even run of backslashes: one more before each ``|``, ``[``
    and ``]`` keeps the cell in its column and stops a link or an image."""
    literal = safe_line(text.replace("\\", "\\\\").replace("`", "\\`"))
    return literal.translate(_CELL_ESCAPES) or " "


def render_stats_markdown(stats: Stats) -> str:
    lines = ["# codejury stats", "", markdown_text(_scope(stats)), ""]
    for table in stats_tables(stats):
        lines += [f"## {table.title}", ""]
        if not table.rows:
            lines += ["(none)", ""]
            continue
        lines.append("| " + " | ".join(table.headers) + " |")
        lines.append("|" + "|".join("---" for _ in table.headers) + "|")
        lines += ["| " + " | ".join(markdown_text(c) for c in row) + " |" for row in table.rows]
        lines += ["", f"_{table.note}_", ""] if table.note else [""]
    return "\n".join(lines).rstrip() + "\n"


def render_stats_terminal(stats: Stats, *, width: int | None = None, color: bool = False) -> str:
    """Rich tables as text (with ANSI styles when ``color``)."""
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(width=width or 140, record=True, force_terminal=color, file=io.StringIO())
    console.print(Text(one_line(_scope(stats)), style="bold"))
    for table in stats_tables(stats):
        view = Table(title=table.title, box=box.SIMPLE_HEAD, title_justify="left", caption=table.note or None)
        for i, header in enumerate(table.headers):
            view.add_column(header, justify="left" if i == 0 else "right")
        for row in table.rows:
            view.add_row(*(Text(one_line(c)) for c in row))
        if not table.rows:
            view.add_row(*(Text("—") for _ in table.headers))
        console.print(view)
    return console.export_text(styles=color)


def render_stats_json(stats: Stats) -> str:
    return json.dumps(stats.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


RENDERERS = {"markdown": render_stats_markdown, "terminal": render_stats_terminal, "json": render_stats_json}
