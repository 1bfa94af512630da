"""The settings model: every setting declared once (``SettingKeys``, the keys ``config.Settings`` holds as given,
and ``FileTable``, which adds the tables ``config.merge_validated`` converts) and every source of one validated
by ``FileTable``, the environment read through pydantic-settings.

A config file's table (``.codejury.toml``, ``[tool.codejury]``, ``--config``), the ``CODEJURY_*``
environment variables (``environment_table``: every key, a nested one with ``__``, e.g.
``CODEJURY_LIMITS__SPEND_PER_DAY_USD``) and the command-line flags that set the same keys all pass through
``validate_table``: it returns a ``FileTable`` or raises one ``ConfigError`` line that names the source, the
dotted key (``providers.gw.base_url``) or the variable or flag the user wrote, what was expected and what was
given. Files and flags are validated strictly (``"5"`` is not a number); environment variables are text, so
theirs is read as a number, a boolean (``1``/``0``, ``true``/``false``, ``yes``/``no``, ``on``/``off``) or a
list (JSON, or comma-separated) as the key expects. The same model, with its descriptions, is the settings
reference (``python -m codejury.config_docs``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Annotated, Any, Literal, cast, get_origin
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticCustomError
from pydantic_settings import BaseSettings, EnvSettingsSource
from pydantic_settings.sources.utils import parse_env_vars

from codejury.errors import ConfigError
from codejury.flags import FAIL_ON_CHOICES as FAIL_ON_CHOICES
from codejury.flags import is_http_url

ENV_PREFIX = "CODEJURY_"
ENV_NESTED = "__"
_PROVIDER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # the provider part of "provider:model"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class TypeLabel:
    """How the settings reference names a constrained type (found in ``Annotated`` metadata)."""

    text: str


def _expected(what: str) -> PydanticCustomError:
    return PydanticCustomError("codejury_expected", "{what}", {"what": what})


def _model_string(value: str) -> str:
    provider, sep, model = value.partition(":")
    if not sep or not model.strip() or not _PROVIDER.match(provider.strip()):
        raise _expected("a 'provider:model' string")
    return value.strip()


def _model_string_or_end(value: str | None) -> str | None:
    return None if not value else _model_string(value)  # "" ends a chain: None, as the settings hold it


def _none_if_empty(value: str | None) -> str | None:
    return value or None  # "" turns a URL setting off over an earlier layer


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value  # a file's list, held as a tuple


def _reranker(value: str) -> str:
    if value.strip() == "reviewer":
        return "reviewer"
    try:
        return _model_string(value)
    except PydanticCustomError:
        raise _expected("a 'provider:model' string, or \"reviewer\"") from None


def _http_url(value: str) -> str:
    if not is_http_url(value):
        raise _expected("an http:// or https:// URL")
    return value.strip()


def _url_template(value: str) -> str:
    text = value.strip()
    if not is_http_url(text):
        raise _expected("an http:// or https:// URL template, e.g. https://jira.example.com/rest/api/2/issue/{key}")
    if text.count("{key}") != 1:
        raise _expected("a URL template with {key} exactly once, where the issue's key goes")
    if "{key}" in urlsplit(text).netloc:
        raise _expected("a URL template with {key} in its path or query, not in its host")
    return text


def _env_name(value: str) -> str:
    if not _ENV_NAME.match(value):
        raise _expected("the name of an environment variable (letters, digits, '_')")
    return value


def _provider_name(value: str) -> str:
    if not _PROVIDER.match(value):
        raise _expected("a provider name (letters, digits, '.', '-', '_')")
    return value.lower()  # model strings are matched case-insensitively ("GW:x" → provider "gw")


def _fail_on(value: str) -> str:
    if value not in FAIL_ON_CHOICES:
        raise _expected("one of " + ", ".join(FAIL_ON_CHOICES))
    return value


ModelString = Annotated[str, AfterValidator(_model_string), TypeLabel('"provider:model"')]
Reranker = Annotated[str, AfterValidator(_reranker), TypeLabel('"provider:model" or "reviewer"')]
FailbackTarget = Annotated[
    str | None, AfterValidator(_model_string_or_end), TypeLabel('"provider:model", or "" to end the chain')
]
UrlOrOff = Annotated[str | None, AfterValidator(_none_if_empty)]
AS_TUPLE = BeforeValidator(_as_tuple)
HttpUrl = Annotated[str, AfterValidator(_http_url), TypeLabel("http(s) URL")]
UrlTemplate = Annotated[str, AfterValidator(_url_template), TypeLabel("http(s) URL template with {key}")]
"""A URL kept as the user wrote it, ``{key}`` included (once, after the host), to be filled in per issue."""
EnvName = Annotated[str, AfterValidator(_env_name), TypeLabel("environment variable name")]
ProviderName = Annotated[str, AfterValidator(_provider_name), TypeLabel("provider name")]
Name = Annotated[str, Field(min_length=1), TypeLabel("name")]
FailOn = Annotated[str, AfterValidator(_fail_on), TypeLabel("fail_on level")]
Count = Annotated[int, Field(gt=0), TypeLabel("integer > 0")]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False), TypeLabel("seconds > 0")]
SecondsOrZero = Annotated[float, Field(ge=0, allow_inf_nan=False), TypeLabel("seconds ≥ 0")]
Price = Annotated[float, Field(ge=0, allow_inf_nan=False), TypeLabel("USD per million tokens ≥ 0")]
Usd = Annotated[float, Field(gt=0, allow_inf_nan=False), TypeLabel("USD > 0")]
Glob = Annotated[str, Field(min_length=1), TypeLabel("glob")]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)  # strict or not: per source (``validate_table``)


class ModelsTable(_Table):
    """``[models]``: the model of each tier."""

    top: ModelString | None = Field(default=None, description="The coordinator's model (the judge).")
    standard: ModelString | None = Field(default=None, description="Code quality, security and performance reviewers.")
    light: ModelString | None = Field(default=None, description="Documentation, release and AGENTS.md reviewers.")


class ReviewerTable(_Table):
    """``[reviewers.NAME]``: one reviewer (a built-in, a repository or a plugin reviewer, or ``coordinator``)."""

    model: ModelString | None = Field(default=None, description="This reviewer's model, whatever its tier.")
    enabled: bool | None = Field(
        default=None, description="false: never run this reviewer; true: run it although an earlier layer said false."
    )


class ProviderTable(_Table):
    """``[providers.NAME]``: declare a provider (a gateway, a team server) or override a built-in one."""

    kind: Name | None = Field(
        default=None,
        description="Wire protocol: openai, anthropic, openai-compatible (a base_url is required), local, "
        "bedrock, vertex, azure, or a kind a plugin registers. Default: the kind of the built-in or plugin "
        "provider the table is named after (openai, anthropic, bedrock, vertex, azure, ollama, ...), else "
        "openai-compatible.",
    )
    base_url: HttpUrl | None = Field(default=None, description="Where the API lives; a built-in provider's by default.")
    api_key_env: EnvName | None = Field(
        default=None, description="The environment variable that holds the API key (keys never go in config)."
    )
    enabled: bool = Field(default=True, description="false: skip this provider's models along their failback chains.")
    region: Name | None = Field(
        default=None,
        description="bedrock: the AWS region (else AWS_REGION / AWS_DEFAULT_REGION / the profile's); "
        "vertex: the location (else GOOGLE_CLOUD_LOCATION).",
    )
    project: Name | None = Field(
        default=None, description="vertex: the Google Cloud project (else GOOGLE_CLOUD_PROJECT)."
    )
    api_version: Name | None = Field(
        default=None, description="azure: the Azure OpenAI API version (else OPENAI_API_VERSION), e.g. 2024-10-21."
    )

    @model_validator(mode="before")
    @classmethod
    def _no_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and "api_key" in data:
            raise PydanticCustomError(
                "codejury_api_key",
                "keys never go in config files; set api_key_env to the name of an environment variable",
            )
        return data


class PriceTable(_Table):
    """``[prices."provider:model"]``: what a model costs, over the price genai-prices ships (README, Prices)."""

    input: Price = Field(description="Input tokens.")
    output: Price = Field(description="Output tokens.")
    cache_read: Price | None = Field(
        default=None, description="Cached input tokens read (default: 0.1x input for Claude models, else 0.5x)."
    )
    cache_write: Price | None = Field(
        default=None,
        description="Input tokens written to the cache (default: 1.25x input for Claude models, else as input).",
    )


def _record_url(value: str) -> str:
    from codejury.record.target import parse_record_url  # the one parser of store URLs

    try:
        parse_record_url(value)
    except ValueError as exc:
        raise _expected(str(exc)) from None
    return value.strip()


RecordUrl = Annotated[str, AfterValidator(_record_url), TypeLabel("store URL")]


class RecordTable(_Table):
    """``[record]``: where every finished review is recorded (``codejury stats`` reads it back)."""

    url: RecordUrl | None = Field(
        default=None,
        description="sqlite:///PATH, postgresql://USER@HOST/DB, https://SERVICE (a review service's ingest "
        "endpoint, token in CODEJURY_INGEST_TOKEN), or none (record nothing). Default: a SQLite file in the "
        "user's data directory.",
    )
    prompts: bool = Field(
        default=False,
        description="true: traces carry the prompts and model responses (OpenTelemetry span attributes; known "
        "secrets are still scrubbed). Off by default: spans carry names, models, tokens and timings only.",
    )


class LimitsTable(_Table):
    """``[limits]``: caps on reviews and spend per UTC day, counted in the review store (``record.url``)."""

    reviews_per_day: Count | None = Field(
        default=None, description="Reviews a day across every repository the store records; the next one is refused."
    )
    reviews_per_day_per_repository: Count | None = Field(
        default=None, description="Reviews a day of one repository; the next one of it is refused."
    )
    spend_per_day_usd: Usd | None = Field(
        default=None,
        description="USD a day across every repository (the recorded reviews' cost); once reached, reviews are "
        "refused until the next UTC day.",
    )
    spend_per_day_per_repository_usd: Usd | None = Field(
        default=None,
        description="USD a day for one repository; once reached, its reviews are refused.",
    )

    @property
    def capped(self) -> bool:
        """Whether any cap is set."""
        return any(getattr(self, name) is not None for name in type(self).model_fields)


Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False), TypeLabel("number from 0 to 1")]


class ConfidenceTable(_Table):
    """``[confidence]``: the confidence a finding needs to be published, overall and per severity."""

    min: Fraction = Field(default=0.0, description="Every severity's threshold unless its own key is set.")
    critical: Fraction | None = Field(default=None, description="A critical's threshold (default: min).")
    warning: Fraction | None = Field(default=None, description="A warning's threshold (default: min).")
    suggestion: Fraction | None = Field(default=None, description="A suggestion's threshold (default: min).")


class MemoryTable(_Table):
    """``[memory]``: findings a person with write access dismissed, remembered across the repository's changes."""

    enabled: bool = Field(
        default=True,
        description="A finding whose rule and code match one a writer dismissed before in the same repository is "
        "not published as new: it is counted and listed in one line with where it was dismissed. A security "
        "finding backed by an analyzer is still published. false: every finding is published.",
    )
    max_age_days: Count = Field(
        default=180,
        description="A dismissal older than this many days stops suppressing (codejury learn reads the same window).",
    )
    learn_every_hours: Count | None = Field(
        default=None,
        description="A review service (codejury serve) runs codejury learn --propose for each repository it "
        "reviewed at this interval. Default: never.",
    )


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"is not a regular expression ({exc})") from exc
    return value


Regex = Annotated[str, Field(min_length=1), AfterValidator(_regex), TypeLabel("regular expression")]


class SkipTable(_Table):
    """``[skip]``: merge requests not reviewed, by label, author, title, target branch or paths."""

    labels: list[Name] = Field(
        default_factory=list, description="Skip a merge request that carries one of these labels (skip-review)."
    )
    authors: list[Glob] = Field(
        default_factory=list,
        description="Skip a merge request whose author's login matches one of these globs (dependabot[bot], "
        "renovate*).",
    )
    titles: list[Regex] = Field(
        default_factory=list,
        description="Skip a merge request whose title matches one of these regular expressions (^chore\\(deps\\)), "
        "searched from its start.",
    )
    target_branches: list[Glob] = Field(
        default_factory=list, description="Skip a merge request into a branch matching one of these globs."
    )
    paths: list[Glob] = Field(
        default_factory=list,
        description="Skip a change whose every changed file matches one of these globs (docs/**, *.md).",
    )

    @property
    def any(self) -> bool:
        """Whether any rule is set."""
        return any(getattr(self, name) for name in type(self).model_fields)


class RetrievalTable(_Table):
    """``[retrieval]``: code search (``search_code``, ``codejury search``): BM25, plus vectors and a reranker."""

    embeddings_model: ModelString | None = Field(
        default=None,
        description='Embeddings model, "provider:model" on an openai or openai-compatible provider (its '
        '/embeddings endpoint: OpenAI, Ollama, vLLM, llama.cpp, a gateway), or "NAME:MODEL" of an embeddings '
        "provider a plugin registers (docs/plugins.md). Chunks are embedded with their "
        "file path and name in front, kept in the local index cache per model, and searched beside BM25 "
        "(reciprocal rank fusion). Default: none, BM25 alone.",
    )
    rerank_model: Reranker | None = Field(
        default=None,
        description='Reranker, "provider:model" on a provider with a Cohere/Jina-style /rerank endpoint '
        "(vLLM, llama.cpp, Jina, or Cohere with base_url .../v2): the fused candidates are reordered by it. "
        '"reviewer": the model of the reviewer making the search reorders them, in one call per search that '
        "sees the query and the numbered candidates and answers their order (its tokens count in that "
        "reviewer's usage; a failed call keeps the fused order). Default: none.",
    )
    rerank_candidates: Annotated[int, Field(ge=1, le=100), TypeLabel("integer from 1 to 100")] = Field(
        default=30,
        description="Fused candidates sent to the reranker (each cut to 2,000 characters; for the reviewer's "
        "model, to an equal share of rerank_prompt_tokens).",
    )
    rerank_prompt_tokens: Annotated[int, Field(ge=500, le=100_000), TypeLabel("integer from 500 to 100000")] = Field(
        default=4_000,
        description='With rerank_model = "reviewer": the most tokens one rerank prompt takes, instructions, '
        "query and candidates together (counted at 3 characters a token, and never past the model's context "
        "window); candidates that do not fit keep their fused place after the ranked ones.",
    )
    vector_store: Annotated[str, Field(pattern=r"^postgres(ql)?://"), TypeLabel("postgresql:// URL")] | None = Field(
        default=None,
        description="Where chunk vectors are kept: a PostgreSQL database with the pgvector extension "
        "(postgresql://USER@HOST:PORT/DATABASE; the password from PGPASSWORD or ~/.pgpass, never in the URL), "
        "shared by every worker of a review service, so a repository is embedded once whichever worker reviews "
        "it. Default: the local index cache (a SQLite file). A store that cannot be used is one line, and "
        "chunks are embedded again.",
    )


class SettingKeys(_Table):
    """Every setting that ``config.Settings`` holds as a file gives it: each key declared once, here, for the
    files, the environment, the flags and the settings alike (a file's list is held as a tuple, a URL's ""
    as None, a failback's "" as None)."""

    providers: dict[ProviderName, ProviderTable] = Field(
        default_factory=dict, description="Providers (see [providers.NAME])."
    )
    prices: dict[ModelString, PriceTable] = Field(
        default_factory=dict, description='Prices per model (see [prices."provider:model"]).'
    )
    failback: dict[ModelString, FailbackTarget] = Field(
        default_factory=dict,
        description='Failback chains, "provider:model" = "provider:older-model"; "" ends a chain. '
        "Built in: each OpenAI and Anthropic default falls back to its previous generation "
        "where the provider still serves it.",
    )
    reflection: bool = Field(
        default=False, description="Run the reflection pass (reviewers amend each other) before the judge."
    )
    fail_on: FailOn = Field(
        default="requested_changes",
        description="Exit 1 when the review reaches this level (same choices as --fail-on).",
    )
    exclude: Annotated[tuple[Glob, ...], AS_TUPLE] = Field(
        default=(), description="Skip changed files matching these globs."
    )
    max_tool_calls: Count = Field(default=25, description="Tool calls one reviewer may make.")
    max_requests: Count = Field(default=30, description="Model requests one reviewer may make.")
    max_input_tokens: Count = Field(default=400_000, description="Input tokens one reviewer may spend.")
    reviewer_timeout_s: Seconds = Field(default=300.0, description="Per reviewer (a reviewer's own timeout_s wins).")
    overall_timeout_s: Seconds = Field(default=1500.0, description="The whole fan-out of reviewers.")
    stall_timeout_s: Seconds = Field(default=60.0, description="A model silent this long fails over to its next model.")
    heartbeat_s: Seconds = Field(default=30.0, description="Interval of the 'model is thinking…' line on stderr.")
    min_retry_window_s: SecondsOrZero = Field(
        default=120.0, description="No retry starts with less than this left before the reviewer's deadline."
    )
    breaker_failures: Count = Field(default=3, description="Failures in a row that open a model's circuit breaker.")
    breaker_cooldown_s: Seconds = Field(
        default=120.0, description="Open breaker: wait this long, then one probe request."
    )
    remote_config: UrlOrOff = Field(
        default=None,
        description="URL of a JSON routing document fetched at start-up and, while the models are called, re-read "
        "before each model request and every 2 s (see Remote routing in the README): https (http only to a "
        'loopback host), redirects on its own host only, sent without any token; "" turns it off. A document '
        "that cannot be fetched or is malformed is one warning.",
    )
    plugins: dict[Name, dict[str, Any]] = Field(
        default_factory=dict, description="[plugins.NAME]: settings a plugin reads (its own keys)."
    )
    approve: bool = Field(
        default=True, description="false: on a forge, publish comments only, never approve or withdraw."
    )
    verify: Literal["weak", "all", "off"] = Field(
        default="weak",
        description="Check findings with a separate call that sees only the claim and its code: those of weak "
        "models (the embedded model, weak_models), all, or off. A failed check drops the finding.",
    )
    votes: int = Field(
        default=1,
        ge=1,
        le=9,
        description="Samples per reviewer on weak models (voting): above 1, each reviewer of a weak model runs this "
        "many times (rotated file order, sampled) and a finding is kept only where votes_needed samples agree.",
    )
    votes_needed: int | None = Field(
        default=None, ge=1, le=9, description="Samples that must report a finding at one place (default: a majority)."
    )
    weak_panel: Literal["single", "panel"] = Field(
        default="single",
        description="How a weak model reviews a lite or full change: single, one call of the generalist reviewer in "
        "place of the security, performance, code quality, documentation and release reviewers (the AGENTS.md, "
        "compliance and your own reviewers still run); panel, one call per reviewer.",
    )
    intent_tokens: Annotated[int, Field(ge=0), TypeLabel("integer ≥ 0")] = Field(
        default=1500,
        description="Budget in tokens of the issues the change says it resolves (Fixes #12, Closes group/project#3: "
        "read from its forge with the forge's token, at most 5) in the reviewers' shared context, fenced as data; "
        "a reviewer reports an acceptance criterion the change does not meet as a finding that quotes it. 0 leaves "
        "them out.",
    )
    describe: bool = Field(
        default=True,
        description="Write a walkthrough of each reviewed change (what it does, its files by purpose, a diagram of a "
        "new or rerouted flow) with the coordinator's model; false: none, and the review says so in one line. A "
        "trivial change gets none.",
    )
    describe_in: Literal["comment", "description"] = Field(
        default="comment",
        description="Where a forge review puts the walkthrough: comment, in codejury's summary comment; description, "
        "in the merge request's description between codejury's markers (the author's text kept), or in the summary "
        "comment, with a note, where the token may not edit the description.",
    )
    issue_tracker_url: UrlTemplate | None = Field(
        default=None,
        description="A URL template with {key} where issues of another tracker are read as JSON (e.g. "
        "https://jira.example.com/rest/api/2/issue/{key}): keys such as ABC-123 in the change's title, description, "
        "branch or commits are read from it like linked forge issues, within intent_tokens.",
    )
    issue_tracker_token_env: EnvName | None = Field(
        default=None,
        description="The environment variable that holds issue_tracker_url's token, sent to that host only (the "
        "forge's token never goes there): email:api_token (Jira Cloud) as basic auth, anything else (a Jira Data "
        "Center personal access token) as a bearer token.",
    )
    max_unproven: int = Field(
        default=1,
        ge=0,
        le=100,
        description="At most this many findings of weak models that no analyzer backs (advisory ones) are published "
        "per review, the most severe first; the rest are dropped and counted (unproven_over_limit).",
    )
    weak_models: Annotated[tuple[Glob, ...], AS_TUPLE] = Field(
        default=(),
        description='More models to treat as weak, by "provider:model" glob: their findings are verified, and '
        "only those backed by analyzer evidence count toward a blocking verdict (the rest are advisory).",
    )
    evidence: Annotated[tuple[str, ...], AS_TUPLE] = Field(
        default=(),
        description="SARIF files from tools the team already runs, read as analyzer evidence (as --evidence).",
    )
    analyzers: bool = Field(
        default=True,
        description="Run the built-in analyzers (ruff, secrets, the rule pack, hadolint, team rules, drift, hygiene, "
        "hidden_text, shellcheck, zizmor, cppcheck, typos) on the changed lines.",
    )
    enable_analyzers: Annotated[tuple[Name, ...], AS_TUPLE] = Field(
        default=(),
        description="Analyzers that are off by default to run as well, by registered name (oxlint, mypy: "
        '["oxlint", "mypy"]).',
    )
    disable_analyzers: Annotated[tuple[Name, ...], AS_TUPLE] = Field(
        default=(),
        description='Analyzers not to run, by registered name (e.g. ["zizmor"]); a plugin\'s too.',
    )
    max_cost_usd: Usd | None = Field(
        default=None,
        description="Cost ceiling of one review in USD (as --max-cost): when the model calls reach it, running "
        "reviewers stop and the review is published as partial, never as an approval. Default: no ceiling.",
    )
    instructions_url: UrlOrOff = Field(
        default=None,
        description="URL of the organisation's instructions template (Markdown), given to every reviewer after "
        "the repository's own instructions; https (http only to a loopback host), redirects on its own host "
        'only, no token sent; fetched within 2 s, at most 64 KB. "" turns it off. One that cannot be fetched or '
        "is not a text document is one warning.",
    )
    related_code_tokens: Annotated[int, Field(ge=0), TypeLabel("integer ≥ 0")] = Field(
        default=600,
        description="Budget in tokens of the related-code section (definitions of the names the changed lines use, "
        "callers of the functions they change) in the prompt of a model that gets the change inline (the embedded "
        "model); it never takes the patches' room. 0 turns it off. Tool-capable models use search_code and "
        "find_references instead.",
    )
    discussion_tokens: Annotated[int, Field(ge=0), TypeLabel("integer ≥ 0")] = Field(
        default=1_500,
        description="Budget in tokens of the merge request's or pull request's discussion (people's comments, "
        "codejury's earlier findings and their replies, open or resolved) as a reviewer reads it: the answer of "
        "the get_pr_discussion tool for a tool-capable model, a section of the prompt for one that gets the change "
        "inline; the oldest threads are cut first, and the cut is said. Only on a forge (--url, --publish, CI, "
        "the service). 0 turns it off.",
    )
    test_failures_tokens: Annotated[int, Field(ge=0), TypeLabel("integer ≥ 0")] = Field(
        default=1_000,
        description="Budget in tokens of the failing tests (from --tests JUnit reports) in the reviewers' shared "
        "context, those covering a changed function first; the rest are cut, and the cut is said. 0 leaves them "
        "out of the context (the review still names them, and they still back findings).",
    )
    instructions_max_chars: Count = Field(
        default=8_000,
        description="Budget in characters of all instructions together (AGENTS.md, CLAUDE.md and "
        ".codejury/instructions.md from each changed file up to the root, nearest first, then the "
        "organisation's); what does not fit is cut, and the review says what.",
    )
    limits: LimitsTable = Field(
        default_factory=lambda: LimitsTable(), description="Daily caps on reviews and spend (see [limits])."
    )
    retrieval: RetrievalTable = Field(
        default_factory=lambda: RetrievalTable(),
        description="Embeddings and reranking for code search (see [retrieval]).",
    )
    memory: MemoryTable = Field(
        default_factory=lambda: MemoryTable(),
        description="Dismissed findings remembered per repository (see [memory]).",
    )
    skip: SkipTable = Field(
        default_factory=lambda: SkipTable(),
        description="Merge requests not reviewed, by label, author, title, target branch or paths (see [skip]).",
    )


class FileTable(SettingKeys):
    """Every setting: the codejury table of ``.codejury.toml``, ``[tool.codejury]`` of pyproject.toml or a
    ``--config`` file, and the ``CODEJURY_*`` variables (``CODEJURY_<KEY>``, ``CODEJURY_<TABLE>__<KEY>``: read by
    pydantic-settings' environment source, ``environment_table``): the keys of ``SettingKeys``, and the tables
    that ``config.merge_validated`` converts (the model of each tier, each reviewer's model and switch, the store
    and the confidence thresholds)."""

    models: ModelsTable = Field(default_factory=lambda: ModelsTable(), description="Model per tier (see [models]).")
    reviewers: dict[Name, ReviewerTable] = Field(
        default_factory=dict, description="Per reviewer (see [reviewers.NAME])."
    )
    record: RecordTable = Field(
        default_factory=lambda: RecordTable(), description="Where reviews are recorded (see [record])."
    )
    confidence: ConfidenceTable = Field(
        default_factory=lambda: ConfidenceTable(),
        description="The confidence a finding needs to be published, overall and per severity (see [confidence]).",
    )


@dataclass(frozen=True)
class Source:
    """Where a table came from, for error messages: ``where`` (a file, "environment") and how keys read."""

    where: str
    prefix: str = ""
    names: Mapping[str, str] | None = None
    """Dotted key → what the user wrote instead (``CODEJURY_FAIL_ON``, ``--model-for security``)."""

    def key(self, dotted: str) -> str:
        for known, name in (self.names or {}).items():
            rest = dotted[len(known) :] if dotted.startswith(known) else None
            if rest == "" or (rest and rest[0] == "["):  # a flag or a variable names a list as a whole
                return name
            if rest and rest[0] == ".":
                return name + rest
        return self.prefix + dotted

    def label(self, dotted: str) -> str:
        return f"{self.where}: {self.key(dotted)}"


def validate_table(table: Mapping[str, Any], source: Source, *, strict: bool = True) -> FileTable:
    """Validate one source's table (``strict``: no text read as a number or a boolean); the first problem
    becomes one ConfigError line."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{source.where}: {source.prefix.rstrip('.') or 'the config'} must be a table")
    try:
        return FileTable.model_validate(dict(table), strict=strict)
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc.errors(), source)) from exc


class _Environment(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping (a review's ``env``, not the process's)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._given = env
        # The model is a plain pydantic model, so that files and flags are validated strictly (a BaseSettings
        # re-validates in its __init__, which drops ``strict=True``); the source needs only its fields.
        super().__init__(
            cast("type[BaseSettings]", FileTable),
            case_sensitive=False,
            env_prefix=ENV_PREFIX,
            env_nested_delimiter=ENV_NESTED,
            env_ignore_empty=True,
        )

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self._given, False, True, None)  # names in any case; an empty value is unset

    def decode_complex_value(self, field_name: str, field: FieldInfo | None, value: Any) -> Any:
        """A table or a list as JSON; a list also as comma-separated values (``CODEJURY_EXCLUDE=docs/**,*.lock``)."""
        text = str(value).strip()
        if text[:1] in ("[", "{"):
            try:
                return json.loads(text)
            except ValueError as exc:
                raise ConfigError(
                    f"environment: {self._variable(field_name, value)} is not valid JSON ({exc})"
                ) from None
        if field is not None and get_origin(field.annotation) in (list, tuple):
            return [part.strip() for part in text.split(",") if part.strip()]
        variable = self._variable(field_name, value)
        raise ConfigError(
            f"environment: {variable} must be a JSON table, or set one key per variable as "
            f"{variable}{ENV_NESTED}KEY (got {show_value(value)})"
        )

    def _variable(self, field_name: str, value: Any) -> str:
        named = [k for k, v in self._given.items() if v == value and k.upper().endswith(field_name.upper())]
        return named[0] if named else env_name(field_name)


def environment_table(env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``CODEJURY_*`` variables of ``env`` that set a key, as one table, and the variable of each dotted key
    (for errors). Variables that are not settings (``CODEJURY_GITLAB_TOKEN``) are not read here."""
    table = _Environment(env)()
    names: dict[str, str] = {}
    for variable, value in env.items():
        if not value or not variable.upper().startswith(ENV_PREFIX):
            continue
        path = variable[len(ENV_PREFIX) :].lower().split(ENV_NESTED)
        if path[0] in FileTable.model_fields:
            names[".".join(path)] = variable
    return table, names


def env_name(dotted_key: str) -> str:
    """The variable that sets a key: ``limits.spend_per_day_usd`` → ``CODEJURY_LIMITS__SPEND_PER_DAY_USD``."""
    return ENV_PREFIX + dotted_key.replace(".", ENV_NESTED).upper()


def dotted(loc: tuple[str | int, ...]) -> str:
    """``("prices", "ollama:q:7b", "input")`` → ``prices."ollama:q:7b".input``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            key = part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else f'"{part}"'
            text += f".{key}" if text else key
    return text


def describe_errors(errors: list[ErrorDetails], source: Source) -> str:
    """One line for pydantic's errors: every unknown key, else the first problem and how many more."""
    unknown = [e for e in errors if e["type"] == "extra_forbidden"]
    if unknown:
        keys = [source.key(dotted(tuple(e["loc"]))) for e in unknown]
        hint = _did_you_mean(unknown[0]) if len(unknown) == 1 else ""
        return f"{source.where}: unknown setting(s): {', '.join(keys)}{hint}"
    first = errors[0]
    loc = tuple(p for p in first["loc"] if p != "[key]")
    label = source.label(dotted(loc)) if loc else source.where
    others = {source.label(dotted(tuple(e["loc"]))) for e in errors[1:]} - {label}
    more = f" (and {len(others)} more)" if others else ""
    if first["type"] == "codejury_api_key":
        return f"{source.label(dotted((*loc, 'api_key')))}: {first['msg']}{more}"
    if first["type"] == "missing":
        return f"{label} is required{more}"
    if "[key]" in first["loc"]:
        label += ": the name"
    return f"{label} must be {_expectation(first)} (got {show_value(first['input'])}){more}"


def _expectation(error: ErrorDetails) -> str:
    ctx = error.get("ctx") or {}
    kind = error["type"]
    phrases = {
        "bool_type": "true or false",
        "bool_parsing": "one of 1, true, yes, on, 0, false, no, off",
        "int_parsing": "a whole number",
        "float_parsing": "a number",
        "int_type": "a whole number",
        "float_type": "a number",
        "string_type": "a string",
        "dict_type": "a table",
        "model_type": "a table",
        "model_attributes_type": "a table",
        "list_type": "a list",
        "tuple_type": "a list",
        "finite_number": "a finite number",
        "string_too_short": "a non-empty string",
    }
    if kind == "codejury_expected":
        return str(ctx["what"])
    if kind in ("greater_than", "greater_than_equal"):
        bound = ctx.get("gt", ctx.get("ge"))
        return f"{'greater than' if kind == 'greater_than' else 'at least'} {bound:g}"
    return phrases.get(kind, error["msg"].removeprefix("Input should be ").removeprefix("Value error, "))


def show_value(value: Any) -> str:
    """A config value as an error message shows it (strings quoted and cut short)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        scheme, sep, _ = value.partition("://")
        if sep:  # a URL may carry credentials: name its scheme only
            return f"a {scheme[:12]!r} URL"
        text = value if len(value) <= 60 else value[:57] + "..."
        return f"the string {text!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int | float):
        return str(value)
    return type(value).__name__


def _did_you_mean(error: ErrorDetails) -> str:
    *parents, name = error["loc"]
    model: type[BaseModel] | None = FileTable
    for part in parents:
        model = _sub_model(model, str(part))
    if model is None:
        return ""
    close = get_close_matches(str(name), list(model.model_fields), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _sub_model(model: type[BaseModel] | None, part: str) -> type[BaseModel] | None:
    """The table model one step down ``part`` (through ``dict[str, Table]`` fields)."""
    if model is None:
        return None
    if part in model.model_fields:
        annotation = model.model_fields[part].annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return annotation
        args = getattr(annotation, "__args__", ())
        value = args[-1] if args else None
        return value if isinstance(value, type) and issubclass(value, BaseModel) else None
    return model if model is not FileTable else None  # a dict key (a provider's name) stays on its table
