"""Counts are printed with the word they count in the right number: "1 review", never "1 reviews"."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from codejury.dashboard.page import render_dashboard
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from codejury.render import counted
from codejury.testing import review_seed as seed
from tests.record.test_stats import run_stats

NOW = datetime(2026, 11, 24, 12, tzinfo=UTC)


def test_counted_is_singular_only_for_one() -> None:
    assert [counted(n, "review") for n in (0, 1, 2, 1204)] == ["0 reviews", "1 review", "2 reviews", "1,204 reviews"]
    assert counted(1, "match", "matches") == "1 match" and counted(3, "match", "matches") == "3 matches"


def one_review_store(tmp_path: Path) -> str:
    """A store holding one review: a failed reviewer, one failback, break glass."""
    url = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    store = Store(parse_record_url(url))
    failed = seed.reviewer("security", "anthropic:claude-opus-4-6", status="failed")
    kwargs = {"reviewers": [failed], "break_glass": True}
    store.write(seed.record(NOW, review_kwargs=kwargs, failbacks=1, break_glass_by=["alice"]))
    store.close()
    return url


def test_stats_over_one_review_says_1_review(tmp_path: Path) -> None:
    url = one_review_store(tmp_path)
    for fmt in ("terminal", "markdown"):
        code, out, err = run_stats("--store", url, "--since", "all", "--format", fmt)
        assert code == 0, err
        assert "1 review since" in out and "1 reviews" not in out, fmt


def test_the_dashboard_over_one_review_never_says_1_reviews(tmp_path: Path) -> None:
    store = Store(parse_record_url(one_review_store(tmp_path)))
    try:
        page = render_dashboard(store, since=None, now=NOW)
    finally:
        store.close()
    text = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert "1 review had a failed reviewer; 1 failback in 1 review (100%); break glass in 1 review (100%)" in text
    assert "Overview 1 review 1 change 1 repository $0.0500 total cost" in text  # the tiles
    assert not re.search(r"\b1 (reviews|failbacks|changes|repositories)\b", text)
