"""The one loader of the layered settings for one change (``config.LAYERS``): defaults, the config files read
from the base side, ``--config``, the environment and the flags, each validated by ``config_schema.FileTable``
and merged by ``config.merge_validated``; the routing document is applied later, at ``post_configure``. A
review (``session``), the service's reviews and ``codejury eval`` read settings through ``load_review_settings``;
``codejury stats``, ``search`` and ``learn`` through ``local_settings``.

``BASE_SIDE_FILES`` and ``BASE_SIDE_DIRS`` name everything codejury reads from the base side of
a change (the config files here; the instructions, repository reviewers and rules that the
built-in plugin reads through ``reviewers.roster``): a forge adapter, whose API is async, reads
them ahead with ``prefetch_base`` into the synchronous ``BaseReader`` the rest expects.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from codejury.bounded_io import MAX_CONFIG_BYTES, read_path
from codejury.change.types import ChangeSet, PrefetchedBase
from codejury.config import (
    TIERS,
    Settings,
    apply_environment,
    fill_default_models,
    merge_file_table,
    read_config_text,
)
from codejury.errors import ConfigError
from codejury.flags import SETTING_FLAGS, ReviewFlags
from codejury.models.readiness import embedded_model_missing
from codejury.reviewers.instructions import instruction_paths
from codejury.reviewers.roster import INSTRUCTION_FILES, REPO_REVIEWERS_DIR, REPO_RULES_DIR

CONFIG_FILES = ("pyproject.toml", ".codejury.toml")
BASE_SIDE_FILES: tuple[str, ...] = (*CONFIG_FILES, *INSTRUCTION_FILES)
"""Files codejury reads from the base side: config, then repository instructions."""
BASE_SIDE_DIRS: tuple[str, ...] = (REPO_REVIEWERS_DIR, REPO_RULES_DIR)
"""Directories whose ``*.md`` files codejury reads from the base side (reviewers, rules)."""
CLI_FLAGS = {key: flag for key, flag in SETTING_FLAGS.values()}
"""Config keys that a ``codejury review`` flag sets (the flag names the key in errors)."""
PREFETCH_CONCURRENCY = 4
MAX_MOVED_READS = 300
"""At most this many moved files' old texts are read ahead (``prefetch_base``'s ``moved``); past it, a moved file
listed without a text diff is reviewed as its whole head side (``change.noise.settled``)."""
T = TypeVar("T")


async def prefetch_base(
    read_text: Callable[[str], Awaitable[str | None]],
    list_dir: Callable[[str], Awaitable[list[str]]],
    *,
    concurrency: int = PREFETCH_CONCURRENCY,
    changed: Sequence[str] = (),
    moved: Sequence[str] = (),
) -> PrefetchedBase:
    """Read every base-side path codejury uses (``BASE_SIDE_FILES``, ``*.md`` in ``BASE_SIDE_DIRS``, and
    the instruction files of every directory from a ``changed`` path up to the root), and the old text of
    the first ``MAX_MOVED_READS`` ``moved`` paths: where a file a forge lists as moved without a text diff
    was (GitHub's pure rename), so a move that changed nothing reads as such (``change.noise.settled``).

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
    paths += instruction_paths(changed)
    paths += list(dict.fromkeys(moved))[:MAX_MOVED_READS]
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
            return read_path(path, MAX_CONFIG_BYTES, f"config file {path}", ConfigError).decode("utf-8", "replace")
    return None


def load_review_settings(change: ChangeSet, env: Mapping[str, str], flags: ReviewFlags) -> tuple[Settings, str | None]:
    """The layered settings of ``change`` for a review asked with ``flags`` (``load_settings``'s layers, the
    flags' own from ``flags.SETTING_FLAGS``) and the notice to show, if any."""
    config_text = (str(flags.config_file), read_config_file(flags.config_file)) if flags.config_file else None
    return load_settings(
        change,
        env,
        cli_table=flag_table(flags),
        cli_model=flags.model,
        cli_reviewer_models=parse_assignments(flags.model_for, "--model-for"),
        config_file_text=config_text,
    )


def flag_table(flags: ReviewFlags) -> dict[str, Any]:
    """The settings ``flags`` set (``SETTING_FLAGS``), as a config table: a flag left out sets nothing."""
    table: dict[str, Any] = {}
    for name, (key, _) in SETTING_FLAGS.items():
        value = getattr(flags, name)
        if value is None or value == () or value == "":
            continue
        if name == "evidence":  # read later, maybe from another directory
            value = [str(Path(p).resolve()) for p in value]
        table[key] = list(value) if isinstance(value, tuple) else value
    return table


def read_config_file(path: Path) -> str:
    """A ``--config`` file's text, capped while read (``/dev/zero``, a FIFO); ConfigError when it cannot be."""
    data = read_path(path, MAX_CONFIG_BYTES, f"config file {path}", ConfigError)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def layered_settings(
    change: ChangeSet, env: Mapping[str, str], config_file_text: tuple[str, str] | None = None
) -> Settings:
    """Every layer below the flags: defaults < repository config (base side) < ``--config`` < environment."""
    settings = Settings()
    files = [(name, _read_repo_file(change, name)) for name in CONFIG_FILES]
    for name, text in [*files, *([config_file_text] if config_file_text is not None else [])]:
        if text is not None:
            table, prefix = read_config_text(name, text)
            settings = merge_file_table(settings, table, name, prefix=prefix)
    return apply_environment(settings, env)


def local_settings(root: Path, env: Mapping[str, str], config_file: Path | None = None) -> Settings:
    """The settings a review of the repository at ``root`` starts from, before its flags and default models
    (``codejury stats``, ``search`` and ``learn`` read them so)."""
    text = (str(config_file), read_config_file(config_file)) if config_file is not None else None
    return layered_settings(ChangeSet(files=(), root=root), env, text)


def load_settings(
    change: ChangeSet,
    env: Mapping[str, str],
    *,
    cli_table: Mapping[str, Any] | None = None,
    cli_model: str | None = None,
    cli_reviewer_models: Mapping[str, str] | None = None,
    config_file_text: tuple[str, str] | None = None,
) -> tuple[Settings, str | None]:
    """Defaults < repo config (base side) < explicit --config file < environment < CLI flags.

    Every layer is validated here, so a bad value fails before any plugin or model runs
    (``--dry-run`` included); reviewer names are checked once the roster is assembled.
    """
    settings = layered_settings(change, env, config_file_text)
    table, names = _cli_layer(cli_table or {}, cli_model, cli_reviewer_models or {})
    if table:
        source = "command line" if (cli_model is not None or cli_reviewer_models) else settings.model_source
        settings = merge_file_table(settings, table, "command line", names=names, model_source=source)
    settings, notice = fill_default_models(settings, env)
    if settings.model_source == "embedded" and (missing := embedded_model_missing()) is not None:
        # Never promise the embedded model where it cannot run: say what to install or configure.
        notice = (
            f"no model provider configured, and {missing}; or set CODEJURY_MODEL "
            "(e.g. openai:gpt-5-mini with OPENAI_API_KEY) or [tool.codejury.models]"
        )
    return settings, notice


def _cli_layer(
    flags: Mapping[str, Any], model: str | None, reviewer_models: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The command-line flags as one config table, and the flag each key came from (for errors)."""
    table = dict(flags)
    names = {key: flag for key, flag in CLI_FLAGS.items() if key in table}
    if model is not None:
        table["models"] = {tier: model for tier in TIERS}
        names.update({f"models.{tier}": "--model" for tier in TIERS})
    if reviewer_models:
        table["reviewers"] = {name: {"model": spec} for name, spec in reviewer_models.items()}
        names.update({f"reviewers.{name}.model": f"--model-for {name}" for name in reviewer_models})
    return table, names


def parse_assignments(values: tuple[str, ...], flag: str) -> dict[str, str]:
    """Parse repeated NAME=VALUE flags (both sides non-empty)."""
    out: dict[str, str] = {}
    for v in values:
        name, sep, value = (part.strip() for part in v.partition("="))
        if not sep or not name or not value:
            raise ConfigError(f"{flag} expects NAME=VALUE with both sides non-empty, got {v!r}")
        out[name] = value
    return out
