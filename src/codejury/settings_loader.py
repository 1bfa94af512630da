"""Read the layered settings for one change (files from the base side, env, CLI).

``BASE_SIDE_FILES`` and ``BASE_SIDE_DIRS`` name everything codejury reads from the base side of
a change (the config files here; the instructions, repository reviewers and rules that the
built-in plugin reads through ``reviewers.roster``): a forge adapter, whose API is async, reads
them ahead with ``prefetch_base`` into the synchronous ``BaseReader`` the rest expects.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from codejury.change.types import ChangeSet, PrefetchedBase
from codejury.config import Settings, apply_environment, fill_default_models, merge_file_table, read_config_text
from codejury.errors import ConfigError
from codejury.reviewers.roster import INSTRUCTION_FILES, REPO_REVIEWERS_DIR, REPO_RULES_DIR

CONFIG_FILES = ("pyproject.toml", ".codejury.toml")
BASE_SIDE_FILES: tuple[str, ...] = (*CONFIG_FILES, *INSTRUCTION_FILES)
"""Files codejury reads from the base side: config, then repository instructions."""
BASE_SIDE_DIRS: tuple[str, ...] = (REPO_REVIEWERS_DIR, REPO_RULES_DIR)
"""Directories whose ``*.md`` files codejury reads from the base side (reviewers, rules)."""
PREFETCH_CONCURRENCY = 4
T = TypeVar("T")


async def prefetch_base(
    read_text: Callable[[str], Awaitable[str | None]],
    list_dir: Callable[[str], Awaitable[list[str]]],
    *,
    concurrency: int = PREFETCH_CONCURRENCY,
) -> PrefetchedBase:
    """Read every base-side path codejury uses (``BASE_SIDE_FILES``, ``*.md`` in ``BASE_SIDE_DIRS``).

    ``read_text`` answers None for a missing file, ``list_dir`` the paths of the files directly
    inside a directory ([] when it is missing); an error from either propagates: a review must not
    run without the team's config just because reading it failed.
    """
    gate = asyncio.Semaphore(max(1, concurrency))

    async def bounded(call: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await call()

    listings = await _all([functools.partial(list_dir, d) for d in BASE_SIDE_DIRS], bounded)
    dirs = dict(zip(BASE_SIDE_DIRS, listings, strict=True))
    paths = [*BASE_SIDE_FILES, *(p for listed in listings for p in listed if p.endswith(".md"))]
    paths = list(dict.fromkeys(paths))
    texts = await _all([functools.partial(read_text, p) for p in paths], bounded)
    return PrefetchedBase(dict(zip(paths, texts, strict=True)), dirs)


async def _all(
    calls: list[Callable[[], Awaitable[T]]], run: Callable[[Callable[[], Awaitable[T]]], Awaitable[T]]
) -> list[T]:
    """Every call's result in order; the first failure cancels the others and is raised."""
    tasks = [asyncio.ensure_future(run(call)) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _read_repo_file(change: ChangeSet, name: str) -> str | None:
    if change.base is not None:
        return change.base.read_text(name)
    if change.root is not None:
        path = change.root / name
        if path.is_file():
            return path.read_text(encoding="utf-8", errors="replace")
    return None


def load_settings(
    change: ChangeSet,
    env: Mapping[str, str],
    *,
    cli_table: Mapping[str, Any] | None = None,
    cli_model: str | None = None,
    cli_reviewer_models: Mapping[str, str] | None = None,
    config_file_text: tuple[str, str] | None = None,
) -> tuple[Settings, str | None]:
    """Defaults < repo config (base side) < explicit --config file < environment < CLI flags."""
    settings = Settings()
    for name in CONFIG_FILES:
        text = _read_repo_file(change, name)
        if text is not None:
            settings = merge_file_table(settings, read_config_text(name, text), name)
    if config_file_text is not None:
        name, text = config_file_text
        settings = merge_file_table(settings, read_config_text(name, text), name)
    settings = apply_environment(settings, env)
    if cli_table:
        settings = merge_file_table(settings, cli_table, "command line")
    if cli_model or cli_reviewer_models:
        from dataclasses import replace

        models = dict(settings.models)
        if cli_model:
            models = {tier: cli_model for tier in ("top", "standard", "light")}
        reviewer_models = {**settings.reviewer_models, **(cli_reviewer_models or {})}
        settings = replace(settings, models=models, reviewer_models=reviewer_models, model_source="command line")
    return fill_default_models(settings, env)


def parse_assignments(values: tuple[str, ...], flag: str) -> dict[str, str]:
    """Parse repeated NAME=VALUE flags."""
    out: dict[str, str] = {}
    for v in values:
        name, sep, value = v.partition("=")
        if not sep or not name or not value:
            raise ConfigError(f"{flag} expects NAME=VALUE, got '{v}'")
        out[name.strip()] = value.strip()
    return out
