"""Which analyzers run by default is what their hand check decided: the table in docs/analyzers.md names
every built-in analyzer once, and its decision column is ``OFF_BY_DEFAULT``."""

from __future__ import annotations

from pathlib import Path

from codejury.analyzers import OFF_BY_DEFAULT, builtin_analyzers, chosen

DOC = Path(__file__).resolve().parents[2] / "docs" / "analyzers.md"
SECTION = "## Hand check: every analyzer's hits"


def decisions() -> dict[str, str]:
    """analyzer → "on" or "off", from the hand check table."""
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"{DOC} has no section {SECTION!r}"
    body = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split("|") for line in body.splitlines() if line.startswith("| ")]
    header, *table = rows
    assert header[0].strip() == "analyzer" and header[-1].strip() == "decision", header
    found: dict[str, str] = {}
    for cells in table:
        name, decision = cells[0].strip(), cells[-1].strip().split()[0]
        assert name not in found, f"{name} has two rows"
        assert decision in ("on", "off"), cells
        found[name] = decision
    return found


def test_the_hand_check_table_decides_the_default_analyzer_set() -> None:
    table = decisions()
    registered = builtin_analyzers()
    assert set(table) == set(registered), "every built-in analyzer has one row in the hand check table"
    assert {name for name, decision in table.items() if decision == "off"} == OFF_BY_DEFAULT
    on = {name for name, decision in table.items() if decision == "on"}
    assert set(chosen(registered, enable=(), disable=())) == on
