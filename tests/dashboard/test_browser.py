"""The page ``codejury dashboard`` writes, opened in a real headless Chromium (Debian's chromium and
chromedriver, driven by selenium): it renders, its charts have data, a recent review opens in full,
a hostile title stays text, and the console has no error.

Set ``CODEJURY_DASHBOARD_SCREENSHOT=docs/img/dashboard.png`` to keep the screenshot for the docs.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from click.testing import CliRunner

from codejury.cli import cli
from codejury.dashboard.page import render_review_page
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from codejury.testing.dashboard_seed import HOSTILE_TITLE, REPOS, day_verdict_pairs, seed_month

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHARTS = {
    "overview": 2,  # reviews by verdict, by tier
    "cost": 2,  # cost and duration by tier
    "findings": 2,  # by severity over time, by reviewer
    "acted-on": 2,  # over time, by reviewer
    "tokens": 3,  # tokens over time, cache hit rate over time, tokens by model
}


def _errors(driver: WebDriver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def _open(driver: WebDriver, page: Path) -> None:
    driver.get_log("browser")  # drop what an earlier page logged
    driver.get(page.as_uri())


def test_the_dashboard_renders_with_data_and_opens_a_review(chromium: WebDriver, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    store = Store(parse_record_url(url))
    now = datetime.now(UTC)
    seeded = seed_month(store, now)
    store.close()
    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["dashboard", "-o", str(out), "--store", url, "--since", "30d"])
    assert result.exit_code == 0, result.output

    _open(chromium, out)
    assert chromium.title == "codejury dashboard"
    assert chromium.execute_script("return document.scripts.length") == 0
    for section, expected in CHARTS.items():
        figures = chromium.find_elements(By.CSS_SELECTOR, f"#{section} figure.chart")
        assert len(figures) == expected, section
        for figure in figures:
            marks = figure.find_elements(By.CSS_SELECTOR, "svg .mark")
            box = figure.find_element(By.TAG_NAME, "svg").rect
            assert marks and box["width"] > 300 and box["height"] > 60, figure.get_attribute("innerHTML")[:200]
    verdict_bars = chromium.find_elements(By.CSS_SELECTOR, "#overview figure.chart:first-of-type rect.mark")
    assert len(verdict_bars) == len(day_verdict_pairs(seeded.records))  # one segment per (day, verdict)
    assert chromium.find_element(By.CSS_SELECTOR, "#overview .tile b").text == str(len(seeded.records))
    assert not chromium.find_elements(By.CSS_SELECTOR, "main .empty")
    by_repository = chromium.find_elements(By.CSS_SELECTOR, "#repositories table.repositories tbody tr")
    assert len(by_repository) == len({r.repository for r in seeded.records})
    assert all(row.is_displayed() and row.text.split()[0] in REPOS for row in by_repository)
    changes = chromium.find_elements(By.CSS_SELECTOR, "#recent a.change")
    assert changes and all(
        re.fullmatch(r"https://github\.com/acme/(shop|api)/pull/\d+", a.get_attribute("href") or "") for a in changes
    )  # merge request numbers link to the forge; the GitLab-hosted repository's are not on github.com

    shot = Path(os.environ.get("CODEJURY_DASHBOARD_SCREENSHOT") or tmp_path / "dashboard.png")
    shot.parent.mkdir(parents=True, exist_ok=True)
    assert chromium.save_screenshot(str(shot)) and shot.stat().st_size > 20_000

    rows = chromium.find_elements(By.CSS_SELECTOR, "#recent a.open-review")
    assert len(rows) == 50
    target = rows[0].get_attribute("href") or ""
    review = chromium.find_element(By.ID, target.rsplit("#", 1)[1])
    assert not review.is_displayed()
    rows[0].click()  # the newest review: the showcase
    assert review.is_displayed()
    sections = [h.text for h in review.find_elements(By.CSS_SELECTOR, "h3.section")]
    assert sections == ["Security (1)", "Performance (1)", "Documentation (1)"]
    titles = [t.text for t in review.find_elements(By.CSS_SELECTOR, ".finding .title")]
    assert HOSTILE_TITLE in titles  # shown as text, exactly as recorded
    assert chromium.execute_script("return window.__xss === undefined && document.images.length === 0")
    warning = review.find_element(By.CSS_SELECTOR, ".failed-reviewers")
    assert warning.is_displayed() and "performance" in warning.text and "HTTP 529 overloaded" in warning.text
    skipped = review.find_element(By.CSS_SELECTOR, "ul.skipped").text
    assert "package-lock.json: lock file" in skipped and "shop/huge_module.py" in review.text
    assert _errors(chromium) == []

    single = tmp_path / "review.html"
    store = Store(parse_record_url(url))
    single.write_text(render_review_page(store, seeded.showcase.uid) or "")
    store.close()
    _open(chromium, single)
    shown = chromium.find_element(By.CSS_SELECTOR, "section.review")
    assert shown.is_displayed() and len(shown.find_elements(By.CSS_SELECTOR, ".finding")) == 3
    assert _errors(chromium) == []


def test_an_empty_store_renders_without_charts_or_errors(chromium: WebDriver, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    store = Store(parse_record_url(url))
    seed_month(store, datetime.now(UTC) - timedelta(days=90), n=3)  # all outside the last 30 days
    store.close()
    out = tmp_path / "report.html"
    assert CliRunner().invoke(cli, ["dashboard", "-o", str(out), "--store", url]).exit_code == 0
    _open(chromium, out)
    assert "No review has been recorded in this period." in chromium.find_element(By.ID, "overview").text
    assert not chromium.find_elements(By.CSS_SELECTOR, "svg .mark")
    assert _errors(chromium) == []


def test_the_console_check_sees_what_a_broken_page_logs(chromium: WebDriver, tmp_path: Path) -> None:
    """The check above is real: a script the page's policy blocks and a missing image are console errors."""
    page = tmp_path / "broken.html"
    head = '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'">'
    page.write_text(f"<!doctype html><html><head>{head}</head><body><script>1</script></body></html>")
    _open(chromium, page)
    assert any("Content Security Policy" in message for message in _errors(chromium))
