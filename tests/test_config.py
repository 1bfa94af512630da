"""Layered settings: files (base side, --config), environment and flags, validated by one schema."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codejury import config_docs
from codejury.change.types import ChangeSet
from codejury.config import ENV_ALIASES, ENV_MODEL, Settings, apply_environment, merge_file_table, read_config_text
from codejury.config_schema import FileTable
from codejury.contexts import Contributions
from codejury.errors import ConfigError
from codejury.flags import ReviewFlags
from codejury.plugins import assemble
from codejury.reviewers.roster import load_builtin_reviewers
from codejury.settings_loader import load_review_settings, load_settings, parse_assignments
from tests.engine_helpers import DictBase

ROOT = Path(__file__).resolve().parents[1]


def change_with(base_files: dict[str, str]) -> ChangeSet:
    return ChangeSet(files=(), base=DictBase(base_files))


def test_layers_apply_in_order_and_only_the_keys_each_sets() -> None:
    change = change_with(
        {
            "pyproject.toml": '[tool.codejury]\nfail_on = "warning"\nmax_requests = 7\n',
            ".codejury.toml": 'fail_on = "critical"\nreflection = true\n',
        }
    )
    settings, _ = load_settings(
        change,
        {"CODEJURY_FAIL_ON": "suggestion"},
        cli_table={"exclude": ["docs/**"]},
        config_file_text=("ci.toml", "heartbeat_s = 5\nreflection = false\n"),
    )
    assert settings.fail_on == "suggestion"  # environment over both files
    assert settings.max_requests == 7  # pyproject, untouched by later layers
    assert settings.reflection is False  # --config over .codejury.toml
    assert settings.heartbeat_s == 5.0 and settings.exclude == ("docs/**",)


def test_tables_merge_per_entry_across_layers() -> None:
    base = merge_file_table(
        Settings(),
        {"providers": {"gw": {"base_url": "https://gw.example/v1"}}, "failback": {"gw:a": "gw:b"}},
        ".codejury.toml",
    )
    merged = merge_file_table(base, {"failback": {"gw:b": ""}, "reviewers": {"docs": {"enabled": False}}}, "ci.toml")
    assert merged.providers["gw"].base_url == "https://gw.example/v1"
    assert merged.failback == {"gw:a": "gw:b", "gw:b": None}  # "" ends a chain
    assert merged.disabled_reviewers == frozenset({"docs"})
    again = merge_file_table(merged, {"reviewers": {"docs": {"enabled": True}}}, "command line")
    assert again.disabled_reviewers == frozenset()


def test_provider_names_are_matched_like_model_strings() -> None:
    settings = merge_file_table(Settings(), {"providers": {"TeamGW": {"base_url": "http://10.0.0.1/v1"}}}, "x.toml")
    assert list(settings.providers) == ["teamgw"]  # "TeamGW:model" parses to provider "teamgw"


def test_environment_sets_models_and_the_flag_layer_keeps_that_source() -> None:
    settings, notice = load_settings(
        change_with({}), {"CODEJURY_MODEL": "openai:gpt-5-mini"}, cli_table={"fail_on": "never"}
    )
    assert notice is None and set(settings.models.values()) == {"openai:gpt-5-mini"}
    assert settings.model_source == "environment" and settings.fail_on == "never"


def test_model_flags_override_every_tier_and_one_reviewer() -> None:
    settings, _ = load_settings(
        change_with({}), {}, cli_model="openai:gpt-5-mini", cli_reviewer_models={"security": "anthropic:claude-x"}
    )
    assert set(settings.models.values()) == {"openai:gpt-5-mini"}
    assert settings.reviewer_models == {"security": "anthropic:claude-x"}
    assert settings.model_source == "command line"


@pytest.mark.parametrize(
    ("text", "table"),
    [
        ('[tool.codejury]\nfail_on = "never"\n[tool.ruff]\nline-length = 1\n', {"fail_on": "never"}),
        ('[project]\nname = "x"\n', {}),
        ("", {}),
    ],
)
def test_pyproject_contributes_its_tool_codejury_table_only(text: str, table: dict[str, str]) -> None:
    assert read_config_text("pyproject.toml", text) == (table, "tool.codejury.")


def test_a_config_file_may_wrap_its_keys_in_tool_codejury() -> None:
    wrapped = '[tool.codejury]\nfail_on = "never"\n[tool.codejury.models]\ntop = "openai:gpt-5.1"\n'
    assert read_config_text("ci/codejury.toml", wrapped) == (
        {"fail_on": "never", "models": {"top": "openai:gpt-5.1"}},
        "tool.codejury.",
    )
    assert read_config_text("ci/codejury.toml", 'fail_on = "never"\n') == ({"fail_on": "never"}, "")


def test_assignments_need_both_sides() -> None:
    assert parse_assignments(("security = openai:x", "coordinator=a:b"), "--model-for") == {
        "security": "openai:x",
        "coordinator": "a:b",
    }
    for bad in ("security", "=openai:x", " =openai:x", "security=", "security= "):
        with pytest.raises(ConfigError, match="--model-for expects NAME=VALUE"):
            parse_assignments((bad,), "--model-for")


def _assemble(settings: Settings) -> None:
    from codejury.models.providers import BUILTIN_PROVIDERS

    into = Contributions(reviewers=dict(load_builtin_reviewers()), providers=dict(BUILTIN_PROVIDERS))
    assemble(settings, into)


def test_a_built_in_provider_can_be_overridden_with_only_some_keys() -> None:
    settings = merge_file_table(Settings(), {"providers": {"ollama": {"api_key_env": "OLLAMA_KEY"}}}, "x.toml")
    _assemble(settings)  # inherits ollama's base_url: no error


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        (
            {"providers": {"gw": {"kind": "grpc", "base_url": "http://h/v1"}}},
            "x.toml: providers.gw.kind must be one of",
        ),
        ({"providers": {"gw": {}}}, "x.toml: providers.gw.base_url is required"),
        ({"reviewers": {"securty": {"model": "openai:x"}}}, "x.toml: reviewers.securty.model: no reviewer named"),
        ({"reviewers": {"securty": {"enabled": False}}}, "x.toml: reviewers.securty: no reviewer named"),
    ],
)
def test_provider_kinds_and_reviewer_names_are_checked_when_the_roster_is_assembled(
    table: dict[str, object], needle: str
) -> None:
    settings = merge_file_table(Settings(), table, "x.toml")
    with pytest.raises(ConfigError) as caught:
        _assemble(settings)
    assert str(caught.value).startswith(needle)


def test_coordinator_and_real_reviewers_may_be_configured() -> None:
    table = {"reviewers": {"coordinator": {"model": "openai:a"}, "security": {"model": "openai:b", "enabled": False}}}
    _assemble(merge_file_table(Settings(), table, "x.toml"))


# -- the settings reference -------------------------------------------------------------------------


def test_the_committed_settings_reference_is_the_generated_one() -> None:
    committed = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert committed == config_docs.render_settings_reference(), "run: python -m codejury.config_docs"


def test_the_reference_names_every_key_variable_and_flag() -> None:
    page = config_docs.render_settings_reference()
    for key in FileTable.model_fields:
        assert f"`{key}`" in page
    for key in ("models.top", "base_url", "api_key_env", "kind", "enabled", "cache_read", "--repo", "--model-for"):
        assert f"`{key}`" in page
    read_by_code = set()
    for path in (ROOT / "src" / "codejury").rglob("*.py"):
        read_by_code |= set(re.findall(r"\bCODEJURY_[A-Z][A-Z_]*[A-Z]\b", path.read_text(encoding="utf-8")))
    assert {ENV_MODEL, *ENV_ALIASES} <= read_by_code
    missing = sorted(v for v in read_by_code if f"`{v}`" not in page)
    assert not missing, f"environment variables read by codejury but not in docs/settings.md: {missing}"


def test_the_readme_links_the_settings_reference() -> None:
    assert "docs/settings.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_config_docs_check_fails_on_a_stale_page(tmp_path: Path) -> None:
    page = tmp_path / "settings.md"
    page.write_text("# stale\n", encoding="utf-8")
    assert config_docs.main([str(page), "--check"]) == 1
    assert config_docs.main([str(page)]) == 0
    assert config_docs.main([str(page), "--check"]) == 0


def test_every_scalar_key_reaches_the_settings() -> None:
    from codejury.config import SCALAR_KEYS

    table: dict[str, object] = {}
    for key in SCALAR_KEYS:
        default = FileTable.model_fields[key].default
        other = {"fail_on": "never", "verify": "all", "votes_needed": 1, "weak_panel": "panel", "max_cost_usd": 2.5}
        other |= {
            "describe_in": "description",
            "issue_tracker_url": "https://jira.example.com/rest/api/2/issue/{key}",
            "issue_tracker_token_env": "JIRA_TOKEN",
            "remote_config": "https://routing.example/doc.json",
            "instructions_url": "https://example.com/instructions.md",
        }
        table[key] = (not default) if isinstance(default, bool) else other[key] if key in other else default + 1
    settings = merge_file_table(Settings(), table, "x.toml")
    assert {key: getattr(settings, key) for key in SCALAR_KEYS} == table


# -- the environment: every key, nested ones with __ ------------------------------------------------


def test_every_key_has_a_variable_nested_ones_joined_with_double_underscores() -> None:
    env = {
        "CODEJURY_LIMITS__SPEND_PER_DAY_USD": "50",
        "CODEJURY_MAX_COST_USD": "0.5",
        "CODEJURY_EXCLUDE": "docs/**, *.lock",
        "CODEJURY_WEAK_MODELS": '["ollama:*"]',
        "CODEJURY_REVIEWERS__DOCUMENTATION__ENABLED": "false",
        "CODEJURY_PROVIDERS__GW": '{"base_url": "https://gw.example/v1"}',
        "CODEJURY_MAX_TOOL_CALLS": "7",
        "CODEJURY_APPROVE": "off",
        "CODEJURY_GITLAB_TOKEN": "glpat-not-a-setting",
        "CODEJURY_VOTES": "",  # empty: unset
    }
    settings = apply_environment(Settings(), env)
    assert settings.limits.spend_per_day_usd == 50.0 and settings.max_cost_usd == 0.5
    assert settings.exclude == ("docs/**", "*.lock") and settings.weak_models == ("ollama:*",)
    assert settings.disabled_reviewers == frozenset({"documentation"})
    assert settings.providers["gw"].base_url == "https://gw.example/v1"
    assert settings.max_tool_calls == 7 and settings.approve is False and settings.votes == 1
    assert settings.origin("limits.spend_per_day_usd") == "environment: CODEJURY_LIMITS__SPEND_PER_DAY_USD"


def test_the_longer_variable_wins_over_a_kept_short_name_and_codejury_model_fills_the_rest() -> None:
    env = {
        "CODEJURY_MODEL": "openai:every",
        "CODEJURY_MODEL_TOP": "openai:short",
        "CODEJURY_MODELS__TOP": "openai:long",
        "CODEJURY_MODEL_LIGHT": "openai:light",
        "CODEJURY_RECORD_URL": "none",
    }
    settings = apply_environment(Settings(), env)
    assert dict(settings.models) == {"top": "openai:long", "standard": "openai:every", "light": "openai:light"}
    assert settings.record_url == "none" and settings.model_source == "environment"


def test_layers_run_file_then_config_then_environment_then_flags() -> None:
    change = change_with({".codejury.toml": "max_cost_usd = 1.0\n[limits]\nreviews_per_day = 5\n"})
    env = {"CODEJURY_MAX_COST_USD": "2", "CODEJURY_LIMITS__REVIEWS_PER_DAY": "9"}
    from_env, _ = load_settings(change, env, config_file_text=("ci.toml", "max_cost_usd = 1.5\n"))
    assert from_env.max_cost_usd == 2.0 and from_env.limits.reviews_per_day == 9
    from_flag, _ = load_review_settings(change, env, ReviewFlags(max_cost=3.0, exclude=("gen/**",)))
    assert from_flag.max_cost_usd == 3.0 and from_flag.exclude == ("gen/**",)
    assert from_flag.origin("max_cost_usd") == "command line: --max-cost"


@pytest.mark.parametrize(
    ("env", "line"),
    [
        (
            {"CODEJURY_LIMITS__SPEND_PER_DAYS_USD": "1"},
            "environment: unknown setting(s): CODEJURY_LIMITS__SPEND_PER_DAYS_USD (did you mean 'spend_per_day_usd'?)",
        ),
        (
            {"CODEJURY_LIMITS__SPEND_PER_DAY_USD": "-1"},
            "environment: CODEJURY_LIMITS__SPEND_PER_DAY_USD must be greater than 0 (got the string '-1')",
        ),
        (
            {"CODEJURY_MAX_COST_USD": "lots"},
            "environment: CODEJURY_MAX_COST_USD must be a number (got the string 'lots')",
        ),
        ({"CODEJURY_MAX_TOOL_CALLS": "2.5"}, "environment: CODEJURY_MAX_TOOL_CALLS must be a whole number"),
        (
            {"CODEJURY_VERIFY": "some"},
            "environment: CODEJURY_VERIFY must be 'weak', 'all' or 'off' (got the string 'some')",
        ),
        ({"CODEJURY_EXCLUDE": "[docs"}, "environment: CODEJURY_EXCLUDE is not valid JSON"),
        ({"CODEJURY_LIMITS": "50"}, "environment: CODEJURY_LIMITS must be a JSON table, or set one key per variable"),
    ],
)
def test_a_bad_variable_is_one_line_naming_it(env: dict[str, str], line: str) -> None:
    with pytest.raises(ConfigError) as caught:
        apply_environment(Settings(), env)
    assert str(caught.value).startswith(line)
    assert "\n" not in str(caught.value)


def test_stats_search_and_learn_read_the_same_layers_as_a_review(tmp_path: Path) -> None:
    from codejury.settings_loader import local_settings

    (tmp_path / ".codejury.toml").write_text('fail_on = "critical"\n[record]\nurl = "none"\n', encoding="utf-8")
    extra = tmp_path / "ci.toml"
    extra.write_text("max_cost_usd = 1.0\n", encoding="utf-8")
    env = {"CODEJURY_RECORD__URL": "sqlite:///reviews.db", "CODEJURY_FAIL_ON": ""}
    settings = local_settings(tmp_path, env, extra)
    assert settings.fail_on == "critical" and settings.max_cost_usd == 1.0
    assert settings.record_url == "sqlite:///reviews.db"  # the environment over the repository's file
    assert dict(settings.models) == {}  # no default model chosen: that is a review's business


def test_a_table_a_later_layer_sets_in_part_keeps_the_earlier_layers_other_keys() -> None:
    change = change_with({".codejury.toml": "[limits]\nreviews_per_day = 5\n[retrieval]\nrerank_candidates = 12\n"})
    env = {"CODEJURY_LIMITS__SPEND_PER_DAY_USD": "9.5", "CODEJURY_RETRIEVAL__RERANK_MODEL": "reviewer"}
    settings, _ = load_settings(change, env, config_file_text=("ci.toml", "[limits]\nreviews_per_day = 7\n"))
    assert (settings.limits.reviews_per_day, settings.limits.spend_per_day_usd) == (7, 9.5)
    assert (settings.retrieval.rerank_candidates, settings.retrieval.rerank_model) == (12, "reviewer")
    assert settings.limits.capped and not Settings().limits.capped
