"""``codejury stats`` over a store holding hostile text: whatever a record says, the output is only text.

A store is written by every CI job that records, and by a review service's ingest: a repository,
a reviewer, a category or a model name is anyone's text, and rows an older codejury wrote may hold
a verdict or tier this one does not know. The markdown goes into merge request comments and CI job
summaries, so it is rendered here as a forge would (CommonMark with raw HTML and GFM tables).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner
from markdown_it import MarkdownIt
from sqlalchemy import update

from codejury.cli import cli
from codejury.record import schema
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from codejury.testing import review_seed as seed

HTML = "<img src=x onerror=alert(1)>"
HOSTILE = f"{HTML} | ![pixel](https://evil.example/p.png) `x` @all\nrow"
FORGE = MarkdownIt("commonmark", {"html": True}).enable("table")


def hostile_store(tmp_path: Path) -> str:
    """A store with one review whose every name is ``HOSTILE``, stored with a verdict, tier and
    severity this codejury does not know (as a direct write or an older version could leave them)."""
    url = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    store = Store(parse_record_url(url))
    finding = seed.finding(HOSTILE, title=HOSTILE, category=HOSTILE)
    record = seed.record(
        review_kwargs={"findings": [finding], "reviewers": [seed.reviewer(HOSTILE, HOSTILE)]}, repository=HOSTILE
    )
    store.write(record)
    with store.engine.begin() as conn:
        conn.execute(update(schema.reviews).values(verdict=f"lgtm{HTML}", tier=f"huge|{HTML}"))
        conn.execute(update(schema.findings).values(severity="blocker"))
    store.close()
    return url


def stats(*args: str) -> str:
    result = CliRunner().invoke(cli, ["stats", "--since", "all", *args])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_markdown_shows_hostile_names_as_text_in_their_own_cells(tmp_path: Path) -> None:
    url = hostile_store(tmp_path)
    out = stats("--store", url, "--format", "markdown", "--repo", HOSTILE)
    assert HTML not in out and "![pixel]" not in out
    page = FORGE.render(out)
    assert "<img" not in page and "<a " not in page, "no element made of a stored name"
    assert page.count("&lt;img src=x onerror=alert(1)&gt;") >= 5  # scope, verdict, tier, reviewer, model …
    tokens = FORGE.parse(out)
    rows = [t for t in tokens if t.type == "tr_open"]
    assert rows, "the tables are tables"
    for table in (t for t in tokens if t.type == "table_open"):
        start = tokens.index(table)
        end = next(i for i in range(start, len(tokens)) if tokens[i].type == "table_close")
        counts = set()
        cells = 0
        for token in tokens[start:end]:
            if token.type == "tr_open":
                cells = 0
            elif token.type in ("th_open", "td_open"):
                cells += 1
            elif token.type == "tr_close":
                counts.add(cells)
        assert len(counts) == 1, f"a row with another number of cells: {counts}"
    text = re.sub(r"<[^>]+>", "", page)  # what a reader sees
    assert "![pixel](https://evil.example/p.png)" in text and "`x`" in text and "| ![pixel]" in text
    assert "lgtm&lt;img" in page and "huge|&lt;img" in page, "an unknown verdict and tier are shown as they are"


def test_terminal_passes_no_escape_sequence_or_rich_markup(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    store = Store(parse_record_url(url))
    name = "[bold red]reviewer[/bold red]\x1b[2J\x1b]0;owned\x07"
    kwargs = {"findings": [seed.finding(name)], "reviewers": [seed.reviewer("security", name)]}
    store.write(seed.record(review_kwargs=kwargs))
    store.close()
    out = stats("--store", url, "--format", "terminal")
    assert "\x1b" not in out and "\x07" not in out
    assert out.count("[bold red]reviewer[/bold red]") >= 3  # findings, tokens by model, acted-on


def test_json_keeps_every_stored_value_exactly(tmp_path: Path) -> None:
    data = json.loads(stats("--store", hostile_store(tmp_path), "--format", "json"))
    assert data["overview"]["verdicts"] == {f"lgtm{HTML}": 1}
    assert [r["tier"] for r in data["cost_duration"]["rows"]] == [f"huge|{HTML}", "all"]
    [row] = data["findings_by_reviewer"]["rows"]
    assert (row["reviewer"], row["total"], row["critical"]) == (HOSTILE, 1, 0)  # "blocker" counts in the total
