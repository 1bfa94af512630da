"""What one review is asked to do (``ReviewFlags``) and the one declaration of the command-line options that
build it (``review_options``), shared by ``codejury review``, ``serve``, ``worker`` and ``eval``.

A module of its own, importing click and the standard library only: ``codejury review`` checks its flags
before it imports the composition root and the model layer (a second of start-up), so a bad flag is
answered at once, and ``--help`` never imports the settings model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click

FAIL_ON_CHOICES = ("suggestion", "warning", "critical", "unreviewed", "requested_changes", "never")
"""The ``fail_on`` levels, least to most lenient (the settings model checks ``fail_on`` against them)."""


def is_http_url(text: str) -> bool:
    """Whether ``text`` (spaces around it aside) is an http:// or https:// URL with a host and a usable port: the
    check of a URL flag (``--metrics-push``) and of a URL setting (``issue_tracker_url``…) alike."""
    try:
        parts = urlsplit(text.strip())
        return parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # an unclosed IPv6 bracket, a port out of range
        return False


@dataclass(frozen=True)
class ServiceReviewFlags:
    """The review flags that ``codejury serve``, ``codejury worker`` and a comment job give every review they run
    (their options, ``SERVICE_OPTIONS``), declared once for them and ``ReviewFlags``; ``service_flags`` copies
    them."""

    model: str | None = None
    model_for: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    config_file: Path | None = None
    remote_config: str | None = None
    max_inline: int = 20


@dataclass(frozen=True)
class ReviewFlags(ServiceReviewFlags):
    """What one review is asked to do: the flags of ``codejury review``, however the caller got them (the six a
    service gives every review are declared on ``ServiceReviewFlags``)."""

    working_tree: bool = False
    base_ref: str | None = None
    head_ref: str | None = None
    diff_file: str | None = None
    repo_dir: Path | None = None
    fmt: str | None = None
    output: Path | None = None
    events_file: Path | None = None
    fail_on: str | None = None
    break_glass: bool = False
    dry_run: bool = False
    reflection: bool | None = None
    exclude: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    """JUnit XML reports the CI job produced (``--tests``): failing tests named, backing findings, in context."""
    baseline: str | None = None
    source: str | None = None
    url: str | None = None
    publish: bool = False
    skip_reviewed_head: bool = False
    """With ``publish``: when the bot's summary already records a review of this head commit, stop
    before any model is called (``HeadAlreadyReviewed``); a push the service queued while the same
    head was being reviewed."""
    forced: bool = False
    """A person with write access asked for this review (``/codejury review``): the skip rules do not apply."""
    max_cost: float | None = None
    metrics_push: str | None = None
    metrics_textfile: Path | None = None


class FormatName(click.ParamType[str]):
    """A ``--format`` name, checked against the renderer registry once the plugins are loaded
    (``session.check_format``): ``--help`` imports no renderer, and a plugin's format is accepted."""

    name = "format"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "FORMAT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip().lower()
        if not text or text.endswith("-plan"):
            self.fail(f"{value!r} is not a format name", param, ctx)
        return text


F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class _Option:
    """One option's declaration: click's ``param_decls`` and keyword arguments, and the setting it sets."""

    decls: tuple[str, ...]
    attrs: Mapping[str, Any]
    setting: str | None = None
    """The settings key this flag sets over every other layer (the flag names it in errors); None: none."""


def _option(*decls: str, setting: str | None = None, **attrs: Any) -> _Option:
    return _Option(decls, attrs, setting)


OPTIONS: dict[str, _Option] = {
    "working_tree": _option("--working-tree", is_flag=True, help="Include uncommitted and untracked changes."),
    "base_ref": _option(
        "--base", "base_ref", metavar="REF", help="Base of the range (default: merge-base with the default branch)."
    ),
    "head_ref": _option("--head", "head_ref", metavar="REF", help="Head of the range (default: HEAD)."),
    "diff_file": _option(
        "--diff", "diff_file", metavar="FILE", help="Review a unified diff file ('-' for stdin) instead of git."
    ),
    "source": _option(
        "--source",
        metavar="NAME",
        help="Change source: git or diff (default: diff with --diff, else git), or one a plugin registers.",
    ),
    "repo_dir": _option(
        "--repo",
        "repo_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Repository directory (default: current directory; with --diff, where tools may read).",
    ),
    "fmt": _option(
        "--format",
        "fmt",
        type=FormatName(),
        default=None,
        help="Output format: markdown, json, terminal, sarif, rdjson, codeclimate, or one a plugin registers "
        "(default: terminal on a TTY, markdown otherwise). CI artifacts of a review: "
        "sarif (GitHub code scanning), rdjson (reviewdog), codeclimate (GitLab Code Quality).",
    ),
    "output": _option("--output", "-o", type=click.Path(path_type=Path), help="Write the review to FILE."),
    "events_file": _option(
        "--events", "events_file", type=click.Path(path_type=Path), help="Write the JSONL event log to FILE."
    ),
    "fail_on": _option(
        "--fail-on",
        setting="fail_on",
        type=click.Choice(FAIL_ON_CHOICES),
        default=None,
        help="Exit 1 when the review reaches this level (default: requested_changes). 'unreviewed' and the "
        "stricter levels also exit 1 when nothing was reviewed (verdict not_reviewed).",
    ),
    "break_glass": _option("--break-glass", is_flag=True, help="Force approval whatever the review says (recorded)."),
    "dry_run": _option("--dry-run", is_flag=True, help="Call no model: print the plan, tokens and estimated cost."),
    "model": _option(
        "--model", metavar="PROVIDER:MODEL", help="Use this model for every reviewer and the coordinator."
    ),
    "model_for": _option(
        "--model-for",
        multiple=True,
        metavar="NAME=PROVIDER:MODEL",
        help="Model for one reviewer (or 'coordinator'); repeatable.",
    ),
    "reflection": _option(
        "--reflection/--no-reflection",
        setting="reflection",
        default=None,
        help="Run the reflection pass before the judge.",
    ),
    "exclude": _option(
        "--exclude", setting="exclude", multiple=True, metavar="GLOB", help="Skip files matching GLOB; repeatable."
    ),
    "baseline": _option(
        "--baseline",
        type=click.Choice(["naive"]),
        default=None,
        help="For measuring (codejury eval): one naive prompt on the same model instead of the panel.",
    ),
    "evidence": _option(
        "--evidence",
        setting="evidence",
        multiple=True,
        metavar="FILE",
        help="SARIF from a tool you already run (CodeQL, Semgrep, ESLint…), read as analyzer evidence; repeatable.",
    ),
    "tests": _option(
        "--tests",
        multiple=True,
        metavar="FILE",
        help="JUnit XML your CI job's tests wrote: failing tests are named in the review, back findings on the "
        "changed functions they cover (evidence junit:<test id>) and are shown to the reviewers; repeatable.",
    ),
    "config_file": _option(
        "--config",
        "config_file",
        type=click.Path(dir_okay=False, exists=True, path_type=Path),
        help="Extra config file (TOML: the keys of [tool.codejury], bare or inside a [tool.codejury] table).",
    ),
    "remote_config": _option(
        "--remote-config",
        setting="remote_config",
        metavar="URL",
        help="Fetch a JSON routing document (reviewer models, disabled providers and models, failback, kill "
        "switch) at start-up, and again before each model request.",
    ),
    "max_cost": _option(
        "--max-cost",
        setting="max_cost_usd",
        type=float,
        default=None,
        metavar="USD",
        help="Cost ceiling of this review in USD: when reached, running reviewers stop and the review is "
        "published as partial, never as an approval (config: max_cost_usd).",
    ),
    "plugins": _option(
        "--plugin", "plugins", multiple=True, metavar="MODULE", help="Load a plugin module; repeatable."
    ),
    "url": _option(
        "--url",
        metavar="URL",
        help="Review a GitLab merge request or GitHub pull request through the API (token in "
        "CODEJURY_GITLAB_TOKEN, or CODEJURY_GITHUB_TOKEN / GITHUB_TOKEN) and print it; the URL must be on the "
        "configured forge (CODEJURY_GITLAB_URL / CODEJURY_GITHUB_URL), the only host the token goes to.",
    ),
    "publish": _option(
        "--publish",
        is_flag=True,
        help="Post the review on the merge request (--url, or the GitLab merge request pipeline or GitHub "
        "pull request workflow this job runs in).",
    ),
    "max_inline": _option(
        "--max-inline",
        type=click.IntRange(min=0),
        default=20,
        show_default=True,
        help="When the review is published: at most N new inline comments per run, most severe first; the rest "
        "go in the summary.",
    ),
    "metrics_push": _option(
        "--metrics-push",
        metavar="URL",
        help="Push the review's Prometheus metrics to this Pushgateway (job codejury, grouped by repository); "
        "a failed push is a warning.",
    ),
    "metrics_textfile": _option(
        "--metrics-textfile",
        type=click.Path(dir_okay=False, path_type=Path),
        metavar="PATH",
        help="Write the review's Prometheus metrics to PATH (node-exporter textfile format, *.prom), atomically.",
    ),
}
"""Every option of ``codejury review``, by the ``ReviewFlags`` field it fills, in ``--help`` order."""

SETTING_FLAGS: Mapping[str, tuple[str, str]] = {
    name: (spec.setting, spec.decls[0].partition("/")[0]) for name, spec in OPTIONS.items() if spec.setting
}
"""``ReviewFlags`` field → the setting it sets over every other layer, and the flag that names it in errors (from
each option's ``setting``). ``--model``, ``--model-for`` (every tier, one reviewer) and ``--config`` (a whole
layer) are layered apart."""


SERVICE_OPTIONS = tuple(f.name for f in fields(ServiceReviewFlags))
"""The review options ``codejury serve`` and ``codejury worker`` take for every review they run."""


def service_flags(given: ServiceReviewFlags) -> dict[str, Any]:
    """The ``ServiceReviewFlags`` fields of ``given``, by name (to build another ``ServiceReviewFlags``)."""
    return {name: getattr(given, name) for name in SERVICE_OPTIONS}


EVAL_OPTIONS = ("config_file", "model", "model_for", "plugins")
"""The review options ``codejury eval`` takes for every case it reviews."""


def review_options(*names: str, **changed: Mapping[str, Any]) -> Callable[[F], F]:
    """Add the options of ``names`` (``OPTIONS`` keys; none: all of them) to a click command, in that order;
    ``changed`` replaces some keyword arguments of an option (``config_file={"type": ...}``)."""
    chosen = names or tuple(OPTIONS)
    unknown = [name for name in (*chosen, *changed) if name not in OPTIONS]
    if unknown:
        raise ValueError(f"no review option fills {', '.join(unknown)}")

    def add(func: F) -> F:
        for name in reversed(chosen):
            spec = OPTIONS[name]
            func = click.option(*spec.decls, **{**spec.attrs, **changed.get(name, {})})(func)
        return func

    return add


def review_flags(params: Mapping[str, Any], **more: Any) -> ReviewFlags:
    """The ``ReviewFlags`` of a command's parameters: the ``ReviewFlags`` fields among them, then ``more``."""
    names = {f.name for f in fields(ReviewFlags)}
    given = {name: value for name, value in params.items() if name in names}
    for name in ("model_for", "exclude", "evidence", "tests", "plugins"):
        if name in given:
            given[name] = tuple(given[name] or ())
    return ReviewFlags(**{**given, **more})
