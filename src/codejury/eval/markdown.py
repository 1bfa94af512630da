"""The eval report as markdown: a table to commit beside a prompt, model or config change."""

from __future__ import annotations

from typing import Any

ROWS: list[tuple[str, str, str]] = [
    ("cases", "cases", "count"),
    ("failed_cases", "failed cases (no review)", "count"),
    ("findings_per_case", "findings per case", "number"),
    ("precision", "precision (location)", "ratio"),
    ("recall", "recall (location)", "ratio"),
    ("f1", "F1 (location)", "ratio"),
    ("judged_precision", "precision (meaning, judge)", "ratio"),
    ("judged_recall", "recall (meaning, judge)", "ratio"),
    ("judged_f1", "F1 (meaning, judge)", "ratio"),
    ("on_changed_lines", "findings on changed lines", "ratio"),
    ("known_false_positive_hits", "known false positive hits", "count"),
    ("blocking_share", "cases with a blocking verdict", "ratio"),
    ("tokens", "tokens (input + output)", "count"),
    ("cost_usd", "cost (USD)", "money"),
    ("wall_p50_s", "wall time per case p50 (s)", "number"),
    ("wall_p90_s", "wall time per case p90 (s)", "number"),
    ("wall_total_s", "wall time, all cases (s)", "number"),
    ("walkthrough_p50_s", "walkthrough time per case p50 (s)", "number"),
    ("walkthrough_added_p50", "walkthrough time over the rest of the review, p50", "ratio"),
]


def _cell(value: Any, kind: str) -> str:
    if value is None:
        return "–"
    if kind == "ratio":
        return f"{value:.3f}"
    if kind == "money":
        return f"${value:.4f}"
    if kind == "number":
        return f"{value:.2f}" if isinstance(value, float) else str(value)
    return str(value)


def _md(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def render(doc: dict[str, Any], *, title: str = "codejury eval") -> str:
    overall = doc["overall"]
    base = doc.get("baseline", {}).get("overall")
    lines = [f"# {title}", ""]
    lines.append(
        "Location scoring: a finding matches an expected comment on the same path with line ranges "
        "overlapping (1 line of slack), each comment and finding matched at most once; ratios are "
        "micro-averaged over cases. Rows marked *meaning* count only pairs a judge model accepted as "
        "the same problem."
    )
    lines.append("")
    header = "| metric | codejury |" + (" naive baseline |" if base else "")
    lines += [header, "|---|---:|" + ("---:|" if base else "")]
    for key, label, kind in ROWS:
        if key not in overall and (base is None or key not in base):
            continue
        row = f"| {label} | {_cell(overall.get(key), kind)} |"
        if base is not None:
            row += f" {_cell(base.get(key), kind)} |"
        lines.append(row)
    if overall.get("by_language"):
        lines += [
            "",
            "## By language (location)",
            "",
            "| language | cases | precision | recall | F1 |",
            "|---|---:|---:|---:|---:|",
        ]
        for language, s in overall["by_language"].items():
            lines.append(f"| {language} | {s['cases']} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} |")
    lines += _backing_table(overall.get("by_backing"))
    lines += _threshold_table(overall.get("by_threshold"))
    lines += _recall_table("expected-comment category", "category", overall.get("by_category"))
    lines += _recall_table("the context an expected comment needed", "context", overall.get("by_context"))
    lines += [
        "",
        "## Cases",
        "",
        "| case | verdict | findings | expected | matched | P | R | F1 | wall (s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in doc["cases"]:
        verdict = c["verdict"] or f"failed: {_md(c['error'] or '', 60)}"
        lines.append(
            f"| {c['id']} | {verdict} | {c['findings']} | {c['expected']} | {c['matched']} | "
            f"{c['precision']:.2f} | {c['recall']:.2f} | {c['f1']:.2f} | {c['wall_s']:.1f} |"
        )
    pairs = [(c["id"], m) for c in doc["cases"] for m in c["matches"]]
    lines += ["", "## Location matches, side by side (is each the same problem? a person judges)", ""]
    if not pairs:
        lines.append("No finding matched an expected comment by location.")
    else:
        lines += ["| case | place | finding | expected comment |", "|---|---|---|---|"]
        for case_id, m in pairs:
            place = f"{m['path']}:{m['finding_lines'][0]} vs {m['expected_lines'][0]}-{m['expected_lines'][1]}"
            lines.append(f"| {case_id} | {_md(place, 80)} | {_md(m['finding'])} | {_md(m['expected'])} |")
    return "\n".join(lines) + "\n"


def _recall_table(title: str, label: str, rows: dict[str, dict[str, Any]] | None) -> list[str]:
    """A "recall by …" section (location), or nothing when there are no rows."""
    if not rows:
        return []
    out = [
        "",
        f"## Recall by {title} (location)",
        "",
        f"| {label} | expected | matched | recall |",
        "|---|---:|---:|---:|",
    ]
    for key, s in rows.items():
        out.append(f"| {_md(key, 60)} | {s['expected']} | {s['matched']} | {_cell(s['recall'], 'ratio')} |")
    return out


def _backing_table(rows: dict[str, dict[str, Any]] | None) -> list[str]:
    """Findings backed by an analyzer rule vs the model's own claims, with their location precision."""
    if not rows or not any(s["findings"] for s in rows.values()):
        return []
    out = ["", "## Findings by what backs them (location)", "", "| backed by | findings | matched | precision |"]
    out.append("|---|---:|---:|---:|")
    for key, s in rows.items():
        label = "an analyzer rule" if key == "analyzer" else "the model alone"
        out.append(f"| {label} | {s['findings']} | {s['matched']} | {_cell(s['precision'], 'ratio')} |")
    return out


def _threshold_table(rows: list[dict[str, Any]] | None) -> list[str]:
    """Precision and recall of this run at several confidence thresholds (``[confidence]``), to choose one."""
    if not rows:
        return []
    out = [
        "",
        "## Precision and recall by confidence threshold (location)",
        "",
        "What this run would have published with `[confidence] min` at each value (findings under the run's own "
        "threshold included).",
        "",
        "| min confidence | findings | matched | precision | recall | F1 |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['min_confidence']:.2f} | {r['findings']} | {r['matched']} | {_cell(r['precision'], 'ratio')} | "
            f"{_cell(r['recall'], 'ratio')} | {_cell(r['f1'], 'ratio')} |"
        )
    return out
