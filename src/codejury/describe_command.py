"""``codejury describe``: the walkthrough of a change alone, as markdown or JSON, without a review.

The change is chosen as ``codejury review`` chooses it (the current branch, a range, a diff file, or a merge
request with ``--url``); the walkthrough is written by the composition root's ``Session.describe`` (the review's
settings, kill switch, daily caps and models) and checked against the diff. Only click is imported at start-up.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from codejury.cli_io import check_writable, exit_on_errors
from codejury.cli_io import err_line as _err
from codejury.errors import InputError
from codejury.flags import review_flags, review_options

DESCRIBE_OPTIONS = (
    "working_tree",
    "base_ref",
    "head_ref",
    "diff_file",
    "source",
    "repo_dir",
    "output",
    "events_file",
    "model",
    "model_for",
    "exclude",
    "config_file",
    "remote_config",
    "plugins",
    "url",
)
"""The options of ``codejury review`` that ``codejury describe`` takes: what chooses the change and the models."""

EXIT_CODES = (
    "Exit codes: 0 the walkthrough was written; 2 bad input or configuration; 3 its model did not write one; "
    "4 the forge could not be reached; 6 refused by the kill switch or a daily cap."
)


@click.command("describe", epilog=EXIT_CODES)
@review_options(*DESCRIBE_OPTIONS)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
    help="Output format.",
)
def describe_command(fmt: str, **params: Any) -> None:
    """Explain a change: what it does and why, its files by purpose, and a diagram of a new or rerouted flow."""
    import asyncio

    flags = review_flags(params)
    text = exit_on_errors(lambda: asyncio.run(_described(dict(os.environ), flags, fmt)))
    if text is None:
        sys.exit(3)
    if flags.output is None:
        click.echo(text, nl=False)
    else:
        flags.output.write_text(text, encoding="utf-8")


async def _described(env: dict[str, str], flags: Any, fmt: str) -> str | None:
    from codejury import session

    if flags.output is not None:
        check_writable("--output", flags.output)
    if flags.diff_file and (flags.working_tree or flags.base_ref or flags.head_ref):
        raise InputError("--diff cannot be combined with --working-tree, --base or --head")
    async with session.Session(session.load_plugins(flags.plugins), warn=_err, progress=_err) as sessions:
        written = await sessions.describe(env, flags)
    if written.walkthrough is None:
        _err(written.note or "walkthrough: not written")
        return None
    if fmt == "json":
        import json

        from codejury.render.jsonout import walkthrough_to_dict

        return json.dumps(walkthrough_to_dict(written.walkthrough), indent=2, ensure_ascii=False) + "\n"
    from codejury.render.markdown import walkthrough_lines

    return "\n".join(walkthrough_lines(written.walkthrough)) + "\n"
