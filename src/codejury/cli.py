"""Commands only: parse flags, call the pipeline, render, exit code.

Exit codes (``EXIT_CODES``, also shown by ``codejury review --help`` and in the README):

- 0 the review is done and ``--fail-on`` was not triggered (or a ``--dry-run`` plan was printed);
- 1 ``--fail-on`` triggered: the review blocks the merge;
- 2 bad input or configuration, a missing or refused forge token, or a finished review that
  could not be written to ``-o``/``--events`` (it is printed on stdout instead); one-line cause;
- 3 no reviewer succeeded; 4 the forge stayed unavailable after retries (what was already
  posted is named; a re-run completes it without duplicates);
- 5 internal error: an unexpected exception, reported in one line (``CODEJURY_DEBUG=1`` prints
  the traceback); 130 interrupted.

Only click and the standard library are imported at start-up: the pipeline, the provider SDKs,
pydantic and the forges are imported inside the commands, so ``codejury --help`` is instant.
"""

from __future__ import annotations

import os
import sys
import traceback
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from codejury import __version__
from codejury.cli_io import check_writable, piped_stdin_has_data, shown_path
from codejury.dashboard.command import dashboard_command
from codejury.errors import CodejuryError, ConfigError, InputError, InternalError, OutputError, ReviewFailed
from codejury.eval.command import eval_command
from codejury.service.commands import serve_command, worker_command
from codejury.stats_command import stats_command

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from codejury.change.types import ChangeSet
    from codejury.config import Settings
    from codejury.forges.publish import Forge
    from codejury.pipeline import ReviewOptions

FAIL_ON_CHOICES = ("suggestion", "warning", "critical", "unreviewed", "requested_changes", "never")
"""``config.FAIL_ON_CHOICES``, repeated so that ``--help`` need not import the config model (a test checks)."""

EXIT_CODES = (
    "Exit codes: 0 review done; 1 --fail-on triggered; 2 bad input or configuration, or the review "
    "could not be written (it is printed instead); 3 no reviewer succeeded; 4 forge unavailable; "
    "5 internal error (CODEJURY_DEBUG=1 shows the traceback)."
)


class FormatName(click.ParamType[str]):
    """A ``--format`` name, checked against the renderer registry once the plugins are loaded
    (``check_format``): ``--help`` imports no renderer, and a plugin's format is accepted."""

    name = "format"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "FORMAT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip().lower()
        if not text or text.endswith("-plan"):
            self.fail(f"{value!r} is not a format name", param, ctx)
        return text


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
    evidence: tuple[str, ...]
    baseline: str | None
    config_file: Path | None
    remote_config: str | None
    plugins: tuple[str, ...]
    source: str | None = None
    url: str | None = None
    publish: bool = False
    max_inline: int = 20
    max_cost: float | None = None
    metrics_push: str | None = None
    metrics_textfile: Path | None = None
    recorders: tuple[Any, ...] = ()
    """More recorders for the review (the review service counts its workers' reviews with one)."""


def _err(msg: str) -> None:
    from codejury.secrets import redact_env

    click.echo(f"codejury: {redact_env(msg)}", err=True)  # a message may quote a provider's or forge's reply


def _progress(msg: str) -> None:
    """A stage of the review starting or ending: stderr, so stdout stays the review alone."""
    click.echo(f"codejury: {msg}", err=True)


class _Commands(click.Group):
    """The command group: an unexpected exception in any command ends as one line and exit 5."""

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
@click.option("--working-tree", is_flag=True, help="Include uncommitted and untracked changes.")
@click.option(
    "--base", "base_ref", metavar="REF", help="Base of the range (default: merge-base with the default branch)."
)
@click.option("--head", "head_ref", metavar="REF", help="Head of the range (default: HEAD).")
@click.option("--diff", "diff_file", metavar="FILE", help="Review a unified diff file ('-' for stdin) instead of git.")
@click.option(
    "--source",
    metavar="NAME",
    help="Change source: git or diff (default: diff with --diff, else git), or one a plugin registers.",
)
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
    type=FormatName(),
    default=None,
    help="Output format: markdown, json, terminal, sarif, rdjson, codeclimate, or one a plugin registers "
    "(default: terminal on a TTY, markdown otherwise). CI artifacts of a review: "
    "sarif (GitHub code scanning), rdjson (reviewdog), codeclimate (GitLab Code Quality).",
)
@click.option("--output", "-o", type=click.Path(path_type=Path), help="Write the review to FILE.")
@click.option(
    "--events",
    "events_file",
    type=click.Path(path_type=Path),
    help="Write the JSONL event log to FILE.",
)
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON_CHOICES),
    default=None,
    help="Exit 1 when the review reaches this level (default: requested_changes). 'unreviewed' and the "
    "stricter levels also exit 1 when nothing was reviewed (verdict not_reviewed).",
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
    "--baseline",
    type=click.Choice(["naive"]),
    default=None,
    help="For measuring (codejury eval): one naive prompt on the same model instead of the panel.",
)
@click.option(
    "--evidence",
    multiple=True,
    metavar="FILE",
    help="SARIF from a tool you already run (CodeQL, Semgrep, ESLint…), read as analyzer evidence; repeatable.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Extra config file (TOML: the keys of [tool.codejury], bare or inside a [tool.codejury] table).",
)
@click.option(
    "--remote-config",
    metavar="URL",
    help="Fetch a JSON routing document (reviewer models, disabled providers, failback) at start-up.",
)
@click.option(
    "--max-cost",
    type=float,
    default=None,
    metavar="USD",
    help="Cost ceiling of this review in USD: when reached, running reviewers stop and the review is "
    "published as partial, never as an approval (config: max_cost_usd).",
)
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE", help="Load a plugin module; repeatable.")
@click.option(
    "--url",
    metavar="URL",
    help="Review a GitLab merge request or GitHub pull request through the API (token in "
    "CODEJURY_GITLAB_TOKEN, or CODEJURY_GITHUB_TOKEN / GITHUB_TOKEN) and print it; the URL must be on the "
    "configured forge (CODEJURY_GITLAB_URL / CODEJURY_GITHUB_URL), the only host the token goes to.",
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
@click.option(
    "--metrics-push",
    metavar="URL",
    help="Push the review's Prometheus metrics to this Pushgateway (job codejury, grouped by repository); "
    "a failed push is a warning.",
)
@click.option(
    "--metrics-textfile",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="PATH",
    help="Write the review's Prometheus metrics to PATH (node-exporter textfile format, *.prom), atomically.",
)
def review_command(**flags: Any) -> None:
    """Review a change: the current branch against its merge-base, a range, a diff file, or a merge request."""
    import asyncio

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
    except InternalError:
        raise  # a bug: one line and exit 5 (``_Commands``)
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
    _check_flags(f)  # before the heavy imports: a bad flag is answered at once
    if f.url is not None or f.publish:
        return await _review_merge_request(env, f)
    from codejury.change.select import open_source
    from codejury.findings import Review
    from codejury.judge.verdict import should_fail
    from codejury.pipeline import review
    from codejury.plugins import collect_registry, make_plugin_manager
    from codejury.publish import OutputPublisher, default_format

    pm = make_plugin_manager(f.plugins)  # once per review: sources, renderers and the pipeline's plugins
    sources = collect_registry(pm, "codejury_register_sources")
    renderers = collect_registry(pm, "codejury_register_renderers")
    check_format(f, renderers)
    with ExitStack() as stack:
        source: Any = open_source(sources, f)
        if hasattr(source, "__enter__"):
            source = stack.enter_context(source)
        change = _with_stdin_hint(f, source.load)
        settings, opts = _options(change, env, f, stack)
        output = OutputPublisher(renderers, default_format(f.fmt, f.output), f.output)
        opts.plugin_manager, opts.publishers, opts.recorders = pm, [output], _recorders(pm, settings, env)
        opts.recorders = _closed_with(stack, [*opts.recorders, *_metrics_recorders(f)])
        result = await review(change, opts)
    if output.unwritten is not None:
        raise output.unwritten
    _check_event_log(opts, f)
    if isinstance(result, Review) and should_fail(result, settings.fail_on):  # type: ignore[arg-type]
        return 1
    return 0


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


def _with_stdin_hint(f: ReviewFlags, load: Callable[[], ChangeSet]) -> ChangeSet:
    """``load()``'s change; when git finds nothing to review but a diff waits on stdin, say how to read it."""
    hint = "; to review a diff from stdin, use --diff -"
    try:
        change = load()
    except InputError as exc:
        if f.diff_file is None and piped_stdin_has_data():
            raise InputError(f"{exc}{hint}") from exc
        raise
    if not change.files:
        empty = "the change is empty: there is nothing to review"
        raise InputError(empty + hint if f.diff_file is None and piped_stdin_has_data() else empty)
    return change


def _options(
    change: ChangeSet, env: dict[str, str], f: ReviewFlags, stack: ExitStack
) -> tuple[Settings, ReviewOptions]:
    """Layered settings for ``change`` and the options of its review (the event log joins ``stack``)."""
    from codejury.pipeline import ReviewOptions
    from codejury.record.events import EventLog
    from codejury.secrets import secret_values
    from codejury.settings_loader import load_settings, parse_assignments

    table: dict[str, Any] = {}
    if f.fail_on:
        table["fail_on"] = f.fail_on
    if f.reflection is not None:
        table["reflection"] = f.reflection
    if f.exclude:
        table["exclude"] = list(f.exclude)
    if f.evidence:
        table["evidence"] = [str(Path(p).resolve()) for p in f.evidence]
    if f.remote_config:
        table["remote_config"] = f.remote_config
    if f.max_cost is not None:
        table["max_cost_usd"] = f.max_cost
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
    try:
        log = EventLog(f.events_file, run_id=uuid.uuid4().hex[:12], secrets=secret_values(env))
    except OSError as exc:
        raise OutputError(f"cannot write --events {shown_path(f.events_file or '')}: {exc.strerror or exc}") from exc
    events = stack.enter_context(log)
    from codejury.telemetry.tracing import start_tracing

    tracing = start_tracing(env, include_content=settings.record_prompts, redact=events.redact)  # OTEL_* set
    if tracing is not None:
        stack.callback(tracing.close, _err)  # flushed within 2 s when the review is done
    opts = ReviewOptions(
        settings=settings,
        env=env,
        events=events,
        warn=_err,
        break_glass=f.break_glass,
        dry_run=f.dry_run,
        plugins=f.plugins,
        notices=(notice,) if notice else (),
        progress=_progress,
        baseline="naive" if f.baseline == "naive" else None,
    )
    return settings, opts


def _recorders(pm: Any, settings: Settings, env: Mapping[str, str]) -> list[Any]:
    """The registered recorders the settings turn on (a ``[plugins.NAME]`` table for recorder NAME), then
    the store recorder, on unless ``record.url`` is ``none``."""
    from codejury.plugins import collect_registry
    from codejury.record.store_recorder import store_recorder

    factories = collect_registry(pm, "codejury_register_recorders")
    found = [factory(settings.plugins[name]) for name, factory in factories.items() if name in settings.plugins]
    store = store_recorder(settings.record_url, env)
    return found if store is None else [*found, store]


def _metrics_recorders(f: ReviewFlags) -> list[Any]:
    """The metrics exporter that ``--metrics-push`` / ``--metrics-textfile`` ask for (a recorder), if any."""
    from codejury.telemetry.options import metrics_recorders

    return list(metrics_recorders(f.metrics_push, f.metrics_textfile, _err))


def _closed_with(stack: ExitStack, recorders: list[Any]) -> list[Any]:
    """``recorders``, closed when ``stack`` unwinds however the review ends: each writes what it still holds
    (bounded; nothing is waited for on a store that already did not answer) before the process exits."""
    from codejury.record.recorders import close_recorders

    stack.callback(close_recorders, recorders, _err)
    return recorders


def _check_event_log(opts: ReviewOptions, f: ReviewFlags) -> None:
    """After the review was printed or written: an event log that could not be written is exit 2."""
    failed = opts.events.write_error
    if failed is not None:
        raise OutputError(f"cannot write --events {shown_path(f.events_file or Path())}: {failed}")


async def _review_merge_request(env: dict[str, str], f: ReviewFlags) -> int:
    """``--url`` / ``--publish``: review a GitLab merge request or a GitHub pull request through its API."""
    if f.diff_file or f.source or f.working_tree or f.base_ref or f.head_ref:
        raise InputError(
            "--url and --publish review a merge request: drop --diff, --source, --working-tree, --base and --head"
        )
    if f.publish and f.dry_run:
        raise InputError("--dry-run posts nothing: drop --publish")
    from codejury.plugins import make_plugin_manager

    pm = make_plugin_manager(f.plugins)  # once per review: forges, renderers, recorders and the pipeline's plugins
    return await _review_on_forge(env, f, pm, _forge(f.url, env, pm))


def _forge(url: str | None, env: dict[str, str], pm: Any) -> Callable[[], Forge]:
    """How to open the adapter for the change of ``--url`` or of this CI run, from the registered forges:
    the target is found now, the adapter (and its HTTP client) made when the review starts."""
    from codejury.forges.registry import forge_opener
    from codejury.plugins import collect_registry

    kinds = collect_registry(pm, "codejury_register_forges")
    return forge_opener(kinds, url, env, _err)


async def _review_on_forge(env: dict[str, str], f: ReviewFlags, pm: Any, open_forge: Callable[[], Forge]) -> int:
    """Review the forge's change, print it and, with ``--publish``, post it (or the failure note)."""
    from codejury.findings import Review
    from codejury.forges.errors import ForgeError
    from codejury.forges.publish import PreviousState, disputes
    from codejury.forges.publisher import ForgePublisher
    from codejury.judge.verdict import should_fail
    from codejury.pipeline import review
    from codejury.plugins import collect_registry
    from codejury.publish import OutputPublisher, default_format

    renderers = collect_registry(pm, "codejury_register_renderers")
    check_format(f, renderers)
    async with open_forge() as forge:
        try:
            with ExitStack() as stack:
                change = await forge.load_change()
                if not change.files:
                    raise InputError(f"the {forge.noun} has no changes: there is nothing to review")
                settings, opts = _options(change, env, f, stack)
                previous = await forge.load_previous() if f.publish else PreviousState()
                output = OutputPublisher(renderers, default_format(f.fmt, f.output), f.output)
                publishers: list[Any] = [output]
                if f.publish:
                    publishers.append(
                        ForgePublisher(
                            forge,
                            previous,
                            change.files,
                            fail_on=settings.fail_on,
                            approve=settings.approve,
                            max_inline=f.max_inline,
                            events=opts.events,
                            say=_err,
                        )
                    )
                opts.disputes, opts.plugin_manager, opts.publishers = disputes(previous), pm, publishers
                ours = _closed_with(stack, [*_recorders(pm, settings, env), *_metrics_recorders(f)])
                opts.recorders = [*ours, *f.recorders]  # f.recorders are the caller's to close
                result = await review(change, opts)
        except ForgeError as exc:
            done = f"; already posted: {', '.join(forge.posted)}" if forge.posted else "; nothing was posted"
            message = f"{exc}{done} (a re-run completes it without duplicates)" if forge.posted else f"{exc}{done}"
            raise type(exc)(message, status=exc.status) from exc
    if output.unwritten is not None:  # published all the same: the review was printed on stdout
        raise output.unwritten
    _check_event_log(opts, f)
    if isinstance(result, Review) and should_fail(result, settings.fail_on):  # type: ignore[arg-type]
        return 1
    return 0


async def _review(env: dict[str, str], flags: ReviewFlags) -> int:
    """Run one review and close the provider clients it opened, however it ends."""
    try:
        return await _review_change(env, flags)
    finally:
        registry = sys.modules.get("codejury.models.registry")
        if registry is not None:  # not imported: no client was opened (a flag was refused first)
            await registry.close_cached_models()


def _read_config(path: Path) -> str:
    from codejury.bounded_io import MAX_CONFIG_BYTES, read_path  # capped while read: /dev/zero, a FIFO

    data = read_path(path, MAX_CONFIG_BYTES, f"config file {path}", ConfigError)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def check_format(f: ReviewFlags, renderers: Mapping[str, Any]) -> None:
    """``--format`` names a registered renderer (for a plan too, with ``--dry-run``), else InputError."""
    from codejury.publish import default_format

    fmt = default_format(f.fmt, f.output)
    if fmt not in renderers:
        formats = ", ".join(sorted(n for n in renderers if not n.endswith("-plan")))
        raise InputError(f"--format {fmt}: no such format; formats: {formats} (a plugin's format needs --plugin)")
    if f.dry_run and f"{fmt}-plan" not in renderers:
        plans = ", ".join(sorted(n.removesuffix("-plan") for n in renderers if n.endswith("-plan")))
        raise InputError(f"--format {fmt} renders a review, not a plan: use {plans} with --dry-run")


cli.add_command(eval_command)
cli.add_command(stats_command)
cli.add_command(dashboard_command)
cli.add_command(serve_command)
cli.add_command(worker_command)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
