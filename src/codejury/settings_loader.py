"""Read the layered settings for one change (files from the base side, env, CLI)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from codejury.change.types import ChangeSet
from codejury.config import Settings, apply_environment, fill_default_models, merge_file_table, read_config_text
from codejury.errors import ConfigError

CONFIG_FILES = ("pyproject.toml", ".codejury.toml")


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
