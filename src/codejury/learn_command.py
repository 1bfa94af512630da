"""``codejury learn``: rules proposed from what the review store remembers about one repository.

It reads the store (``--store``, else ``record.url``), groups what people with write access dismissed and what
authors fixed after a finding, and writes ``.codejury/rules/learned.md`` (``--output`` elsewhere), or with
``--propose PROJECT_URL`` opens a merge request (GitLab) or pull request (GitHub) there with the file: nothing
learned applies until a person merges it (``codejury.memory.learn``). Only click is imported at start-up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from codejury.stats_command import exit_on_error, open_reader, store_option


@click.command("learn")
@click.option(
    "--repo",
    "repository",
    metavar="REPOSITORY",
    help="The repository as recorded (host/group/name); default: the project --propose names.",
)
@click.option(
    "--since",
    default=None,
    metavar="180d|2w|DATE|all",
    help="Reviews recorded since then (default: [memory] max_age_days, the window memory suppresses in).",
)
@click.option(
    "--min-changes",
    type=click.IntRange(1),
    default=2,
    show_default=True,
    help="Merge requests a pattern must be seen in to become a rule.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the rules here (default: .codejury/rules/learned.md in the current directory).",
)
@click.option(
    "--propose",
    metavar="PROJECT_URL",
    help="Open a merge request on this GitLab project (https://HOST/GROUP/PROJECT, token in CODEJURY_GITLAB_TOKEN) "
    "or a pull request on this GitHub repository (https://github.com/OWNER/NAME, token in CODEJURY_GITHUB_TOKEN) "
    "that writes the rules file, instead of writing it here; the forge must be the configured one.",
)
@store_option
def learn_command(**options: Any) -> None:
    """Propose rules for .codejury/rules/learned.md from what the team dismissed or fixed, with counts and links."""
    line = exit_on_error(lambda: _one_line(LearnOptions(**options), dict(os.environ)))
    click.echo(line)


@dataclass(frozen=True)
class LearnOptions:
    """``codejury learn``'s flags."""

    repository: str | None
    since: str | None
    min_changes: int
    output: Path | None
    propose: str | None
    store: str | None


def _one_line(opts: LearnOptions, env: dict[str, str]) -> str:
    """``_learn``, with an error's message on one line (a forge's own words may span several)."""
    from codejury.errors import CodejuryError

    try:
        return _learn(opts, env)
    except CodejuryError as exc:
        exc.args = (" ".join(str(exc).split()), *exc.args[1:])
        raise


def _learn(opts: LearnOptions, env: dict[str, str]) -> str:
    from codejury.errors import InputError
    from codejury.memory.learn import LEARNED_PATH, learn_from
    from codejury.record.stats import parse_since
    from codejury.stats_command import configured_settings

    propose, since, min_changes = opts.propose, opts.since, opts.min_changes
    project_url = propose.strip().rstrip("/") if propose else None
    if project_url is not None and urlsplit(project_url).scheme not in ("http", "https"):
        raise InputError(f"--propose expects the project's URL, https://HOST/GROUP/PROJECT (got {propose!r})")
    repository = opts.repository or (project_url.split("://", 1)[1] if project_url else None)
    if not repository:
        raise InputError("which repository? --repo REPOSITORY (as recorded: host/group/name) or --propose PROJECT_URL")
    settings = configured_settings(env, Path.cwd())
    bound = parse_since(since) if since else None  # "all": None
    start = bound or (
        datetime(1970, 1, 1)
        if since
        else datetime.now(UTC).replace(tzinfo=None) - timedelta(days=settings.memory.max_age_days)
    )
    web_base = project_url or f"https://{repository}"
    reader = open_reader(opts.store, env, on_service="run codejury learn where its store can be read")
    try:
        with reader.connect() as conn:
            text, rules = learn_from(conn, repository, start, web_base=web_base, min_changes=min_changes)
    finally:
        reader.close()
    if rules == 0:
        return (
            f"nothing to propose: no rule was dismissed or fixed in {min_changes} merge requests of {repository} "
            f"since {start.date().isoformat()}"
        )
    if project_url is not None:
        import asyncio

        from codejury.memory.propose import propose_at

        return asyncio.run(propose_at(project_url, text, rules, env)).line
    path = opts.output or Path(LEARNED_PATH)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return f"wrote {rules} learned rule(s) to {path}: review them, then commit the file to apply them"
