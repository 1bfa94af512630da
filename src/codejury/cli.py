"""Commands only: parse flags, check them, call the composition root (``codejury.session``), exit code.

Exit codes (``EXIT_CODES``, also shown by ``codejury review --help`` and in the README):

- 0 the review is done and ``--fail-on`` was not triggered (or a ``--dry-run`` plan was printed);
- 1 ``--fail-on`` triggered: the review blocks the merge;
- 2 bad input or configuration, a missing or refused forge token, or a finished review that
  could not be written to ``-o``/``--events`` (it is printed on stdout instead); one-line cause;
- 3 no reviewer succeeded (the analyzers' hits are still published, as a partial review that never
  approves); 4 the forge stayed unavailable after retries (what was already posted is named; a
  re-run completes it without duplicates);
- 5 internal error: an unexpected exception, reported in one line (``CODEJURY_DEBUG=1`` prints
  the traceback); 130 interrupted.

Only click and the standard library are imported at start-up: the session, the pipeline, the
provider SDKs, pydantic and the forges are imported inside the commands, so ``codejury --help``
is instant.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, NoReturn

import click

from codejury import __version__
from codejury.cli_io import OneLineUsage, check_writable, err_line, exit_on_errors, shown_path, visible_text
from codejury.dashboard.command import dashboard_command
from codejury.describe_command import describe_command
from codejury.errors import InputError
from codejury.eval.command import eval_command
from codejury.flags import FAIL_ON_CHOICES as FAIL_ON_CHOICES
from codejury.flags import ReviewFlags, review_flags, review_options
from codejury.learn_command import learn_command
from codejury.search_command import search_command
from codejury.service.commands import serve_command, worker_command
from codejury.service.comment_command import comment_command
from codejury.stats_command import stats_command

EXIT_CODES = (
    "Exit codes: 0 review done; 1 --fail-on triggered; 2 bad input or configuration, or the review "
    "could not be written (it is printed instead); 3 no reviewer succeeded; 4 forge unavailable; "
    "5 internal error (CODEJURY_DEBUG=1 shows the traceback)."
)


_err = err_line


def _progress(msg: str) -> None:
    """A stage of the review starting or ending: stderr, so stdout stays the review alone."""
    click.echo(f"codejury: {visible_text(msg)}", err=True)


class _Commands(OneLineUsage):
    """The command group: an unexpected exception in any command ends as one line and exit 5; a usage error as
    one line and exit 2 (``OneLineUsage``)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, BrokenPipeError):
            raise  # click's own handling: usage errors exit 2, --help and --version exit 0
        except Exception as exc:
            _internal_error(exc)


def _internal_error(exc: BaseException) -> NoReturn:
    """Report a bug in one line (exit 5, never 1: a CI reads 1 as "review blocked")."""
    if os.environ.get("CODEJURY_DEBUG", "").strip() not in ("", "0"):
        traceback.print_exception(exc, file=sys.stderr)
    detail = " ".join(str(exc).split())
    detail = detail if len(detail) <= 300 else detail[:299] + "…"
    _err(
        f"internal error: {type(exc).__name__}{': ' + detail if detail else ''} "
        "(please report it; rerun with CODEJURY_DEBUG=1 for the traceback)"
    )
    sys.exit(5)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="codejury")
def cli() -> None:
    """codejury: a panel of AI reviewers, a judge, and one review with a verdict."""


@cli.command("review", epilog=EXIT_CODES)
@review_options()
def review_command(**flags: Any) -> None:
    """Review a change: the current branch against its merge-base, a range, a diff file, or a merge request."""
    import asyncio

    env = dict(os.environ)
    code = exit_on_errors(lambda: asyncio.run(_review_change(env, review_flags(flags))))
    sys.exit(code)


async def _review_change(env: dict[str, str], f: ReviewFlags) -> int:
    """Check the flags, then have the composition root review; 1 when the review reaches ``--fail-on``."""
    if f.diff_file and (f.working_tree or f.base_ref or f.head_ref):
        raise InputError("--diff cannot be combined with --working-tree, --base or --head")
    _check_flags(f)  # before the heavy imports: a bad flag is answered at once
    if f.url is not None or f.publish:
        _check_forge_flags(f)
    from codejury import session

    # The process's session: the plugins loaded once, the provider clients its review opened closed however it ends.
    async with session.Session(session.load_plugins(f.plugins), warn=_err, progress=_progress) as reviews:
        outcome = await reviews.review(env, f)
    return 1 if outcome.blocks else 0


def _check_flags(f: ReviewFlags) -> None:
    """Refuse flags that cannot work before anything runs: no model is paid for a review it cannot deliver."""
    for name in f.plugins:
        if not name.strip() or not all(part.isidentifier() for part in name.strip().split(".")):
            raise InputError(f"--plugin expects a Python module name such as my_team.codejury_rules, got {name!r}")
    if f.url is not None and not f.url.strip():
        raise InputError("--url expects the URL of a merge request or pull request, got an empty value")
    if f.repo_dir is not None:
        try:
            is_dir = f.repo_dir.is_dir()
        except OSError as exc:  # a name too long, a loop of symlinks
            raise InputError(f"--repo {shown_path(f.repo_dir)}: {exc.strerror or exc}") from exc
        if not is_dir:
            raise InputError(f"--repo {shown_path(f.repo_dir)}: no such directory")
    if f.output is not None:
        check_writable("--output", f.output)
    if f.events_file is not None:
        check_writable("--events", f.events_file)
    if f.metrics_push is not None or f.metrics_textfile is not None:
        from codejury.telemetry.options import check_metrics_flags

        check_metrics_flags(f.metrics_push, f.metrics_textfile)


def _check_forge_flags(f: ReviewFlags) -> None:
    """``--url`` / ``--publish`` review a merge request: the flags that choose a local change do not apply."""
    if f.diff_file or f.source or f.working_tree or f.base_ref or f.head_ref:
        raise InputError(
            "--url and --publish review a merge request: drop --diff, --source, --working-tree, --base and --head"
        )
    if f.publish and f.dry_run:
        raise InputError("--dry-run posts nothing: drop --publish")


cli.add_command(comment_command)
cli.add_command(describe_command)
cli.add_command(eval_command)
cli.add_command(stats_command)
cli.add_command(learn_command)
cli.add_command(search_command)
cli.add_command(dashboard_command)
cli.add_command(serve_command)
cli.add_command(worker_command)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
