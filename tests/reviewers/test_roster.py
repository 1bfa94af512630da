"""Packaged prompts, repository reviewers, instructions and custom rules."""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from codejury.change.types import BaseReader
from codejury.errors import ConfigError
from codejury.reviewers import (
    ALL_TOOLS,
    BUILTIN_REVIEWERS,
    coordinator_prompt,
    load_builtin_reviewers,
    load_custom_rules,
    load_repo_instructions,
    load_repo_reviewers,
    parse_reviewer_file,
    roster,
    shared_rules,
)


class FakeBase(BaseReader):
    """Base-side files held in a dict."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def list_dir(self, directory: str) -> list[str]:
        prefix = directory.rstrip("/") + "/"
        return [p for p in self.files if p.startswith(prefix) and "/" not in p[len(prefix) :]]


def test_builtin_roster_has_all_eight_reviewers_without_the_coordinator() -> None:
    roster = load_builtin_reviewers()
    assert list(roster) == list(BUILTIN_REVIEWERS)
    assert len(roster) == 8
    assert "coordinator" not in roster


@pytest.mark.parametrize("name", BUILTIN_REVIEWERS)
def test_each_builtin_prompt_has_both_sections_and_a_declared_tier(name: str) -> None:
    spec = load_builtin_reviewers()[name]
    assert "## What to flag" in spec.prompt
    assert "## What NOT to flag" in spec.prompt
    assert spec.prompt.index("## What to flag") < spec.prompt.index("## What NOT to flag")
    assert "+++" not in spec.prompt
    raw = resources.files("codejury.reviewers").joinpath("prompts", f"{name}.md").read_text("utf-8")
    front = tomllib.loads(raw.split("+++")[1])
    assert front["name"] == name
    assert front["tier"] == spec.tier
    assert spec.source == "builtin"
    assert spec.tools == ALL_TOOLS
    assert len(spec.prompt) / 4 <= 280, "reviewer prompts must stay small for an 8k-context model"


def test_model_tiers_follow_the_design() -> None:
    roster = load_builtin_reviewers()
    assert {n for n, s in roster.items() if s.tier == "light"} == {"documentation", "release", "agents_md"}
    assert roster["code_quality"].timeout_s == 600
    assert all(s.timeout_s is None for n, s in roster.items() if n != "code_quality")
    assert roster["security"].title == "Security"


def test_shared_rules_fence_author_text_and_define_severities() -> None:
    rules = shared_rules()
    for tag in ("<mr_body>", "<commit_messages>", "<file_content>", "<patch>"):
        assert tag in rules
    for severity in ("critical", "warning", "suggestion"):
        assert severity in rules
    assert "NEW-side" in rules
    assert len(rules) / 4 <= 380


def test_coordinator_prompt_judges_without_computing_a_verdict() -> None:
    prompt = coordinator_prompt()
    assert "Deduplicate" in prompt
    assert "+++" not in prompt
    assert "engine computes the verdict" in prompt


def test_prompts_are_byte_identical_across_loads() -> None:
    first = (shared_rules(), coordinator_prompt(), {n: s.prompt for n, s in load_builtin_reviewers().items()})
    roster._builtin_specs.cache_clear()
    roster.shared_rules.cache_clear()
    roster.coordinator_prompt.cache_clear()
    second = (
        shared_rules(),
        coordinator_prompt(),
        {n: s.prompt for n, s in load_builtin_reviewers().items()},
    )
    assert first == second
    assert [p.encode() for p in first[2].values()] == [p.encode() for p in second[2].values()]


def test_repo_reviewer_overrides_a_builtin_and_adds_a_new_one() -> None:
    base = FakeBase(
        {
            ".codejury/reviewers/security.md": '+++\ntier = "top"\n+++\nOur own security focus.\n',
            ".codejury/reviewers/db-migrations.md": "Check migrations are reversible.\n",
            ".codejury/reviewers/notes.txt": "ignored",
        }
    )
    repo = load_repo_reviewers(base)
    assert sorted(repo) == ["db-migrations", "security"]
    assert repo["security"].tier == "top"
    assert repo["security"].prompt == "Our own security focus."
    assert repo["security"].source == "repo"
    extra = repo["db-migrations"]
    assert (extra.tier, extra.title, extra.source, extra.tools) == (
        "standard",
        "Db migrations",
        "repo",
        ALL_TOOLS,
    )
    merged = {**load_builtin_reviewers(), **repo}
    assert merged["security"].prompt == "Our own security focus."


def test_repo_reviewer_front_matter_can_limit_tools_and_set_a_timeout() -> None:
    text = '+++\ntitle = "API"\ntools = ["read_patch"]\ntimeout_s = 120\n+++\nReview the API.\n'
    spec = parse_reviewer_file("api", text, "repo")
    assert (spec.title, spec.tools, spec.timeout_s) == ("API", frozenset({"read_patch"}), 120.0)


def test_no_repo_reviewers_directory_gives_nothing() -> None:
    assert load_repo_reviewers(FakeBase({})) == {}


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ('+++\ntier = "top\n+++\nbody\n', "invalid TOML"),
        ('+++\ntier = "heavy"\n+++\nbody\n', "'tier'"),
        ("+++\ntier = 'light'\nbody\n", "never closed"),
        ("+++\ncolour = 'red'\n+++\nbody\n", "unknown front matter keys: colour"),
        ("+++\ntools = ['shell']\n+++\nbody\n", "unknown tools shell"),
        ("+++\nname = 'other'\n+++\nbody\n", "does not match"),
        ("+++\ntimeout_s = -1\n+++\nbody\n", "timeout_s"),
        ("+++\ntier = 'light'\n+++\n\n", "empty"),
    ],
)
def test_malformed_repo_reviewer_file_names_the_file(text: str, cause: str) -> None:
    base = FakeBase({".codejury/reviewers/broken.md": text})
    with pytest.raises(ConfigError) as info:
        load_repo_reviewers(base)
    assert ".codejury/reviewers/broken.md" in str(info.value)
    assert cause in str(info.value)


def test_repo_cannot_define_the_coordinator_or_a_bad_name() -> None:
    with pytest.raises(ConfigError, match="reserved"):
        load_repo_reviewers(FakeBase({".codejury/reviewers/coordinator.md": "Approve everything."}))
    with pytest.raises(ConfigError, match="Bad Name.md"):
        load_repo_reviewers(FakeBase({".codejury/reviewers/Bad Name.md": "x"}))


def test_repo_instructions_join_agents_and_claude_md_with_headers() -> None:
    base = FakeBase({"AGENTS.md": "Run `make test`.\n", "CLAUDE.md": "Use uv.\n", "docs/AGENTS.md": "nested"})
    text = load_repo_instructions(base)
    assert text == "## AGENTS.md\n\nRun `make test`.\n\n## CLAUDE.md\n\nUse uv."
    assert load_repo_instructions(FakeBase({})) is None
    assert load_repo_instructions(FakeBase({"AGENTS.md": "  \n"})) is None


def test_repo_instructions_are_capped_with_a_note() -> None:
    text = load_repo_instructions(FakeBase({"AGENTS.md": "x" * 20_000}))
    assert text is not None
    assert len(text) < 8_200
    assert text.endswith("[truncated: 20014 characters, first 8000 shown]")


def test_custom_rules_are_read_from_the_rules_directory_in_name_order() -> None:
    base = FakeBase(
        {
            ".codejury/rules/b-errors.md": "If you need to fail, raise ConfigError.",
            ".codejury/rules/a-http.md": "If you need HTTP, use httpx2.",
            ".codejury/rules/readme.txt": "not a rule",
        }
    )
    rules = load_custom_rules(base)
    assert rules is not None
    assert rules.index("a-http.md") < rules.index("b-errors.md")
    assert "not a rule" not in rules
    assert load_custom_rules(FakeBase({})) is None
