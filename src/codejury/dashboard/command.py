"""``codejury dashboard``: the recorded reviews as one self-contained HTML page.

Only click is imported at start-up; the store, the templates and the charts when the command runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from codejury.stats_command import exit_on_error, open_reader, repo_option, since_option, store_option


@click.command("dashboard")
@click.option(
    "-o",
    "--output",
    required=True,
    metavar="PATH",
    help="Write the page here (an .html file that opens offline; '-' for standard output).",
)
@since_option
@repo_option
@store_option
@click.option(
    "--recent",
    type=click.IntRange(0, 1000),
    default=50,
    show_default=True,
    help="How many of the most recent reviews to list, each opening its full review.",
)
def dashboard_command(output: str, since: str, repository: str | None, store: str | None, recent: int) -> None:
    """Write the recorded reviews as one HTML page: charts over time, a table per repository and the recent
    reviews in full (merge request numbers link to CODEJURY_GITLAB_URL / CODEJURY_GITHUB_URL)."""
    exit_on_error(lambda: _dashboard(output, since, repository, store, recent, dict(os.environ)))


def _dashboard(output: str, since: str, repository: str | None, store: str | None, recent: int,
               env: dict[str, str]) -> None:  # fmt: skip
    from codejury.cli_io import check_writable, shown_path, write_output
    from codejury.dashboard.page import render_dashboard
    from codejury.forges.hosts import forge_hosts
    from codejury.record.stats import parse_since
    from codejury.secrets import Redactor

    bound = parse_since(since)
    forges = forge_hosts(env)  # merge request numbers link to their pages there
    path = None if output == "-" else Path(output)
    if path is not None:
        check_writable("-o", path)
    reader = open_reader(store, env, on_service="it serves this dashboard itself")
    try:
        page = render_dashboard(
            reader, since=bound, repository=repository, recent=recent, redactor=Redactor.from_env(env), forges=forges
        )
    finally:
        reader.close()
    if path is None:
        click.echo(page, nl=False)
        return
    write_output(path, page)
    click.echo(f"codejury: dashboard written to {shown_path(path)}", err=True)
