"""``codejury search "QUERY"``: the repository search the reviewers' ``search_code`` runs, from the shell.

It indexes the directory (``--repo``, default the current one) the way a review does, with the same
cache, and searches it with the same steps: BM25, and with ``[retrieval] embeddings_model`` the
vector search fused with it, then the reranker when ``rerank_model`` is set. ``--explain`` prints
each step's list with its scores; ``--format json`` prints them as data. Settings come from the
directory's ``.codejury.toml`` / ``pyproject.toml``, ``--config`` and the environment.

Only click is imported at start-up; the index and the provider SDK are imported when it runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from codejury.stats_command import exit_on_error

if TYPE_CHECKING:
    from codejury.config import Settings
    from codejury.repocontext.index import RepoIndex
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
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Extra config file (TOML), as for codejury review.",
)
def search_command(
    query: str, repo_dir: Path | None, top: int, explain: bool, fmt: str, config_file: Path | None
) -> None:
    """Search a repository's code as the reviewers' search_code does (BM25, vectors, rerank as configured)."""
    text = exit_on_error(lambda: _search(query, repo_dir, top, explain, fmt, config_file, dict(os.environ)))
    click.echo(text)


def _settings(root: Path, config_file: Path | None, env: dict[str, str]) -> Settings:
    from codejury.bounded_io import MAX_CONFIG_BYTES, read_path
    from codejury.config import Settings, apply_environment, merge_file_table, read_config_text
    from codejury.errors import ConfigError
    from codejury.settings_loader import CONFIG_FILES

    settings = Settings()
    files = [root / name for name in CONFIG_FILES if (root / name).is_file()]
    for path in [*files, *([config_file] if config_file is not None else [])]:
        text = read_path(path, MAX_CONFIG_BYTES, f"config file {path}", ConfigError).decode("utf-8", "replace")
        table, prefix = read_config_text(str(path if path == config_file else path.name), text)
        settings = merge_file_table(settings, table, str(path if path == config_file else path.name), prefix=prefix)
    return apply_environment(settings, env)


def _search(
    query: str, repo_dir: Path | None, top: int, explain: bool, fmt: str, config_file: Path | None, env: dict[str, str]
) -> str:
    from codejury.cli_io import shown_path
    from codejury.errors import InputError
    from codejury.models.providers import BUILTIN_PROVIDERS, ProviderSpec
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
    providers = dict(BUILTIN_PROVIDERS)
    for name, p in settings.providers.items():
        base = providers.get(name)
        providers[name] = ProviderSpec(
            name,
            p.kind,
            base_url=p.base_url or (base.base_url if base else None),
            api_key_env=p.api_key_env or (base.api_key_env if base else None),
            enabled=p.enabled,
        )
    given = settings.retrieval
    config = RetrievalConfig(
        given.embeddings_model, given.rerank_model, given.rerank_candidates, providers, env, embed_budget_s=None
    )
    context = RepoContext(root, cache_dir=store.default_cache_dir(), retrieval=config)
    retriever = context.retriever()
    index = context.index()
    if retriever is None or index is None:
        raise InputError(f"search: the repository index could not be built ({context.error})")
    for note in retriever.notes:
        click.echo(f"codejury: {note}", err=True)
    if fmt == "json":
        return json.dumps(_as_json(index, retriever.search(query, top)), indent=2)
    if explain:
        return explained(index, retriever.search(query, top), top=max(top, 10))
    return context.search_code(query, top)


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
