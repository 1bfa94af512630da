"""``codejury search "QUERY"``: the repository search the reviewers' ``search_code`` runs, from the shell.

It indexes the directory (``--repo``, default the current one) the way a review does, with the same
cache, and searches it with the same steps: BM25, and with ``[retrieval] embeddings_model`` the
vector search fused with it, then the reranker when ``rerank_model`` is set (with ``"reviewer"``,
the standard tier's model stands in for the reviewer whose search it would be). ``--explain`` prints
each step's list with its scores; ``--format json`` prints them as data. Settings come from the
directory's ``.codejury.toml`` / ``pyproject.toml``, ``--config`` and the environment; installed
plugins and ``--plugin`` modules may register embeddings providers.

Only click is imported at start-up; the index and the provider SDK are imported when it runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from codejury.flags import review_options
from codejury.stats_command import exit_on_error

if TYPE_CHECKING:
    from collections.abc import Mapping

    from codejury.config import Settings
    from codejury.models.providers import ProviderSpec
    from codejury.plugins import Plugins
    from codejury.repocontext.context import RepoContext
    from codejury.repocontext.index import RepoIndex
    from codejury.repocontext.model_rerank import ModelReranker
    from codejury.repocontext.retrieval import Hits, Retrieval


@click.command("search")
@click.argument("query")
@click.option(
    "--repo",
    "repo_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Repository directory to search (default: current directory).",
)
@click.option("-k", "--top", type=click.IntRange(1, 50), default=8, show_default=True, help="Results to show.")
@click.option("--explain", is_flag=True, help="Print the BM25, vector, fused and reranked lists with their scores.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: every step's list as data.",
)
@review_options("config_file", "plugins")
def search_command(plugins: tuple[str, ...], **params: Any) -> None:
    """Search a repository's code as the reviewers' search_code does (BM25, vectors, rerank as configured)."""
    text = exit_on_error(lambda: _search(**params, env=dict(os.environ), plugin_modules=plugins))
    click.echo(text)


def _settings(root: Path, config_file: Path | None, env: dict[str, str]) -> Settings:
    from codejury.settings_loader import local_settings

    return local_settings(root, env, config_file)


def _search(
    query: str,
    repo_dir: Path | None,
    top: int,
    explain: bool,
    fmt: str,
    config_file: Path | None,
    env: dict[str, str],
    plugin_modules: tuple[str, ...] = (),
) -> str:
    from codejury.cli_io import shown_path
    from codejury.config import check_embeddings_provider
    from codejury.errors import InputError
    from codejury.lifecycle import configured_providers
    from codejury.models.providers import BUILTIN_PROVIDERS
    from codejury.plugins import load_plugins
    from codejury.repocontext import store
    from codejury.repocontext.context import RepoContext
    from codejury.repocontext.retrieval import RetrievalConfig
    from codejury.repocontext.retrieval import explain as explained

    if not query.strip():
        raise InputError("search: give a query: words or identifiers, e.g. 'parse config file'")
    root = repo_dir or Path.cwd()
    if not root.is_dir():
        raise InputError(f"--repo {shown_path(root)}: no such directory")
    settings = _settings(root, config_file, env)
    providers = configured_providers(settings, BUILTIN_PROVIDERS)
    plugins = load_plugins(plugin_modules)
    check_embeddings_provider(settings, providers, plugins.embeddings)  # an unknown NAME: exit 2, one line
    given = settings.retrieval
    config = RetrievalConfig(
        given.embeddings_model,
        given.rerank_model,
        given.rerank_candidates,
        providers,
        env,
        embed_budget_s=None,
        rerank_prompt_tokens=given.rerank_prompt_tokens,
        embeddings_providers=plugins.embeddings,
        vector_store=given.vector_store,
    )
    context = RepoContext(root, cache_dir=store.default_cache_dir(), retrieval=config)
    retriever = context.retriever()
    index = context.index()
    if retriever is None or index is None:
        raise InputError(f"search: the repository index could not be built ({context.error})")
    reranker, said = (
        _model_reranker(context, settings, providers, env, plugins) if config.reranks_with_model else (None, None)
    )
    for note in [*retriever.notes, *([said] if said else [])]:
        click.echo(f"codejury: {note}", err=True)
    if fmt == "json":
        return json.dumps(_as_json(index, retriever.search(query, top, reranker=reranker)), indent=2)
    if explain:
        return explained(index, retriever.search(query, top, reranker=reranker), top=max(top, 10))
    return context.search_code(query, top, reranker=reranker)


def _model_reranker(
    context: RepoContext,
    settings: Settings,
    providers: Mapping[str, ProviderSpec],
    env: Mapping[str, str],
    plugins: Plugins,
) -> tuple[ModelReranker | None, str]:
    """With ``rerank_model = "reviewer"``: the standard tier's model as the reranker, and the line that says so
    (or why there is none: the search then keeps the fused order)."""
    from codejury.config import fill_default_models
    from codejury.errors import CodejuryError
    from codejury.models.readiness import model_problem
    from codejury.models.registry import resolve_model
    from codejury.plugins import collect_registry

    spec = fill_default_models(settings, env)[0].models.get("standard")
    if spec is None:
        return None, "rerank off: no standard model configured to rerank with"
    provider = providers.get(spec.partition(":")[0].strip().lower())
    if provider is not None and provider.kind == "local":  # no tools: a review's reviewers on it never search
        return None, f"rerank off: the standard model {spec} is the embedded model, which does not rerank"
    problem = model_problem(spec, providers, env)
    if problem is not None:
        return None, f"rerank off: the standard model {spec} cannot run here ({problem})"
    try:
        resolved = resolve_model(
            spec, providers, env=env, kinds=collect_registry(plugins.manager, "codejury_register_model_kinds")
        )
    except CodejuryError as exc:
        return None, f"rerank off: the standard model {spec} cannot be used ({exc})"
    reranker = context.model_reranker(resolved)
    return reranker, f"rerank: the standard model {spec} orders the candidates (one call)"


def _as_json(index: RepoIndex, answer: Retrieval) -> dict[str, Any]:
    def listed(hits: Hits | None) -> list[dict[str, Any]] | None:
        if hits is None:
            return None
        out = []
        for cid, score in hits:
            chunk = index.chunks[cid]
            out.append(
                {"path": index.path_of(cid), "start": chunk.start, "end": chunk.end, "kind": chunk.kind,
                 "name": chunk.name, "score": round(score, 6)}
            )  # fmt: skip
        return out

    return {
        "query": answer.query,
        "cached": answer.cached,
        "notes": list(answer.notes),
        **{name: listed(hits) for name, hits in answer.lists().items()},
        "final": listed(answer.final),
        "seconds": round(answer.seconds, 4),
    }
