"""The built-in plugin: providers and their kinds, the reviewer roster, sources, renderers,
forges and the JSONL recorder.

Registered through the ``codejury`` entry point group like any third-party plugin, through
the same hooks (``DEFAULT_PLUGINS`` in simonw/llm is the model).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codejury.contexts import ConfigureContext, PostConfigureContext
from codejury.hookspecs import hookimpl

if TYPE_CHECKING:
    from codejury.change.select import SourceOptions
    from codejury.change.types import ChangeSource
    from codejury.models.registry import ModelKind


@hookimpl
def codejury_configure(ctx: ConfigureContext) -> None:
    """Add the built-in providers and reviewers, and the repository's own (from the base side)."""
    from codejury.models.providers import BUILTIN_PROVIDERS
    from codejury.reviewers import roster

    for provider in BUILTIN_PROVIDERS.values():
        ctx.add_provider(provider)
    for spec in roster.load_builtin_reviewers().values():
        ctx.add_reviewer(spec)
    base = ctx.change.base
    if base is None:
        return
    for spec in roster.load_repo_reviewers(base).values():
        ctx.add_reviewer(spec)
    rules = roster.load_custom_rules(base)
    if rules:
        ctx.add_custom_rules(rules)


@hookimpl
async def codejury_post_configure(ctx: PostConfigureContext) -> None:
    """Apply the remote routing document (``remote_config``); gather the instructions every reviewer gets."""
    await _instructions(ctx)
    url = ctx.config.settings.remote_config
    if not url:
        return
    from codejury.remote_config import fetch_routing

    routing = await fetch_routing(url, warn=ctx.warn)
    if routing is not None:
        routing.apply(ctx)


async def _instructions(ctx: PostConfigureContext) -> None:
    """The repository's instruction files governing the change (base side), the organisation's
    template (``instructions_url``) and what plugins added, within the instructions budget."""
    from codejury.reviewers import instructions

    settings = ctx.config.settings
    change = ctx.change
    repo = instructions.RepoInstructions()
    if change is not None and change.base is not None:
        repo = instructions.read_repo_instructions(change.base, [f.path for f in change.files])
    for line in repo.skipped:
        ctx.warn(line)
    template = None
    if settings.instructions_url:
        template = await instructions.fetch_template(settings.instructions_url, warn=ctx.warn)
    extra = [ctx.config.repo_instructions] if ctx.config.repo_instructions else []
    ctx.set_instructions(
        instructions.render_instructions(
            repo, extra=extra, organisation=template, max_chars=settings.instructions_max_chars
        )
    )


@hookimpl
def codejury_register_sources(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """The local git source and the diff-file source."""
    register("git", _git_source)
    register("diff", _diff_source)


def _git_source(options: SourceOptions) -> ChangeSource:
    from codejury.change.sources import GitSource

    repo = options.repo or Path.cwd()
    return GitSource(repo, base=options.base, head=options.head, working_tree=options.working_tree)


def _diff_source(options: SourceOptions) -> ChangeSource:
    from codejury.change.sources import DiffFileSource
    from codejury.errors import InputError

    if options.diff_file is None:
        raise InputError("--source diff needs --diff FILE ('-' for stdin)")
    if options.working_tree or options.base or options.head:
        raise InputError("--diff cannot be combined with --working-tree, --base or --head")
    return DiffFileSource(options.diff_file, root=options.repo)


@hookimpl
def codejury_register_model_kinds(register: Callable[[str, ModelKind], None]) -> None:
    """openai, anthropic, openai-compatible (any server speaking OpenAI's API) and local (embedded)."""
    from codejury.models.registry import BUILTIN_MODEL_KINDS

    for name, kind in BUILTIN_MODEL_KINDS.items():
        register(name, kind)


@hookimpl
def codejury_register_recorders(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """The JSONL event log: the run's events and the finished review, appended to a file."""
    from codejury.record.recorders import jsonl_recorder

    register("jsonl", jsonl_recorder)


@hookimpl
def codejury_register_renderers(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Markdown, JSON and terminal renderers for reviews and plans; SARIF, rdjson and Code Quality for reviews."""
    from codejury.render import codeclimate, jsonout, markdown, rdjson, sarif, terminal

    register("markdown", markdown.render_review_markdown)
    register("markdown-plan", markdown.render_plan_markdown)
    register("json", jsonout.review_to_json)
    register("json-plan", jsonout.plan_to_json)
    register("terminal", terminal.render_review_terminal)
    register("terminal-plan", terminal.render_plan_terminal)
    register("sarif", sarif.render)
    register("rdjson", rdjson.render)
    register("codeclimate", codeclimate.render)


@hookimpl
def codejury_register_forges(register: Callable[[str, Any], None]) -> None:
    """GitHub pull requests and GitLab merge requests (a URL of either shape, or the CI run)."""
    from codejury.forges import github, gitlab

    register("github", github.FORGE)
    register("gitlab", gitlab.FORGE)


@hookimpl
def codejury_register_analyzers(register: Callable[[str, Any], None]) -> None:
    """ruff, detect-secrets, our ast-grep rule pack, hadolint, drift checks, team rules, hygiene (unused imports)."""
    from codejury.analyzers import builtin_analyzers

    for name, analyzer in builtin_analyzers().items():
        register(name, analyzer)
