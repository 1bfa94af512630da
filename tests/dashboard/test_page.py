"""The page as HTML: self-contained, escaped, secret-free; the review page; ``codejury dashboard``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from codejury.cli import cli
from codejury.dashboard.page import render_dashboard, render_review_page
from codejury.record import schema
from codejury.record.model import record_from_review
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from codejury.secrets import Redactor
from codejury.testing import review_seed as seed
from codejury.testing.dashboard_seed import HOSTILE_TITLE, Seeded, seed_month

NOW = datetime(2026, 11, 24, 12, tzinfo=UTC)
SECRET = "sk-live-9f8e7d6c5b4a39281706"


class Tags(HTMLParser):
    """Every element name and attribute in a page, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.attributes: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.add(tag)
        self.attributes += [(name, value or "") for name, value in attrs]


@pytest.fixture
def month(tmp_path: Path) -> Iterator[tuple[Store, Seeded]]:
    store = Store(parse_record_url(f"sqlite:///{tmp_path / 'reviews.sqlite3'}"))
    seeded = seed_month(store, NOW, n=40)
    yield store, seeded
    store.close()


def test_the_page_is_self_contained_and_shows_every_table(month: tuple[Store, Seeded]) -> None:
    store, seeded = month
    page = render_dashboard(store, since=NOW - timedelta(days=30), now=NOW)
    assert page.startswith("<!doctype html>")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    tags = Tags()
    tags.feed(page)
    assert not {"script", "link", "img", "iframe", "object", "embed"} & tags.names
    assert not [a for a in tags.attributes if a[0] == "src" or a[0].startswith("on")]
    assert all(value.startswith("#") for name, value in tags.attributes if name == "href")
    assert not re.search(r"https?://", page)  # nothing on the network, not even a link
    for heading in ("Cost and duration per review, by tier", "Findings by reviewer and severity", "Acted-on rate",
                    "Tokens and cache by model", "Recent reviews"):  # fmt: skip
        assert f"<h2>{heading}</h2>" in page
    assert page.count('class="mark"') > 300
    assert f"<b>{len(seeded.records)}</b><span>reviews</span>" in page
    assert page.count('class="panel review"') == len(seeded.records)  # each recent review is in the page


def test_a_hostile_finding_title_is_text_not_markup(month: tuple[Store, Seeded]) -> None:
    store, seeded = month
    page = render_dashboard(store, since=None, now=NOW)
    assert HOSTILE_TITLE not in page
    assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;&lt;img src=x onerror=&#34;window.__xss = 2&#34;&gt;" in page
    review = render_review_page(store, seeded.showcase.uid)
    assert review is not None and "<script" not in review and "&lt;script&gt;" in review


def test_known_secrets_never_reach_the_page(tmp_path: Path) -> None:
    store = Store(parse_record_url(f"sqlite:///{tmp_path / 'reviews.sqlite3'}"))
    leaky = seed.review(reviewers=[seed.reviewer("security", "openai:gpt-5", status="failed")])
    leaky.reviewers[0].error = f"HTTP 401: bad key {SECRET}"
    leaky.findings.append(seed.finding(title=f"Key {SECRET} committed"))
    record = record_from_review(leaky, seed.events(repository="github.com/acme/shop"))
    store.write(record.model_copy(update={"recorded_at": NOW - timedelta(hours=1)}))
    redactor = Redactor([SECRET])
    page = render_dashboard(store, since=None, now=NOW, redactor=redactor)
    one = render_review_page(store, record.uid, redactor=redactor)
    store.close()
    assert one is not None
    for html in (page, one):
        assert SECRET not in html and "[REDACTED]" in html


def test_a_service_links_reviews_to_its_own_pages(month: tuple[Store, Seeded]) -> None:
    store, seeded = month
    page = render_dashboard(store, since=None, now=NOW, recent=5, review_link=lambda uid: f"/reviews/{uid}")
    assert f'href="/reviews/{seeded.showcase.uid}"' in page
    assert 'class="panel review' not in page  # not embedded: the service serves each review itself
    assert page.count('class="open-review"') == 5
    review = render_review_page(store, seeded.showcase.uid)
    assert review is not None
    assert "Security (1)" in review and "Performance (1)" in review and "Documentation (1)" in review
    assert "1 reviewer failed:" in review and "HTTP 529 overloaded" in review
    assert "package-lock.json" in review and "lock file" in review and "shop/huge_module.py" in review
    assert "semgrep was not installed" in review and "failed verification: 2" in review
    assert render_review_page(store, "no-such-review") is None


def test_a_review_without_its_json_copy_is_shown_from_its_rows(tmp_path: Path) -> None:
    store = Store(parse_record_url(f"sqlite:///{tmp_path / 'reviews.sqlite3'}"))
    record = seed.record(NOW, review_kwargs={"findings": [seed.finding(title="Row-only finding")]})
    store.write(record)
    with store.engine.begin() as conn:
        conn.execute(schema.review_documents.update().values(review={"verdict": "from a newer codejury"}))
    page = render_review_page(store, record.uid)
    store.close()
    assert page is not None
    assert "Row-only finding" in page and "shown from its recorded rows" in page


def test_an_empty_period_says_so(month: tuple[Store, Seeded]) -> None:
    store, _ = month
    page = render_dashboard(store, since=NOW + timedelta(days=1), now=NOW)
    assert "No review has been recorded in this period." in page
    assert 'class="mark"' not in page


def test_the_command_writes_the_page(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    store = Store(parse_record_url(url))
    seed_month(store, datetime.now(UTC), n=12)
    store.close()
    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["dashboard", "-o", str(out), "--store", url, "--repo", "github.com/acme/shop"])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "<code>github.com/acme/shop</code>" in page and "gitlab.example.com/infra/deploy" not in page
    assert "dashboard written to" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "yesterday"], "--since expects a duration"),
        (["--store", "mysql://db/x"], "--store expects sqlite:///PATH"),
        (["--store", "none"], "recording is off"),
        (["--store", "https://reviews.example.com"], "is a review service"),
        (["--store", "sqlite:////nonexistent/reviews.sqlite3"], "no review store at sqlite:////nonexistent"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["dashboard", "-o", str(tmp_path / "out.html"), *args])
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "out.html").exists()


def test_an_unwritable_output_fails_before_reading_the_store(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["dashboard", "-o", str(tmp_path / "missing" / "out.html"), "--store", "none"])
    assert result.exit_code == 2 and "cannot write -o" in result.output and "does not exist" in result.output
