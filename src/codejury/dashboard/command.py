"""``codejury dashboard``: the recorded reviews as one self-contained HTML page.

Only click is imported at start-up; the store, the templates and the charts when the command runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click


@click.command("dashboard")
@click.option(
    "-o",
    "--output",
    required=True,
    metavar="PATH",
    help="Write the page here (an .html file that opens offline; '-' for standard output).",
)
@click.option(
    "--since",
    default="30d",
    show_default=True,
    metavar="30d|12h|2w|DATE|all",
    help="Reviews recorded since this long ago, since a date (2026-11-01, UTC), or all of them.",
)
@click.option("--repo", "repository", metavar="REPOSITORY", help="Only this repository (as recorded: host/group/name).")
@click.option(
    "--store",
    metavar="URL",
    help="Read this store (sqlite:///PATH or postgresql://…) instead of record.url / CODEJURY_RECORD_URL "
    "(default: the SQLite file in the user's data directory).",
)
@click.option(
    "--recent",
    type=click.IntRange(0, 1000),
    default=50,
    show_default=True,
    help="How many of the most recent reviews to list, each opening its full review.",
)
def dashboard_command(output: str, since: str, repository: str | None, store: str | None, recent: int) -> None:
    """Write the recorded reviews as one HTML page: charts over time and the recent reviews in full."""
    from codejury.errors import CodejuryError

    try:
        _dashboard(output, since, repository, store, recent, dict(os.environ))
    except CodejuryError as exc:
        from codejury.secrets import redact_env

        click.echo(f"codejury: {redact_env(str(exc))}", err=True)
        sys.exit(2)


def _dashboard(output: str, since: str, repository: str | None, store: str | None, recent: int,
               env: dict[str, str]) -> None:  # fmt: skip
    from codejury.cli_io import check_writable, shown_path, write_output
    from codejury.dashboard.page import render_dashboard
    from codejury.errors import InputError
    from codejury.record.stats import parse_since
    from codejury.record.store import Store
    from codejury.record.target import parse_record_url
    from codejury.secrets import Redactor
    from codejury.stats_command import configured_url

    bound = parse_since(since)
    path = None if output == "-" else Path(output)
    if path is not None:
        check_writable("-o", path)
    if store is not None:
        try:
            target = parse_record_url(store)
        except ValueError as exc:
            raise InputError(f"--store expects {exc}") from None
    else:
        target = parse_record_url(configured_url(env, Path.cwd()))
    if target.kind == "none":
        raise InputError("recording is off (record.url = none): pass --store URL to read a store")
    if target.kind == "service":
        raise InputError(f"{target.shown} is a review service: it serves this dashboard itself; pass --store URL")
    reader = Store(target, statement_timeout_s=120.0)
    try:
        page = render_dashboard(
            reader, since=bound, repository=repository, recent=recent, redactor=Redactor.from_env(env)
        )
    finally:
        reader.close()
    if path is None:
        click.echo(page, nl=False)
        return
    write_output(path, page)
    click.echo(f"codejury: dashboard written to {shown_path(path)}", err=True)
