"""The reviewer roster: packaged prompts, repository reviewers and instructions, and who runs per tier."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import PurePosixPath
from typing import Any, Literal, cast

from codejury.agents.tools import TOOL_NAMES
from codejury.change.types import BaseReader, FileChange
from codejury.errors import ConfigError
from codejury.findings import Tier

ModelTier = Literal["top", "standard", "light"]
ReviewerSource = Literal["builtin", "repo", "plugin"]

ALL_TOOLS: frozenset[str] = TOOL_NAMES
BUILTIN_REVIEWERS: tuple[str, ...] = (
    "security",
    "performance",
    "code_quality",
    "documentation",
    "release",
    "agents_md",
    "compliance",
    "generalist",
)
COORDINATOR = "coordinator"
REPO_REVIEWERS_DIR = ".codejury/reviewers"
REPO_RULES_DIR = ".codejury/rules"
INSTRUCTION_FILES: tuple[str, ...] = ("AGENTS.md", "CLAUDE.md")
DEFAULT_TEXT_CAP = 8_000

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_FENCE = "+++"
_TIERS: tuple[str, ...] = ("top", "standard", "light")
_KEYS = frozenset({"name", "title", "tier", "tools", "timeout_s", "tiers"})
RISK_TIERS: tuple[Tier, ...] = ("trivial", "lite", "full")
EXTRA_REVIEWER_TIERS: frozenset[Tier] = frozenset({"lite", "full"})
"""Where a repository's or a plugin's reviewer runs unless it names its ``tiers``."""


@dataclass(frozen=True)
class ReviewerSpec:
    """One reviewer: its name, section title, model tier, prompt body and allowed tools."""

    name: str
    title: str
    tier: ModelTier
    prompt: str
    tools: frozenset[str] = ALL_TOOLS
    source: ReviewerSource = "builtin"
    timeout_s: float | None = None
    tiers: frozenset[Tier] = EXTRA_REVIEWER_TIERS
    """The risk tiers a repository's or a plugin's reviewer runs on (built-ins follow the roster's rules)."""


def _prompt_text(file_name: str) -> str:
    """Read one packaged prompt file, normalised to LF line endings."""
    data = resources.files("codejury.reviewers").joinpath("prompts", file_name).read_bytes()
    return data.decode("utf-8").replace("\r\n", "\n")


def _split_front_matter(text: str, origin: str) -> tuple[dict[str, Any], str]:
    """Split ``+++`` TOML front matter from the body; no front matter gives an empty table."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if not lines or lines[0].strip() != _FENCE:
        return {}, text.strip()
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == _FENCE)
    except StopIteration:
        raise ConfigError(f"{origin}: front matter opened with '+++' is never closed") from None
    try:
        table = tomllib.loads("\n".join(lines[1:end]))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{origin}: invalid TOML front matter: {exc}") from exc
    return table, "\n".join(lines[end + 1 :]).strip()


def _title_from(name: str) -> str:
    return name.replace("_", " ").replace("-", " ").strip().capitalize()


def parse_reviewer_file(name: str, text: str, source: ReviewerSource, *, origin: str | None = None) -> ReviewerSpec:
    """Parse a reviewer prompt file (optional ``+++`` TOML front matter, then the prompt body)."""
    where = origin or f"{name}.md"
    if not _NAME_RE.match(name):
        raise ConfigError(f"{where}: reviewer name {name!r} must be lowercase letters, digits, '_' or '-'")
    table, body = _split_front_matter(text, where)
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown front matter keys: {', '.join(unknown)}")
    declared = table.get("name", name)
    if declared != name:
        raise ConfigError(f"{where}: front matter name {declared!r} does not match the file name {name!r}")
    title = table.get("title", _title_from(name))
    if not isinstance(title, str) or not title.strip():
        raise ConfigError(f"{where}: 'title' must be a non-empty string")
    tier = table.get("tier", "standard")
    if tier not in _TIERS:
        raise ConfigError(f"{where}: 'tier' must be one of top, standard, light, not {tier!r}")
    tools = table.get("tools", sorted(ALL_TOOLS))
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise ConfigError(f"{where}: 'tools' must be a list of tool names")
    bad_tools = sorted(set(tools) - ALL_TOOLS)
    if bad_tools:
        raise ConfigError(f"{where}: unknown tools {', '.join(bad_tools)}; known: {', '.join(sorted(ALL_TOOLS))}")
    timeout = table.get("timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        raise ConfigError(f"{where}: 'timeout_s' must be a positive number")
    tiers = table.get("tiers", sorted(EXTRA_REVIEWER_TIERS))
    if not isinstance(tiers, list) or not tiers or any(t not in RISK_TIERS for t in tiers):
        raise ConfigError(f"{where}: 'tiers' must be a non-empty list of {', '.join(RISK_TIERS)}")
    if not body:
        raise ConfigError(f"{where}: the reviewer prompt is empty")
    return ReviewerSpec(
        name=name,
        title=title.strip(),
        tier=cast(ModelTier, tier),
        prompt=body,
        tools=frozenset(tools),
        source=source,
        timeout_s=float(timeout) if timeout is not None else None,
        tiers=frozenset(cast(list[Tier], tiers)),
    )


@cache
def _builtin_specs() -> tuple[ReviewerSpec, ...]:
    return tuple(parse_reviewer_file(n, _prompt_text(f"{n}.md"), "builtin") for n in BUILTIN_REVIEWERS)


def load_builtin_reviewers() -> dict[str, ReviewerSpec]:
    """The packaged reviewers (without the coordinator), in roster order."""
    return {spec.name: spec for spec in _builtin_specs()}


@cache
def coordinator_prompt() -> str:
    """The coordinator's (judge's) prompt body."""
    return parse_reviewer_file(COORDINATOR, _prompt_text(f"{COORDINATOR}.md"), "builtin").prompt


@cache
def shared_rules() -> str:
    """The rules every reviewer prompt starts with."""
    return _prompt_text("shared.md").strip()


def _md_files(base: BaseReader, directory: str) -> list[str]:
    return sorted(p for p in base.list_dir(directory) if p.endswith(".md"))


def load_repo_reviewers(base: BaseReader) -> dict[str, ReviewerSpec]:
    """Reviewers defined in ``.codejury/reviewers/*.md`` on the base side (same name overrides a builtin)."""
    specs: dict[str, ReviewerSpec] = {}
    for path in _md_files(base, REPO_REVIEWERS_DIR):
        name = PurePosixPath(path).stem
        if name == COORDINATOR:
            raise ConfigError(f"{path}: 'coordinator' is reserved and cannot be defined by a repository")
        text = base.read_text(path)
        if text is not None:
            specs[name] = parse_reviewer_file(name, text, "repo", origin=path)
    return specs


def _join_capped(parts: Sequence[tuple[str, str]], max_chars: int) -> str | None:
    """Join (header, text) parts under Markdown headers, cutting at ``max_chars`` with a note."""
    blocks = [f"## {header}\n\n{text.strip()}" for header, text in parts if text.strip()]
    if not blocks:
        return None
    joined = "\n\n".join(blocks)
    if len(joined) <= max_chars:
        return joined
    return joined[:max_chars].rstrip() + f"\n\n[truncated: {len(joined)} characters, first {max_chars} shown]"


def load_repo_instructions(base: BaseReader, *, max_chars: int = DEFAULT_TEXT_CAP) -> str | None:
    """AGENTS.md and CLAUDE.md at the repository root on the base side, with headers, capped."""
    parts = [(name, text) for name in INSTRUCTION_FILES if (text := base.read_text(name)) is not None]
    return _join_capped(parts, max_chars)


def load_custom_rules(base: BaseReader, *, max_chars: int = DEFAULT_TEXT_CAP) -> str | None:
    """The team's rules in ``.codejury/rules/*.md`` on the base side, with headers, capped."""
    parts = [(path, text) for path in _md_files(base, REPO_RULES_DIR) if (text := base.read_text(path)) is not None]
    return _join_capped(parts, max_chars)


_SECURITY_RE = re.compile(
    r"\b(?:SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM)\b.*\b(?:FROM|WHERE|SET|VALUES)\b"
    r"|(?i:\b(?:execute|executemany|executescript|raw|text)\s*\(\s*f?[\"'])"
    r"|(?i:\bsubprocess\b|\bos\.(?:system|popen|exec\w*|spawn\w*)\b|\bshell\s*=\s*True|child_process)"
    r"|(?i:(?<![\w.])(?:eval|exec)\s*\()"
    r"|(?i:passw(?:or)?d|secret|token|api[_-]?key|private[_-]?key|credential)"
    r"|(?i:\bpickle\b|\bmarshal\.loads?\b|\byaml\.(?:unsafe_)?load\s*\(|\bdill\b|\bshelve\b)"
    r"|(?i:\bcrypto\w*|\bhashlib\b|\bmd5\b|\bsha1\b|\bhmac\b|\bjwt\b|\bcipher\b|\b(?:en|de)crypt\w*|\bbcrypt\b)"
    r"|(?i:(?<![a-z])(?:auth(?!or)\w*|login|permission|csrf|cors|oauth|session|cookie))"
    r"|(?i:innerHTML|dangerouslySetInnerHTML|\bverify\s*=\s*False|\bmark_safe\b|\|\s*safe\b)"
)
_PERF_DIRECT_RE = re.compile(
    r"(?i:\bsleep\s*\()|\.all\(\s*\)|\.iterrows\(\s*\)|(?i:\bN\+1\b)|\.readlines\(\s*\)|\bselect_related\b"
)
_LOOP_RE = re.compile(r"^\s*(?:async\s+)?(?:for|while)\b|\.(?:forEach|map)\s*\(")
_QUERY_RE = re.compile(
    r"\.(?:execute|executemany|query|filter|exclude|find|find_one|fetch\w*|select|get_object|count)\s*\("
    r"|\bSELECT\b|\.objects\.|\brequests\.(?:get|post|put|delete)\b|\bhttpx2?\.|\burlopen\s*\("
    r"|\bfetch\s*\(|\bopen\s*\("
)
_LOOP_WINDOW = 12


def _added_runs(files: Sequence[FileChange]) -> list[list[str]]:
    """Added lines of every hunk, in order, one list per hunk."""
    return [[ln.text for ln in h.lines if ln.kind == "+"] for f in files for h in f.hunks]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _looks_security_relevant(runs: Sequence[Sequence[str]]) -> bool:
    return any(_SECURITY_RE.search(line) for run in runs for line in run)


def _looks_performance_relevant(runs: Sequence[Sequence[str]]) -> bool:
    for run in runs:
        for i, line in enumerate(run):
            if _PERF_DIRECT_RE.search(line):
                return True
            if not _LOOP_RE.search(line):
                continue
            depth = _indent(line)
            for body in run[i + 1 : i + 1 + _LOOP_WINDOW]:
                if body.strip() and _indent(body) <= depth:
                    break
                if _LOOP_RE.search(body) or _QUERY_RE.search(body):
                    return True
    return False


def touches_agent_instructions(files: Sequence[FileChange]) -> bool:
    """Whether the change adds, edits or removes an AGENTS.md or CLAUDE.md anywhere in the tree."""
    names = {n.lower() for n in INSTRUCTION_FILES}
    return any(PurePosixPath(p).name.lower() in names for f in files for p in (f.path, f.old_path) if p is not None)


def lite_extra_reviewer(files: Sequence[FileChange], *, release_changed: bool) -> str:
    """The lite tier's third reviewer, chosen from what the added lines look like."""
    runs = _added_runs(files)
    if _looks_security_relevant(runs):
        return "security"
    if _looks_performance_relevant(runs):
        return "performance"
    return "release" if release_changed else "performance"


def select_reviewers(
    tier: Tier,
    files: Sequence[FileChange],
    available: Mapping[str, ReviewerSpec],
    *,
    release_changed: bool,
    has_custom_rules: bool,
    has_agent_instructions: bool,
) -> list[str]:
    """Names of the reviewers to run for ``tier``, in roster order, then the repository's and plugins'
    reviewers whose ``tiers`` include it, by name."""
    if tier == "trivial":
        wanted = {"generalist"}
    elif tier == "lite":
        wanted = {
            "code_quality",
            "documentation",
            lite_extra_reviewer(files, release_changed=release_changed),
        }
    else:
        wanted = {"security", "performance", "code_quality", "documentation"}
        if release_changed:
            wanted.add("release")
        if has_agent_instructions or touches_agent_instructions(files):
            wanted.add("agents_md")
        if has_custom_rules:
            wanted.add("compliance")
    chosen = [name for name in BUILTIN_REVIEWERS if name in wanted and name in available]
    extras = (
        n for n, s in available.items() if s.source != "builtin" and n not in BUILTIN_REVIEWERS and tier in s.tiers
    )
    chosen.extend(sorted(extras))
    return chosen
