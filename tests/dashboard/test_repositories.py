"""The dashboard by repository: the chargeback table on each backend, merge request links to the configured
forges, and the service's filters by repository and period (query parameters, applied to the store's reads)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner

from codejury.cli import cli
from codejury.dashboard.page import dashboard_data, render_dashboard
from codejury.dashboard.repositories import ChangeLinks
from codejury.forges.hosts import forge_hosts
from codejury.record.stats import compute_stats
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from codejury.service.app import ServiceState
from codejury.testing import review_seed as seed
from codejury.testing.dashboard_seed import REPOS, Seeded, seed_month
from tests.service.test_app import client, state

__all__ = ["client", "state"]  # the service's route fixtures
NOW = datetime(2026, 11, 24, 12, tzinfo=UTC)
FORGES = forge_hosts({"CODEJURY_GITHUB_URL": "https://github.com", "CODEJURY_GITLAB_URL": "https://gitlab.example.com"})


@pytest.fixture
def month(store_url: str) -> Iterator[tuple[Store, Seeded]]:
    store = Store(parse_record_url(store_url))
    seeded = seed_month(store, NOW, n=40)
    yield store, seeded
    store.close()


def test_each_repository_row_sums_its_own_reviews(month: tuple[Store, Seeded]) -> None:
    store, seeded = month
    data = dashboard_data(store, now=NOW)
    rows = {row.repository: row for row in data.repositories}
    assert set(rows) == {r.repository for r in seeded.records}
    for name, row in rows.items():
        mine = [r for r in seeded.records if r.repository == name]
        assert row.reviews == len(mine)
        assert row.cost_usd == pytest.approx(sum(r.cost_usd for r in mine))
        assert row.findings == sum(len(r.findings) for r in mine)
        assert row.blocked == sum(r.verdict == "requested_changes" for r in mine)
        with store.connect() as conn:  # the acted-on rate of `codejury stats --repo`, summed over its reviewers
            acted = compute_stats(conn, repository=name).acted_on.by_reviewer
        followed = sum(a.followed_up for a in acted)
        assert row.followed_up == followed and followed > 0
        assert row.acted_on_rate == pytest.approx(sum(a.acted_on for a in acted) / followed)
    costs = [row.cost_usd for row in data.repositories]
    assert costs == sorted(costs, reverse=True)  # the most expensive first


def test_the_period_narrows_the_repository_table(month: tuple[Store, Seeded]) -> None:
    store, seeded = month
    since = NOW - timedelta(days=7)
    data = dashboard_data(store, since=since, now=NOW)
    recent = [r for r in seeded.records if r.recorded_at >= since]
    assert sum(row.reviews for row in data.repositories) == len(recent) < len(seeded.records)
    assert set(data.known_repositories) == set(REPOS)  # the filter still offers every repository


@pytest.mark.parametrize(
    ("repository", "change", "url"),
    [
        ("github.com/acme/shop", "#42", "https://github.com/acme/shop/pull/42"),
        ("gitlab.example.com/infra/deploy", "!7", "https://gitlab.example.com/infra/deploy/-/merge_requests/7"),
        ("gitlab.example.com/a/b/c", "!7", "https://gitlab.example.com/a/b/c/-/merge_requests/7"),
        ("gitlab.com/infra/deploy", "!7", None),  # not the configured GitLab
        ("github.com/acme/shop", "!7", None),  # a GitLab merge request on GitHub's host
        ("github.com/acme/shop", "feature/search", None),  # a local review's branch
        ("github.com/acme/shop", "#0", None),
        ("github.com/acme/../../evil", "#1", None),
        ("github.com/acme", "#1", None),
        ("github.com.evil.example/acme/shop", "#1", None),
    ],
)
def test_a_change_links_to_its_page_on_the_configured_forge_only(repository: str, change: str, url: str | None) -> None:
    assert ChangeLinks(FORGES).url(repository, change) == url


def test_github_enterprise_under_a_path_links_below_it() -> None:
    hosts = forge_hosts({"CODEJURY_GITHUB_URL": "https://code.example.com:8443/github"})
    links = ChangeLinks(hosts)
    assert (
        links.url("code.example.com:8443/github/acme/shop", "#9")
        == "https://code.example.com:8443/github/acme/shop/pull/9"
    )
    assert links.url("code.example.com:8443/acme/shop", "#9") is None


def test_the_cli_page_links_merge_requests_to_the_configured_forge(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    store = Store(parse_record_url(url))
    store.write(seed.record(NOW, repository="ghe.example.com/acme/shop", change_id="#42"))
    store.write(seed.record(NOW, repository="github.com/acme/shop", change_id="#43"))
    store.close()
    out = tmp_path / "report.html"
    result = CliRunner().invoke(
        cli, ["dashboard", "-o", str(out), "--store", url], env={"CODEJURY_GITHUB_URL": "https://ghe.example.com"}
    )
    assert result.exit_code == 0, result.output
    page = out.read_text()
    links = re.findall(r'<a class="change" href="([^"]+)"', page)
    assert links == ["https://ghe.example.com/acme/shop/pull/42"]  # github.com is not the configured GitHub
    assert 'id="repositories"' in page and "ghe.example.com/acme/shop" in page
    assert 'class="filters"' not in page  # a file has no server to filter with


def _rows(page: str) -> dict[str, str]:
    """The repository table's rows: repository → the row's text."""
    table = page.split('<table class="repositories">', 1)[1].split("</table>", 1)[0]
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]:
        cells = [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        rows[cells[0]] = " | ".join(cells[1:])
    return rows


async def test_the_service_filters_by_repository_and_period(client: httpx2.AsyncClient, state: ServiceState) -> None:
    state.dashboard_public = True
    store = state.store
    assert store is not None
    now = datetime.now(UTC)
    store.write(seed.record(now - timedelta(days=40), repository="github.example/acme/shop", change_id="#1"))
    store.write(seed.record(now - timedelta(days=2), repository="github.example/acme/shop", change_id="#2"))
    store.write(seed.record(now - timedelta(days=1), repository="gitlab.example/infra/deploy", change_id="!3"))

    everything = await client.get("/dashboard")
    assert everything.status_code == 200
    assert set(_rows(everything.text)) == {"github.example/acme/shop", "gitlab.example/infra/deploy"}
    assert _rows(everything.text)["github.example/acme/shop"].startswith("2 |")
    assert 'href="https://gitlab.example/infra/deploy/-/merge_requests/3"' in everything.text
    assert 'href="/dashboard?repository=gitlab.example%2Finfra%2Fdeploy"' in everything.text

    week = await client.get("/dashboard", params={"since": "7d"})
    assert _rows(week.text)["github.example/acme/shop"].startswith("1 |")  # the 40-day-old review is out
    one = await client.get("/dashboard", params={"repository": "github.example/acme/shop", "since": "7d"})
    assert set(_rows(one.text)) == {"github.example/acme/shop"}
    assert "merge_requests/3" not in one.text
    assert 'href="/dashboard?since=7d"' in one.text  # back to every repository, the period kept
    assert 'href="/dashboard?repository=github.example%2Facme%2Fshop&amp;since=30d"' in one.text

    bad = await client.get("/dashboard", params={"since": "last tuesday"})
    assert bad.status_code == 400 and "\n" not in bad.text.strip() and "since expects a duration" in bad.text


def test_without_forges_no_link_leaves_the_page(month: tuple[Store, Seeded]) -> None:
    store, _ = month
    page = render_dashboard(store, now=NOW)
    assert 'class="change"' not in page and not re.search(r"https?://", page)
    linked = render_dashboard(store, now=NOW, forges=FORGES)
    hrefs = re.findall(r'href="([^"#][^"]*)"', linked)
    assert hrefs and all(h.startswith("https://github.com/acme/") for h in hrefs)
