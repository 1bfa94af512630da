"""``codejury stats``: the recorded reviews read back as tables (markdown, terminal or JSON).

Only click is imported at start-up; the store (SQLAlchemy) is imported when the command runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

if TYPE_CHECKING:
    from codejury.config import Settings
    from codejury.record.store import Store

STATS_FORMATS = ("markdown", "terminal", "json")
T = TypeVar("T")

# The options ``codejury stats`` and ``codejury dashboard`` share: which reviews, from which store.
since_option = click.option(
    "--since",
    default="30d",
    show_default=True,
    metavar="30d|12h|2w|DATE|all",
    help="Reviews recorded since this long ago, since a date (2026-11-01, UTC), or all of them.",
)
repo_option = click.option(
    "--repo", "repository", metavar="REPOSITORY", help="Only this repository (as recorded: host/group/name)."
)
store_option = click.option(
    "--store",
    metavar="URL",
    help="Read this store (sqlite:///PATH or postgresql://…) instead of record.url / CODEJURY_RECORD_URL "
    "(default: the SQLite file in the user's data directory).",
)


@click.command("stats")
@since_option
@repo_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(STATS_FORMATS),
    default=None,
    help="Output format (default: terminal on a TTY, markdown otherwise).",
)
@store_option
def stats_command(since: str, repository: str | None, fmt: str | None, store: str | None) -> None:
    """Print the recorded reviews' tables: cost and duration percentiles, findings, tokens, acted-on rate."""
    text = exit_on_error(lambda: _stats(since, repository, fmt, store, dict(os.environ)))
    click.echo(text, nl=False)


def exit_on_error(action: Callable[[], T]) -> T:
    """``action()``; a ``CodejuryError`` is one line on standard error (secrets redacted) and exit status 2."""
    from codejury.errors import CodejuryError

    try:
        return action()
    except CodejuryError as exc:
        from codejury.secrets import redact_env

        click.echo(f"codejury: {redact_env(str(exc))}", err=True)
        sys.exit(2)


def open_reader(store: str | None, env: dict[str, str], *, on_service: str) -> Store:
    """The store to read: ``--store URL``, else ``record.url`` as configured here (``configured_url``).

    A store that is off or a review service is an ``InputError``; ``on_service`` says where that
    service shows what was asked for."""
    from codejury.errors import InputError
    from codejury.record.store import Store
    from codejury.record.target import parse_record_url

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
        raise InputError(f"{target.shown} is a review service: {on_service}; pass --store URL")
    return Store(target, statement_timeout_s=120.0)


def _stats(since: str, repository: str | None, fmt: str | None, store: str | None, env: dict[str, str]) -> str:
    from codejury.record.stats import compute_stats, mark_unpriced, parse_since
    from codejury.record.stats_render import RENDERERS, render_stats_terminal

    bound = parse_since(since)
    reader = open_reader(store, env, on_service="its stats are on its own pages")
    try:
        with reader.connect() as conn:
            stats = compute_stats(conn, since=bound, repository=repository, store=reader.shown)
    finally:
        reader.close()
    stats = mark_unpriced(stats, _priced(env, Path.cwd()))
    chosen = fmt or ("terminal" if sys.stdout.isatty() else "markdown")
    if chosen == "terminal":
        return render_stats_terminal(stats, color=sys.stdout.isatty())
    return RENDERERS[chosen](stats)


def _priced(env: dict[str, str], cwd: Path) -> Callable[[str], bool]:
    """Whether a model has a known price here: the ``[prices]`` configured here, genai-prices' data, or free by
    design (the embedded model, a local server, the scripted test models)."""
    from codejury.models.selection import price_table

    return price_table(configured_settings(env, cwd)).is_known


def configured_url(env: dict[str, str], cwd: Path) -> str | None:
    """``record.url`` as ``codejury review`` in ``cwd`` would see it: its config files, then the environment."""
    return configured_settings(env, cwd).record_url


def configured_settings(env: dict[str, str], cwd: Path) -> Settings:
    """The settings ``codejury review`` in ``cwd`` would start from: its config files, then the environment."""
    from codejury.settings_loader import local_settings

    return local_settings(cwd, env)
