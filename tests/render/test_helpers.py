from __future__ import annotations

from codejury.findings import Usage
from codejury.render import (
    clean_text,
    format_cost,
    format_duration,
    format_tokens,
    group_by_section,
    location,
    one_line,
    section_title,
)
from tests.render.samples import finding


def test_clean_text_drops_controls_and_bidi_keeps_tabs_and_newlines() -> None:
    assert clean_text("a\r\nb\rc\td\x1b[0m\x07\u202e\u2066e\x9bf") == "a\nb\nc\td[0mef"


def test_one_line() -> None:
    assert one_line("  a\n\n b\t c\x00 ") == "a b c"


def test_section_titles() -> None:
    assert section_title("security") == "Security"
    assert section_title("agents_md") == "AGENTS.md"
    assert section_title("my-team_rules") == "My Team Rules"
    assert section_title("__") == "General"


def test_group_by_section_known_first_then_alphabetical_most_severe_first() -> None:
    findings = [
        finding(id="1", reviewer="zeta", severity="warning"),
        finding(id="2", reviewer="documentation", severity="suggestion"),
        finding(id="3", reviewer="security", severity="suggestion", path="b.py"),
        finding(id="4", reviewer="security", severity="critical", path="z.py"),
        finding(id="5", reviewer="alpha", severity="warning"),
    ]
    groups = group_by_section(findings)
    assert [title for title, _ in groups] == ["Security", "Documentation", "Alpha", "Zeta"]
    assert [f.id for f in groups[0][1]] == ["4", "3"]


def test_location() -> None:
    assert location(finding(start_line=3, end_line=3)) == "src/app/db.py:3"
    assert location(finding(start_line=3, end_line=5)) == "src/app/db.py:3-5"


def test_format_duration() -> None:
    assert format_duration(0) == "0.0s"
    assert format_duration(12.34) == "12.3s"
    assert format_duration(59.96) == "1m 00s"
    assert format_duration(60) == "1m 00s"
    assert format_duration(125.4) == "2m 05s"


def test_format_cost_and_tokens() -> None:
    assert format_cost(0.00012) == "$0.0001"
    assert format_tokens(Usage(input_tokens=1234, output_tokens=56)) == "1,234 in / 56 out"
    assert format_tokens(Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3000)) == (
        "1 in / 2 out (cache 3,000 read / 0 write)"
    )
