"""``codejury stats``: the recorded reviews read back as tables (markdown, terminal or JSON).

Only click is imported at start-up; the store (SQLAlchemy) is imported when the command runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

STATS_FORMATS = ("markdown", "terminal", "json")


@click.command("stats")
@click.option(
    "--since",
    default="30d",
    show_default=True,
    metavar="30d|12h|2w|DATE|all",
    help="Reviews recorded since this long ago, since a date (2026-11-01, UTC), or all of them.",
)
@click.option("--repo", "repository", metavar="REPOSITORY", help="Only this repository (as recorded: host/group/name).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(STATS_FORMATS),
    default=None,
    help="Output format (default: terminal on a TTY, markdown otherwise).",
)
@click.option(
    "--store",
    metavar="URL",
    help="Read this store (sqlite:///PATH or postgresql://…) instead of record.url / CODEJURY_RECORD_URL "
    "(default: the SQLite file in the user's data directory).",
)
def stats_command(since: str, repository: str | None, fmt: str | None, store: str | None) -> None:
    """Print the recorded reviews' tables: cost and duration percentiles, findings, tokens, acted-on rate."""
    from codejury.errors import CodejuryError

    try:
        text = _stats(since, repository, fmt, store, dict(os.environ))
    except CodejuryError as exc:
        from codejury.secrets import redact_env

        click.echo(f"codejury: {redact_env(str(exc))}", err=True)
        sys.exit(2)
    click.echo(text, nl=False)


def _stats(since: str, repository: str | None, fmt: str | None, store: str | None, env: dict[str, str]) -> str:
    from codejury.errors import InputError
    from codejury.record.stats import compute_stats, parse_since
    from codejury.record.stats_render import RENDERERS, render_stats_terminal
    from codejury.record.store import Store
    from codejury.record.target import parse_record_url

    bound = parse_since(since)
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
        raise InputError(f"{target.shown} is a review service: its stats are on its own pages; pass --store URL")
    reader = Store(target, statement_timeout_s=120.0)
    try:
        with reader.connect() as conn:
            stats = compute_stats(conn, since=bound, repository=repository, store=target.shown)
    finally:
        reader.close()
    chosen = fmt or ("terminal" if sys.stdout.isatty() else "markdown")
    if chosen == "terminal":
        return render_stats_terminal(stats, color=sys.stdout.isatty())
    return RENDERERS[chosen](stats)


def configured_url(env: dict[str, str], cwd: Path) -> str | None:
    """``record.url`` as ``codejury review`` in ``cwd`` would see it: its config files, then the environment."""
    from codejury.bounded_io import MAX_CONFIG_BYTES, read_path
    from codejury.config import Settings, apply_environment, merge_file_table, read_config_text
    from codejury.errors import ConfigError
    from codejury.settings_loader import CONFIG_FILES

    settings = Settings()
    for name in CONFIG_FILES:
        path = cwd / name
        if path.is_file():
            data = read_path(path, MAX_CONFIG_BYTES, f"config file {path}", ConfigError)
            table, prefix = read_config_text(name, data.decode("utf-8", "replace"))
            settings = merge_file_table(settings, table, name, prefix=prefix)
    return apply_environment(settings, env).record_url
