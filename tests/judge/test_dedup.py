from __future__ import annotations

from typing import Any

from codejury.findings import Finding
from codejury.judge.dedup import (
    LINE_SLACK,
    deduplicate,
    is_duplicate,
    normalise_category,
    title_tokens,
    titles_similar,
)


def f(id: str, **overrides: Any) -> Finding:
    fields: dict[str, Any] = {
        "id": id,
        "reviewer": "security",
        "category": "sql-injection",
        "severity": "warning",
        "path": "app/db.py",
        "start_line": 10,
        "end_line": 12,
        "title": "SQL query built from user input",
        "body": "Use parameters.",
        "confidence": 0.8,
    }
    fields.update(overrides)
    return Finding(**fields)


def test_overlapping_similar_titles_merged_keeping_the_more_severe() -> None:
    weak = f("a", reviewer="code_quality", category="style", title="SQL query built from the user input")
    strong = f("b", severity="critical", start_line=11, end_line=11, category="injection")
    kept, dropped = deduplicate([weak, strong])
    assert kept == [strong]
    assert dropped == [(weak, strong)]


def test_same_severity_higher_confidence_wins_then_longer_body_then_first() -> None:
    low = f("low", confidence=0.5)
    high = f("high", confidence=0.9)
    assert deduplicate([low, high])[0] == [high]
    short = f("short", body="x")
    long = f("long", body="a much longer explanation")
    assert deduplicate([short, long])[0] == [long]
    first, second = f("first"), f("second")
    assert deduplicate([first, second])[0] == [first]


def test_same_category_counts_as_same_issue_even_with_different_titles() -> None:
    a = f("a", title="Unescaped parameter", category="SQL_Injection")
    b = f("b", title="Raw string concatenation", category="sql-injection")
    kept, _ = deduplicate([a, b])
    assert len(kept) == 1


def test_different_files_kept() -> None:
    a = f("a")
    b = f("b", path="app/other.py")
    kept, dropped = deduplicate([a, b])
    assert kept == [a, b]
    assert dropped == []


def test_different_issues_on_same_lines_kept() -> None:
    a = f("a")
    b = f("b", category="n+1-query", title="Query executed inside a loop", reviewer="performance")
    assert deduplicate([a, b])[0] == [a, b]


def test_different_problems_of_one_function_are_kept_though_their_titles_name_it() -> None:
    # Three reviewers of one change on the same line: the names of code are not the problem.
    n_plus_one = f("a", reviewer="performance", category="N+1 pattern", title="N+1 pattern in `overdue_by_manager`")
    wrong_type = f("b", reviewer="code_quality", category="bug", title="Incorrect return type of `overdue_by_manager`")
    docs = f("c", reviewer="documentation", category="docs", title="Documentation for overdueByManager()")
    assert deduplicate([n_plus_one, wrong_type, docs])[0] == [n_plus_one, wrong_type, docs]
    # The same problem named twice still merges, whatever the names around it.
    again = f("d", reviewer="code_quality", category="loop", title="N+1 pattern in overdue_by_manager")
    kept, dropped = deduplicate([n_plus_one, again])
    assert kept == [n_plus_one] and dropped == [(again, n_plus_one)]


def test_nearby_lines_within_slack_merged() -> None:
    a = f("a", start_line=10, end_line=12)
    b = f("b", start_line=12 + LINE_SLACK, end_line=12 + LINE_SLACK)
    assert len(deduplicate([a, b])[0]) == 1


def test_non_overlapping_beyond_slack_kept() -> None:
    a = f("a", start_line=10, end_line=12)
    b = f("b", start_line=13 + LINE_SLACK, end_line=20)
    c = f("c", start_line=1, end_line=10 - LINE_SLACK - 1)
    kept, dropped = deduplicate([a, b, c])
    assert kept == [a, b, c]
    assert dropped == []


def test_long_span_found_from_far_start() -> None:
    # A kept finding starting far above still overlaps a later one through its long span.
    wide = f("wide", start_line=1, end_line=200, severity="critical")
    small = [
        f(f"s{i}", start_line=5 * i + 1, end_line=5 * i + 1, category="other", title=f"thing {i}") for i in range(10)
    ]
    narrow = f("narrow", start_line=150, end_line=150)
    kept, dropped = deduplicate([*small, wide, narrow])
    assert narrow not in kept
    assert dropped == [(narrow, wide)]
    assert wide in kept and all(s in kept for s in small)


def test_kept_in_input_order_and_chain_resolves_to_strongest() -> None:
    x = f("x", path="b.py", title="Unrelated", category="docs")
    a = f("a", confidence=0.3)
    b = f("b", confidence=0.9, start_line=11, end_line=13)
    c = f("c", confidence=0.6, start_line=12, end_line=14)
    kept, dropped = deduplicate([x, a, b, c])
    assert kept == [x, b]
    assert dropped == [(a, b), (c, b)]


def test_empty_input() -> None:
    assert deduplicate([]) == ([], [])


def test_helpers() -> None:
    assert normalise_category("SQL_Injection ") == "sql-injection"
    assert normalise_category("n+1 query") == "n-1-query"
    assert title_tokens("The SQL in a query") == ["sql", "query"]
    assert title_tokens("Missing await in cancelOrder (`orders/service.ts`)") == ["missing", "await"]
    assert titles_similar("Missing null check on user", "missing null-check for user")
    assert not titles_similar("Missing null check", "Slow regular expression")
    assert not titles_similar("the", "a")
    assert is_duplicate(f("a"), f("b", category="x"))
    assert not is_duplicate(f("a"), f("b", path="other.py"))
