"""Write the settings reference (``docs/settings.md``) from the config schema, so it cannot drift.

    python -m codejury.config_docs            # rewrite docs/settings.md
    python -m codejury.config_docs --check    # exit 1 when docs/settings.md is out of date
    python -m codejury.config_docs --help     # say so, and write nothing

Every key, its type, default, meaning and environment variable come from the settings model
(``config_schema``); the built-in providers from ``models.providers``; the flags from the ``codejury review``
command itself.
"""

from __future__ import annotations

import argparse
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from codejury.config import ENV_ALIASES, ENV_MODEL, FAIL_ON_CHOICES, LAYERS
from codejury.config_schema import (
    ConfidenceTable,
    FileTable,
    LimitsTable,
    MemoryTable,
    ModelsTable,
    PriceTable,
    ProviderTable,
    RecordTable,
    RetrievalTable,
    ReviewerTable,
    SkipTable,
    TypeLabel,
    env_name,
)

DEFAULT_PATH = Path("docs/settings.md")

OTHER_ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("OPENAI_API_KEY", "Key of the built-in `openai` provider; with no model configured, selects OpenAI defaults."),
    ("ANTHROPIC_API_KEY", "Key of the built-in `anthropic` provider; with no model configured, selects Anthropic."),
    ("OPENAI_BASE_URL", "Base URL of the built-in `openai` provider (default `https://api.openai.com/v1`)."),
    ("ANTHROPIC_BASE_URL", "Base URL of the built-in `anthropic` provider (default `https://api.anthropic.com`)."),
    ("CODEJURY_GITLAB_TOKEN", "GitLab token for `--url` / `--publish` on a merge request."),
    ("CODEJURY_GITHUB_TOKEN", "GitHub token for `--url` / `--publish` on a pull request (read before GITHUB_TOKEN)."),
    ("GITHUB_TOKEN", "GitHub token when CODEJURY_GITHUB_TOKEN is not set (a workflow's own token)."),
    ("CODEJURY_GITHUB_BOT_LOGIN", "The bot's login when CODEJURY_GITHUB_TOKEN belongs to another user."),
    (
        "CODEJURY_GITLAB_URL",
        "The GitLab instance (web URL, default `https://gitlab.com`; in a GitLab CI job `CI_SERVER_URL`): the only"
        " host that gets CODEJURY_GITLAB_TOKEN, so a merge request URL on another host is refused.",
    ),
    (
        "CODEJURY_GITHUB_URL",
        "The GitHub instance (web URL, default `https://github.com`; in GitHub Actions `GITHUB_SERVER_URL`): the"
        " only host whose API gets the GitHub token, so a pull request URL on another host is refused.",
    ),
    (
        "CODEJURY_CACHE_DIR",
        "Where the embedded model is assembled and cached, with its saved system prompts (`prompts/`) and the"
        " repository index (default: the user cache dir).",
    ),
    (
        "CODEJURY_REPO_CACHE",
        "Where reviews with no checkout (`--url`, `codejury serve`/`worker`) keep a bare repository per forge"
        " repository and fetch the head commit they review (default: `repos/` in CODEJURY_CACHE_DIR; `off`:"
        " such reviews run diff-only and say so).",
    ),
    ("CODEJURY_LOCAL_CTX", "Context window of the embedded model, at least 512 (default 8192)."),
    ("CODEJURY_INGEST_TOKEN", "Bearer token sent to a review service's ingest endpoint (`record.url = https://…`)."),
    (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "Turns OpenTelemetry traces on: the collector's OTLP/HTTP base URL (`/v1/traces` is appended); "
        "`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` gives the full URL instead (see docs/telemetry.md).",
    ),
    ("CODEJURY_DEBUG", "`1`: an internal error (exit 5) prints its traceback."),
    (
        "CODEJURY_READ_TIMEOUT_S",
        "Seconds a read from a pipe, FIFO or device (`--diff -`, a `--diff` or `--config` FIFO) waits for its "
        "writer's next bytes before it stops with exit 2 (default 60; a terminal never times out).",
    ),
    ("CODEJURY_DATABASE_URL", "`codejury serve` / `codejury worker`: the PostgreSQL queue (as `--database`)."),
    (
        "CODEJURY_LOG_FORMAT",
        "`codejury serve` / `codejury worker`: `text` (default) or `json` log lines (as `--log-format`).",
    ),
    (
        "CODEJURY_METRICS_PORT",
        "`codejury worker`: serve Prometheus metrics of the reviews it ran on this port (as `--metrics-port`).",
    ),
    ("CODEJURY_METRICS_HOST", "`codejury worker`: the address of that metrics server (default 127.0.0.1)."),
    ("CODEJURY_GITHUB_WEBHOOK_SECRET", "`codejury serve`: the GitHub webhook secret (HMAC of each delivery)."),
    ("CODEJURY_GITLAB_WEBHOOK_TOKEN", "`codejury serve`: the GitLab webhook token (`X-Gitlab-Token`)."),
    (
        "CODEJURY_DASHBOARD_TOKEN",
        "`codejury serve`: opens /dashboard, as `Authorization: Bearer` or the password of HTTP Basic (a browser's "
        "prompt); without it, --dashboard-user-header or --dashboard-public, /dashboard answers 401.",
    ),
    (
        "CODEJURY_DASHBOARD_USER_HEADER",
        "`codejury serve`: as --dashboard-user-header: the header an authentication proxy sets for a signed-in user "
        "opens /dashboard.",
    ),
    ("CODEJURY_DASHBOARD_PUBLIC", "`codejury serve`: as --dashboard-public (`1`): /dashboard open to anyone."),
    ("CODEJURY_GITHUB_APP_ID", "`codejury serve`: the GitHub App's id (with its private key: installation tokens)."),
    ("CODEJURY_GITHUB_APP_PRIVATE_KEY", "`codejury serve`: the GitHub App's private key, PEM text."),
    ("CODEJURY_GITHUB_APP_PRIVATE_KEY_FILE", "`codejury serve`: a file holding the GitHub App's private key."),
    (
        "CODEJURY_GITHUB_API_URL",
        "The configured GitHub's API, reviews and App tokens alike (default: `https://api.github.com`, or"
        " CODEJURY_GITHUB_URL + `/api/v3`; set alone, it gives CODEJURY_GITHUB_URL too).",
    ),
)
"""Variables codejury reads that are not config keys (keys, tokens, the embedded model)."""


def type_label(annotation: Any, metadata: tuple[Any, ...] | list[Any] = ()) -> str:
    """How the reference names a field's type: a ``TypeLabel`` when it has one, else from the annotation."""
    for item in metadata:
        if isinstance(item, TypeLabel):
            return item.text
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return type_label(args[0], args[1:])
    if origin in (Union, types.UnionType):
        return " or ".join(type_label(a) for a in args if a is not type(None))
    if origin is dict:
        value = args[1]
        return "table of tables" if get_origin(value) is dict or _is_table(value) else f"table of {type_label(value)}"
    if origin in (list, tuple):  # a key's list is held as a tuple
        return f"list of {type_label(args[0])}"
    if origin is Literal:
        return "one of " + ", ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in args)
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if _is_table(annotation):
        return "table"
    return names.get(annotation, "any") if isinstance(annotation, type) else "any"


def _is_table(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None or isinstance(info.default, BaseModel) or info.default == ():
        return "—"
    if info.default is PydanticUndefined:
        return "required"
    value = info.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    return f"`{value}`"


def _rows(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    for name, info in model.model_fields.items():
        label = type_label(info.annotation, info.metadata)
        meaning = (info.description or "").replace("|", "\\|")
        yield f"| `{prefix}{name}` | {label} | {_default(info)} | {meaning} |"


def _table(model: type[BaseModel], prefix: str = "") -> list[str]:
    return ["| key | type | default | meaning |", "|---|---|---|---|", *_rows(model, prefix), ""]


def _section(title: str, model: type[BaseModel], example: str) -> list[str]:
    intro = (model.__doc__ or "").split(": ", 1)[-1].replace("``", "`")
    return [f"## `{title}`", "", intro[:1].upper() + intro[1:], "", *_table(model), example, ""]


def _builtin_providers() -> list[str]:
    from codejury.models.providers import BUILTIN_PROVIDERS, PROVIDER_KINDS

    lines = [
        f"Kinds: {', '.join(f'`{k}`' for k in PROVIDER_KINDS)}. Built-in providers (a `[providers.NAME]` "
        "table with the same name overrides the keys it sets):",
        "",
        "| provider | kind | base_url | api_key_env |",
        "|---|---|---|---|",
    ]
    for p in BUILTIN_PROVIDERS.values():
        where = p.base_url or ("— (in-process)" if p.kind == "local" else "vendor default")
        lines.append(f"| `{p.name}` | {p.kind} | {where} | {p.api_key_env or '—'} |")
    return [*lines, ""]


_BOOLEAN = "`1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`."
_LIST = 'A JSON list (`["a", "b"]`) or comma-separated values.'
_JSON = "A JSON table."


def _env_rows() -> Iterator[tuple[str, str, str]]:
    """(variable, key, how its value is written) for every key of the settings model."""
    for name, info in FileTable.model_fields.items():
        annotation: Any = info.annotation
        value_type = get_args(annotation)[-1] if get_origin(annotation) is dict else None
        if _is_table(annotation):
            yield env_name(name), name, _JSON
            for sub, sub_info in annotation.model_fields.items():
                yield env_name(f"{name}.{sub}"), f"{name}.{sub}", _env_value(sub_info.annotation)
        elif value_type is None:
            yield env_name(name), name, _env_value(annotation)
        elif type_label(get_args(annotation)[0]) != '"provider:model"':  # a name per entry: NAME, then its keys
            yield env_name(name), name, _JSON
            yield f"{env_name(name)}__NAME__KEY", f"{name}.NAME.KEY", "As the key (NAME is read in lower case)."
        else:
            yield env_name(name), name, _JSON + ' Keys such as `"provider:model"` fit in JSON only.'


def _env_value(annotation: Any) -> str:
    if get_origin(annotation) in (list, tuple):
        return _LIST
    if annotation is bool or bool in get_args(annotation):
        return _BOOLEAN
    return "As the key."


def _environment() -> list[str]:
    lines = [
        "Every key has a variable: `CODEJURY_` and the key in capitals, a nested key's parts joined by `__`",
        "(`CODEJURY_LIMITS__SPEND_PER_DAY_USD`). A whole table may be given as JSON in its own variable",
        "(`CODEJURY_LIMITS='{\"spend_per_day_usd\": 50}'`); the `__` variables inside it win. Values are text:",
        "a number, a boolean or a list is read as the key expects, and checked as a file's value is (a wrong one",
        "stops the run with one line naming the variable). An empty variable counts as unset.",
        "",
        "| variable | sets | value |",
        "|---|---|---|",
    ]
    lines += [f"| `{variable}` | `{key}` | {how} |" for variable, key, how in _env_rows()]
    lines += ["", "Other names, kept for these keys (the `__` name wins when both are set):", ""]
    lines += ["| variable | sets |", "|---|---|"]
    lines.append(
        f"| `{ENV_MODEL}` | `models.top`, `models.standard`, `models.light` where they are not set otherwise |"
    )
    lines += [f"| `{variable}` | `{key}` (as `{env_name(key)}`) |" for variable, key in ENV_ALIASES.items()]
    lines += ["", "Read as well (not config keys):", "", "| variable | meaning |", "|---|---|"]
    lines += [f"| `{name}` | {meaning} |" for name, meaning in OTHER_ENVIRONMENT]
    return [*lines, ""]


def _flags() -> list[str]:
    from codejury.cli import cli

    command = cli.commands["review"]
    lines = ["| flag | value | default | meaning |", "|---|---|---|---|"]
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        flags = ", ".join(f"`{o}`" for o in (*param.opts, *param.secondary_opts))
        value = "" if param.is_flag else (param.metavar or param.type.name.upper())
        if isinstance(param.type, click.Choice):
            value = " \\| ".join(f"`{choice}`" for choice in param.type.choices)
        shown = param.default if isinstance(param.default, int | float | str) and not param.is_flag else None
        default = "" if shown is None or isinstance(shown, bool) else f"`{shown}`"
        meaning = " ".join((param.help or "").split()).replace("|", "\\|")
        lines.append(f"| {flags} | {value} | {default} | {meaning} |")
    return [*lines, ""]


def render_settings_reference() -> str:
    """The whole ``docs/settings.md``."""
    lines = [
        "# Settings reference",
        "",
        "<!-- Generated by `python -m codejury.config_docs` from the config schema: do not edit by hand. -->",
        "",
        "Layers, lowest first (a later one wins for the keys it sets): "
        + " < ".join(LAYERS)
        + ". The two files are read from the base side of the change. The remote routing document (see Remote",
        "routing in the README) is fetched at start-up and re-read while the models are called; it carries reviewer",
        "models, failback, disabled providers and models and the kill switch, and wins over every other layer",
        "for them, the command line included: it is how an outage is handled while reviews run.",
        "`.codejury.toml` and a `--config` file hold the keys at their top level, or inside `[tool.codejury]`",
        "as in `pyproject.toml` (so the README's block can be copied as it is).",
        "",
        "Every value is checked when codejury starts, `--dry-run` included: a wrong type, an unknown key,",
        "a negative or non-finite number, a URL that is not http(s) or a malformed `provider:model` string",
        "stops the run with exit 2 and one line naming the file, the key and what was expected, e.g.",
        "`.codejury.toml: providers.gw.base_url must be an http:// or https:// URL (got a 'ftp' URL)`.",
        "",
        "## Top-level keys",
        "",
        *_table(FileTable),
        f"`fail_on` levels: {', '.join(f'`{c}`' for c in FAIL_ON_CHOICES)}.",
        "",
        *_section(
            "[models]",
            ModelsTable,
            '```toml\n[tool.codejury.models]\ntop = "anthropic:claude-opus-4-6"\n```',
        ),
        *_section(
            "[reviewers.NAME]",
            ReviewerTable,
            "NAME is a built-in reviewer, a repository reviewer (`.codejury/reviewers/NAME.md`), a plugin's "
            "reviewer or `coordinator`; a name that matches none is an error once the roster is assembled.\n\n"
            '```toml\n[tool.codejury.reviewers.security]\nmodel = "openai:gpt-5.1"\n```',
        ),
        *_section(
            "[providers.NAME]",
            ProviderTable,
            "Models name their provider: `NAME:model`. `api_key` is refused: keys come from the environment.\n\n"
            '```toml\n[tool.codejury.providers.gw]\nbase_url = "https://llm.example.com/v1"\n'
            'api_key_env = "GW_KEY"\n```',
        ),
        *_builtin_providers(),
        *_section(
            '[prices."provider:model"]',
            PriceTable,
            '```toml\n[tool.codejury.prices."ollama:qwen2.5-coder:7b"]\ninput = 0.0\noutput = 0.0\n```',
        ),
        "## `[failback]`",
        "",
        '`"provider:model" = "provider:older-model"`; `""` ends a chain. Chains stay inside one provider.',
        "",
        '```toml\n[tool.codejury.failback]\n"anthropic:claude-opus-4-6" = "anthropic:claude-opus-4-5"\n```',
        "",
        *_section(
            "[record]",
            RecordTable,
            "Every finished review is recorded (see docs/telemetry.md); `codejury stats` reads the store back.\n\n"
            '```toml\n[tool.codejury.record]\nurl = "postgresql://codejury@db.example.com/reviews"\n```',
        ),
        *_section(
            "[limits]",
            LimitsTable,
            "A review over a cap, or one the routing document's kill switch stops (see Remote routing in the "
            "README), calls no model: it is published and recorded as not reviewed, with the reason, and exits as "
            "a `not_reviewed` review does (1 under `--fail-on unreviewed`). Set the caps where the repository "
            "under review cannot raise them: `--config`, the environment or a review service's config file win "
            "over the repository's own file. A day is a UTC day (00:00 to 24:00 UTC). Counted: the reviews "
            "recorded today that reached a model (a review refused or with nothing to review is recorded but not "
            "counted) and their cost, and the reviews admitted and not recorded yet: admission reserves its slot "
            "in the transaction that counts, so of reviews racing for the last slot exactly one runs (a slot a "
            "crashed review left expires after `overall_timeout_s` plus 5 minutes). When the "
            "store cannot be counted (`record.url = none`, a review service's ingest URL, a store that does not "
            "answer: 2 s to connect, at most 5 s in all), the caps are not checked: the review runs and one "
            "warning line says so (recording never blocks a review).\n\n"
            "```toml\n[tool.codejury.limits]\nreviews_per_day = 200\nreviews_per_day_per_repository = 20\n"
            "spend_per_day_usd = 50.0\n```",
        ),
        *_section(
            "[confidence]",
            ConfidenceTable,
            "A finding whose confidence (0 to 1) is below its severity's threshold is not published and does not "
            "count toward the verdict; it is kept, flagged `below_threshold`, in the JSON output and the store, and "
            "counted among the dropped findings as `below_confidence`. A finding held on security evidence "
            "(`withholds_approval`) is published whatever its confidence. `codejury eval` reports precision and "
            "recall at several thresholds from one run, to choose them.\n\n"
            "```toml\n[tool.codejury.confidence]\nmin = 0.5\ncritical = 0.8\n```",
        ),
        *_section(
            "[retrieval]",
            RetrievalTable,
            "Off by default: code search is BM25 alone, and says so in one line. With an embeddings model the "
            "chunks are embedded (with their path and name in front) into the local index cache, per model, and "
            "searched beside BM25; `codejury search QUERY --explain` prints every step (see docs/context.md).\n\n"
            '```toml\n[tool.codejury.retrieval]\nembeddings_model = "ollama:nomic-embed-text"\n```',
        ),
        *_section(
            "[memory]",
            MemoryTable,
            "On by default, per repository, read from the review store (`record.url`): a finding whose rule "
            "(analyzer and rule, or reviewer and title) and code match one a person with write access dismissed "
            "before (a `won't fix` reply, a thread they resolved, a dispute the coordinator accepted) is not "
            "published as new. It is listed in one line with where it was dismissed, counted, and kept in the "
            "JSON output (`remembered`) and the store. A dismissal stops suppressing after `max_age_days`, or "
            "when its reviewer's prompt changed. A store that cannot be read: everything is published, and the "
            "review says memory was not consulted (docs/memory.md).\n\n"
            "```toml\n[tool.codejury.memory]\nmax_age_days = 90\n```",
        ),
        *_section(
            "[skip]",
            SkipTable,
            "Applied alike by `codejury review` in CI, with `--url` and in the review service, before any model "
            "is called: a skipped merge request is published and recorded as not reviewed, with the rule that "
            "skipped it (on GitHub a neutral check, never a success; an approval codejury gave before is "
            "withdrawn), and exits as a `not_reviewed` review does. A person with write access who comments "
            "`/codejury review` gets the review anyway. Labels are the forge's (none on a local review).\n\n"
            '```toml\n[tool.codejury.skip]\nlabels = ["skip-review"]\nauthors = ["dependabot[bot]", "renovate*"]\n'
            'titles = ["^chore\\\\(deps\\\\)"]\ntarget_branches = ["release/*"]\npaths = ["docs/**", "*.md"]\n```',
        ),
        "## `[plugins.NAME]`",
        "",
        "A plugin's own settings, passed to that plugin only; the plugin checks its keys.",
        "",
        "## Environment variables",
        "",
        *_environment(),
        "## Flags of `codejury review`",
        "",
        *_flags(),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m codejury.config_docs",
        description="Write the settings reference from the config schema.",
    )
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH, help=f"the page (default {DEFAULT_PATH})")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the page is out of date")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)  # --help prints this and exits 0
    path: Path = args.path
    text = render_settings_reference()
    if args.check:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            print(f"{path} is out of date: run python -m codejury.config_docs", file=sys.stderr)
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
