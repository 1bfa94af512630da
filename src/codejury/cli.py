"""Commands only: parse flags, call the pipeline, render, exit code.

Exit codes: 0 review done (and --fail-on not triggered); 1 --fail-on triggered;
2 bad input or configuration, a missing or refused forge token (one-line cause on stderr);
3 no reviewer succeeded; 4 the forge stayed unavailable after retries (what was already
posted is named; a re-run completes it without duplicates).
"""

from __future__ import annotations

import asyncio
import io
import os
import sys
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from codejury import __version__
from codejury.change.types import ChangeSet
from codejury.config import FAIL_ON_CHOICES, Settings
from codejury.errors import CodejuryError, ConfigError, InputError, ReviewFailed
from codejury.findings import Plan, Review
from codejury.judge.verdict import should_fail
from codejury.pipeline import ReviewOptions, review
from codejury.plugins import collect_registry, make_plugin_manager
from codejury.record.events import EventLog
from codejury.settings_loader import load_settings, parse_assignments

if TYPE_CHECKING:
    from collections.abc import Callable

    from codejury.forges.publish import Forge

SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_KEY")


def secret_values(env: dict[str, str]) -> list[str]:
    """Values of environment variables that hold credentials, to scrub from every output."""
    return [v for k, v in env.items() if k.upper().endswith(SECRET_SUFFIXES) and len(v) >= 8]


@dataclass(frozen=True)
class ReviewFlags:
    """The flags of ``codejury review``, as click parsed them."""

    working_tree: bool
    base_ref: str | None
    head_ref: str | None
    diff_file: str | None
    repo_dir: Path | None
    fmt: str | None
    output: Path | None
    events_file: Path | None
    fail_on: str | None
    break_glass: bool
    dry_run: bool
    model: str | None
    model_for: tuple[str, ...]
    reflection: bool | None
    exclude: tuple[str, ...]
    config_file: Path | None
    remote_config: str | None
    plugins: tuple[str, ...]
    url: str | None = None
    publish: bool = False
    max_inline: int = 20


def _err(msg: str) -> None:
    click.echo(f"codejury: {msg}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="codejury")
def cli() -> None:
    """codejury: a panel of AI reviewers, a judge, and one review with a verdict."""


@cli.command("review")
@click.option("--working-tree", is_flag=True, help="Include uncommitted and untracked changes.")
@click.option(
    "--base", "base_ref", metavar="REF", help="Base of the range (default: merge-base with the default branch)."
)
@click.option("--head", "head_ref", metavar="REF", help="Head of the range (default: HEAD).")
@click.option("--diff", "diff_file", metavar="FILE", help="Review a unified diff file ('-' for stdin) instead of git.")
@click.option(
    "--repo",
    "repo_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Repository directory (default: current directory; with --diff, where tools may read).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json", "terminal", "sarif", "rdjson", "codeclimate"]),
    default=None,
    help="Output format (default: terminal on a TTY, markdown otherwise). CI artifacts of a review: "
    "sarif (GitHub code scanning), rdjson (reviewdog), codeclimate (GitLab Code Quality).",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write the review to FILE.")
@click.option(
    "--events",
    "events_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the JSONL event log to FILE.",
)
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON_CHOICES),
    default=None,
    help="Exit 1 when the review has a finding at or above this level (default: requested_changes).",
)
@click.option("--break-glass", is_flag=True, help="Force approval whatever the review says (recorded).")
@click.option("--dry-run", is_flag=True, help="Call no model: print the plan, tokens and estimated cost.")
@click.option("--model", metavar="PROVIDER:MODEL", help="Use this model for every reviewer and the coordinator.")
@click.option(
    "--model-for",
    multiple=True,
    metavar="NAME=PROVIDER:MODEL",
    help="Model for one reviewer (or 'coordinator'); repeatable.",
)
@click.option("--reflection/--no-reflection", default=None, help="Run the reflection pass before the judge.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip files matching GLOB; repeatable.")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Extra config file (TOML, same keys as [tool.codejury]).",
)
@click.option(
    "--remote-config",
    metavar="URL",
    help="Fetch a JSON routing document (reviewer models, disabled providers, failback) at start-up.",
)
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE", help="Load a plugin module; repeatable.")
@click.option(
    "--url",
    metavar="URL",
    help="Review a GitLab merge request or GitHub pull request through the API (token in "
    "CODEJURY_GITLAB_TOKEN, or CODEJURY_GITHUB_TOKEN / GITHUB_TOKEN) and print it.",
)
@click.option(
    "--publish",
    is_flag=True,
    help="Post the review on the merge request (--url, or the GitLab merge request pipeline or GitHub "
    "pull request workflow this job runs in).",
)
@click.option(
    "--max-inline",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="With --publish: at most N new inline comments per run, most severe first; the rest go in the summary.",
)
def review_command(**flags: Any) -> None:
    """Review a change: the current branch against its merge-base, a range, a diff file, or a merge request."""
    from codejury.forges.errors import ForgeUnavailable

    env = dict(os.environ)
    try:
        code = asyncio.run(_review(env, ReviewFlags(**flags)))
    except ReviewFailed as exc:
        _err(f"review failed: {exc}")
        sys.exit(3)
    except ForgeUnavailable as exc:
        _err(str(exc))
        sys.exit(4)
    except CodejuryError as exc:
        _err(str(exc))
        sys.exit(2)
    except KeyboardInterrupt:
        _err("interrupted")
        sys.exit(130)
    sys.exit(code)


async def _review_change(env: dict[str, str], f: ReviewFlags) -> int:
    if f.diff_file and (f.working_tree or f.base_ref or f.head_ref):
        raise InputError("--diff cannot be combined with --working-tree, --base or --head")
    if f.url or f.publish:
        return await _review_merge_request(env, f)
    pm = make_plugin_manager(f.plugins)
    sources = collect_registry(pm, "codejury_register_sources")
    renderers = collect_registry(pm, "codejury_register_renderers")
    if f.dry_run and f.fmt and f"{f.fmt}-plan" not in renderers:
        raise InputError(
            f"--format {f.fmt} renders a review, not a plan: use markdown, json or terminal with --dry-run"
        )
    with ExitStack() as stack:
        if f.diff_file:
            source = sources["diff"](path=f.diff_file, root=f.repo_dir)
        else:
            source = sources["git"](
                repo=f.repo_dir or Path.cwd(), base=f.base_ref, head=f.head_ref, working_tree=f.working_tree
            )
        if hasattr(source, "__enter__"):
            source = stack.enter_context(source)
        change = source.load()
        if not change.files:
            raise InputError("the change is empty: there is nothing to review")
        settings, opts = _options(change, env, f, stack)
        result = await review(change, opts)
    _emit(result, _format(f), f.output, renderers)
    if isinstance(result, Review) and should_fail(result, settings.fail_on):  # type: ignore[arg-type]
        return 1
    return 0


def _options(
    change: ChangeSet, env: dict[str, str], f: ReviewFlags, stack: ExitStack
) -> tuple[Settings, ReviewOptions]:
    """Layered settings for ``change`` and the options of its review (the event log joins ``stack``)."""
    table: dict[str, Any] = {}
    if f.fail_on:
        table["fail_on"] = f.fail_on
    if f.reflection is not None:
        table["reflection"] = f.reflection
    if f.exclude:
        table["exclude"] = list(f.exclude)
    if f.remote_config:
        table["remote_config"] = f.remote_config
    config_text = (str(f.config_file), _read_config(f.config_file)) if f.config_file else None
    settings, notice = load_settings(
        change,
        env,
        cli_table=table,
        cli_model=f.model,
        cli_reviewer_models=parse_assignments(f.model_for, "--model-for"),
        config_file_text=config_text,
    )
    if notice:
        _err(notice)
    events = stack.enter_context(EventLog(f.events_file, run_id=uuid.uuid4().hex[:12], secrets=secret_values(env)))
    opts = ReviewOptions(
        settings=settings,
        env=env,
        events=events,
        warn=_err,
        break_glass=f.break_glass,
        dry_run=f.dry_run,
        plugins=f.plugins,
        notices=(notice,) if notice else (),
    )
    return settings, opts


async def _review_merge_request(env: dict[str, str], f: ReviewFlags) -> int:
    """``--url`` / ``--publish``: review a GitLab merge request or a GitHub pull request through its API."""
    if f.diff_file or f.working_tree or f.base_ref or f.head_ref:
        raise InputError("--url and --publish review a merge request: drop --diff, --working-tree, --base and --head")
    if f.publish and f.dry_run:
        raise InputError("--dry-run posts nothing: drop --publish")
    return await _review_on_forge(env, f, _forge(f.url, env))


def _forge(url: str | None, env: dict[str, str]) -> Callable[[], Forge]:
    """How to open the adapter for the pull request (GitHub) or merge request (GitLab) of ``--url`` or
    of this CI run: the target is found now, the adapter (and its HTTP client) made when the review starts."""
    from functools import partial

    from codejury.forges import github, gitlab

    if url:
        pull_request = github.target_from_url(url, env) if github.is_pull_request_url(url) else None
    else:
        pull_request = github.target_from_env(env)
    if pull_request is not None:
        return partial(github.GitHubPullRequest, pull_request, env=env, warn=_err)
    target = gitlab.target_from_url(url, env) if url else gitlab.target_from_env(env)
    if target is None:
        raise InputError(
            "--publish needs --url URL, a GitLab merge request pipeline (merge_request_event) "
            "or a GitHub pull request workflow (pull_request)"
        )
    return partial(gitlab.GitLabMergeRequest, target, env=env, warn=_err)


async def _review_on_forge(env: dict[str, str], f: ReviewFlags, open_forge: Callable[[], Forge]) -> int:
    """Review the forge's change, print it and, with ``--publish``, post it (or the failure note)."""
    from codejury.forges.errors import ForgeError
    from codejury.forges.publish import PreviousState, disputes

    renderers = collect_registry(make_plugin_manager(f.plugins), "codejury_register_renderers")
    async with open_forge() as forge:
        try:
            with ExitStack() as stack:
                change = await forge.load_change()
                if not change.files:
                    raise InputError(f"the {forge.noun} has no changes: there is nothing to review")
                settings, opts = _options(change, env, f, stack)
                previous = await forge.load_previous() if f.publish else PreviousState()
                opts.disputes = disputes(previous)
                try:
                    result = await review(change, opts)
                except ReviewFailed as exc:
                    if f.publish:
                        await forge.publish_failure(previous, f"no reviewer succeeded ({exc})", forge.head_sha)
                        if not forge.read_only:
                            _err(f"posted the failure note on {forge.web_url}")
                    raise
                _emit(result, _format(f), f.output, renderers)
                if f.publish and isinstance(result, Review):
                    plan = await forge.publish_review(
                        result,
                        change.files,
                        previous,
                        fail_on=settings.fail_on,
                        approve=settings.approve,
                        max_inline=f.max_inline,
                    )
                    opts.events.emit(
                        "published",
                        forge=forge.forge_name,
                        posted=len(forge.posted),
                        approval=plan.approval,
                        break_glass_by=list(forge.break_glass_by),
                    )
                    if not forge.read_only:
                        done = ", ".join(forge.posted) if forge.posted else "nothing new to post"
                        _err(f"published on {forge.web_url}: {done}")
        except ForgeError as exc:
            done = f"; already posted: {', '.join(forge.posted)}" if forge.posted else "; nothing was posted"
            message = f"{exc}{done} (a re-run completes it without duplicates)" if forge.posted else f"{exc}{done}"
            raise type(exc)(message, status=exc.status) from exc
    if isinstance(result, Review) and should_fail(result, settings.fail_on):  # type: ignore[arg-type]
        return 1
    return 0


async def _review(env: dict[str, str], flags: ReviewFlags) -> int:
    """Run one review and close the provider clients it opened, however it ends."""
    from codejury.models.registry import close_cached_models

    try:
        return await _review_change(env, flags)
    finally:
        await close_cached_models()


def _read_config(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc


def _format(f: ReviewFlags) -> str:
    """``--format``, or terminal on a TTY (unless writing a file) and markdown otherwise."""
    return f.fmt or ("terminal" if sys.stdout.isatty() and f.output is None else "markdown")


def _emit(result: Review | Plan, fmt: str, output: Path | None, renderers: dict[str, Any]) -> None:
    key = fmt if isinstance(result, Review) else f"{fmt}-plan"
    render = renderers[key]
    if fmt == "terminal":
        if output is None:
            render(result, Console())
            return
        buf = io.StringIO()
        render(result, Console(file=buf, width=100, force_terminal=False, color_system=None))
        text = buf.getvalue()
    else:
        text = render(result)
    if output is None:
        click.echo(text)
    else:
        output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
