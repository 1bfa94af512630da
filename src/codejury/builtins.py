"""The built-in plugin: providers, the reviewer roster, sources and renderers.

Registered through the ``codejury`` entry point group like any third-party plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from codejury.hookspecs import hookimpl
from codejury.plugins import ConfigureContext, PostConfigureContext


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
    instructions = roster.load_repo_instructions(base)
    if instructions:
        ctx.add_repo_instructions(instructions)
    rules = roster.load_custom_rules(base)
    if rules:
        ctx.add_custom_rules(rules)


@hookimpl
async def codejury_post_configure(ctx: PostConfigureContext) -> None:
    """Apply the remote routing document, when one is configured (``remote_config``)."""
    url = ctx.config.settings.remote_config
    if not url:
        return
    from codejury.remote_config import fetch_routing

    routing = await fetch_routing(url, warn=ctx.warn)
    if routing is not None:
        routing.apply(ctx)


@hookimpl
def codejury_register_sources(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """The local git source and the diff-file source."""
    from codejury.change.sources import DiffFileSource, GitSource

    def git(*, repo: Path, base: str | None, head: str | None, working_tree: bool) -> GitSource:
        return GitSource(repo, base=base, head=head, working_tree=working_tree)

    def diff(*, path: str, root: Path | None) -> DiffFileSource:
        return DiffFileSource(path, root=root)

    register("git", git)
    register("diff", diff)


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
