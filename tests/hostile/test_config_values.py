"""Hostile config values (issue 11, class 7; the config part of class 11).

Every config value is validated when codejury starts, ``--dry-run`` included: a wrong type, an
unknown key, a non-finite or negative number, a non-http(s) URL, a malformed model string, an
unknown provider kind or reviewer name is exit 2 with one line naming the file (or variable, or
flag), the dotted key and what was expected; never a traceback, never a silently wrong value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from codejury.cli import cli
from tests.engine_helpers import unified_diff
from tests.hostile.conftest import run_codejury

ROOT = Path(__file__).resolve().parents[2]
MODEL = "ollama:qwen2.5-coder:7b"  # a built-in provider that needs no key: the plan is all we ask for


def dry_run(
    tmp_path: Path,
    files: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    *,
    model: bool = True,
) -> tuple[int, str, str]:
    """``codejury review --dry-run`` of a one-file diff, with ``files`` in the repository (base side)."""
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    for name, text in (files or {}).items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff("app.py", "", "x = 1\n") + unified_diff("docs/generated/api.md", "", "x\n"))
    argv = ["review", "--diff", str(diff), "--repo", str(repo), "--dry-run", "--format", "json"]
    argv += ["--model", MODEL] if model else []
    result = CliRunner().invoke(cli, [*argv, *args], env=dict(env or {}), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def assert_config_error(result: tuple[int, str, str], *needles: str) -> None:
    code, out, err = result
    assert code == 2, f"exit {code}; stderr: {err}"
    assert out == "" and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("codejury: "), err
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"


def plan_of(result: tuple[int, str, str]) -> dict[str, object]:
    code, out, err = result
    assert code == 0, err
    plan: dict[str, object] = json.loads(out)
    return plan


# -- 1. booleans are booleans ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line", ['reflection = "false"', 'reflection = "true"', "reflection = 0", 'approve = "no"', "approve = 1"]
)
def test_a_boolean_setting_refuses_strings_and_numbers(tmp_path: Path, line: str) -> None:
    key = line.split()[0]
    assert_config_error(dry_run(tmp_path, {".codejury.toml": line + "\n"}), ".codejury.toml", key, "true or false")


def test_a_real_boolean_is_honoured(tmp_path: Path) -> None:
    plan_of(dry_run(tmp_path, {".codejury.toml": "reflection = false\napprove = true\n"}))


# -- 2. provider base_url: an http(s) URL ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("5", "must be a string"),
        ('"ftp://llm.example.com/v1"', "http:// or https:// URL (got a 'ftp' URL)"),
        ('"https://user:hunter2@[::1"', "http:// or https:// URL (got a 'https' URL)"),
        ('"llm.example.com:8080/v1"', "http:// or https:// URL"),
        ('"http://"', "http:// or https:// URL"),
        ('""', "http:// or https:// URL"),
        ("true", "must be a string"),
    ],
)
def test_provider_base_url_must_be_an_http_url(tmp_path: Path, value: str, expected: str) -> None:
    toml = f"[providers.gw]\nbase_url = {value}\n"
    assert_config_error(
        dry_run(tmp_path, {".codejury.toml": toml}), ".codejury.toml", "providers.gw.base_url", expected
    )


# -- 3. failback: a table of model strings -----------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ("failback = 5\n", "failback must be a table"),
        ('failback = "openai:gpt-5"\n', "failback must be a table"),
        ('[failback]\n"openai:gpt-5" = 5\n', 'failback."openai:gpt-5" must be a string'),
        ('[failback]\n"openai:gpt-5" = "gpt-4"\n', "'provider:model'"),
        ('[failback]\n"gpt-5" = "openai:gpt-4"\n', "failback.gpt-5: the name must be"),
    ],
)
def test_failback_must_map_model_strings_to_model_strings(tmp_path: Path, toml: str, key: str) -> None:
    assert_config_error(dry_run(tmp_path, {".codejury.toml": toml}), ".codejury.toml", key)


# -- 4. prices: finite, not negative -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("input = nan\noutput = 1.0", 'prices."ollama:q".input must be a finite number (got nan)'),
        ("input = 1.0\noutput = inf", 'prices."ollama:q".output must be a finite number (got inf)'),
        ("input = -0.5\noutput = 1.0", 'prices."ollama:q".input must be at least 0'),
        ('input = "1.0"\noutput = 1.0', 'prices."ollama:q".input must be a number'),
        ("input = 1.0", 'prices."ollama:q".output is required'),
    ],
)
def test_prices_must_be_finite_and_not_negative(tmp_path: Path, entry: str, expected: str) -> None:
    toml = f'[prices."ollama:q"]\n{entry}\n'
    assert_config_error(dry_run(tmp_path, {".codejury.toml": toml}), ".codejury.toml", expected)


# -- 5. timeouts and limits: positive, finite, the right kind of number ------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("reviewer_timeout_s = 0", "greater than 0"),
        ("overall_timeout_s = -60", "greater than 0"),
        ("stall_timeout_s = nan", "finite number"),
        ("heartbeat_s = inf", "finite number"),
        ('breaker_cooldown_s = "120"', "a number"),
        ("min_retry_window_s = -1", "at least 0"),
        ("max_tool_calls = 0", "greater than 0"),
        ("max_requests = -1", "greater than 0"),
        ("max_input_tokens = 1.5", "whole number"),
        ("breaker_failures = true", "whole number"),
    ],
)
def test_timeouts_and_limits_must_be_positive_finite_numbers(tmp_path: Path, line: str, expected: str) -> None:
    key = line.split()[0]
    assert_config_error(dry_run(tmp_path, {".codejury.toml": line + "\n"}), f".codejury.toml: {key} must be", expected)


def test_zero_retry_window_and_whole_seconds_are_accepted(tmp_path: Path) -> None:
    plan_of(dry_run(tmp_path, {".codejury.toml": "min_retry_window_s = 0\nreviewer_timeout_s = 30\n"}))


# -- 6. unknown keys, at any depth, with file and dotted path ------------------------------------------


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ("reflexion = true\n", "unknown setting(s): reflexion (did you mean 'reflection'?)"),
        ('[providers.gw]\nbase_url = "http://h/v1"\nbse_url = "x"\n', "unknown setting(s): providers.gw.bse_url"),
        ('[models]\nhuge = "openai:x"\n', "unknown setting(s): models.huge"),
        ('[reviewers.security]\nmodle = "openai:x"\n', "reviewers.security.modle (did you mean 'model'?)"),
        ('[prices."openai:x"]\ninput = 1.0\noutput = 1.0\ncached = 0.1\n', 'prices."openai:x".cached'),
    ],
)
def test_unknown_keys_are_named_with_their_file_and_path(tmp_path: Path, toml: str, expected: str) -> None:
    assert_config_error(dry_run(tmp_path, {".codejury.toml": toml}), ".codejury.toml: ", expected)


# -- 7. remote_config: a string ------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["5", "true", '["https://a"]', '{url = "https://a"}'])
def test_remote_config_must_be_a_string(tmp_path: Path, value: str) -> None:
    toml = f"remote_config = {value}\n"
    assert_config_error(dry_run(tmp_path, {".codejury.toml": toml}), ".codejury.toml: remote_config must be a string")


# -- 8. provider kinds are known, and a gateway has somewhere to go ------------------------------------


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('kind = "grpc"\nbase_url = "http://h/v1"', "providers.gw.kind must be one of openai, anthropic"),
        ('kind = "OpenAI"\nbase_url = "http://h/v1"', "(got 'OpenAI')"),
        ('kind = ""\nbase_url = "http://h/v1"', "providers.gw.kind must be a non-empty string"),
        ("kind = 5", "providers.gw.kind must be a string"),
        ('api_key_env = "GW_KEY"', "providers.gw.base_url is required for an openai-compatible provider"),
        ('base_url = "http://h/v1"\napi_key_env = "GW KEY"', "providers.gw.api_key_env must be the name of"),
        ('base_url = "http://h/v1"\napi_key = "sk-live-1234"', "providers.gw.api_key: keys never go in config"),
    ],
)
def test_providers_are_checked_before_any_model_runs(tmp_path: Path, table: str, expected: str) -> None:
    result = dry_run(tmp_path, {".codejury.toml": f"[providers.gw]\n{table}\n"})
    assert_config_error(result, ".codejury.toml: ", expected)
    assert "sk-live-1234" not in result[2]


# -- 9. the README's [tool.codejury] block works in a --config file ----------------------------------


def readme_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"```toml\n(\[tool\.codejury\]\n.*?)```", readme, re.DOTALL)
    assert found, "the README's configuration block"
    return found.group(1)


def test_the_readme_block_copied_into_a_config_file_is_read(tmp_path: Path) -> None:
    config = tmp_path / "codejury.toml"
    config.write_text(readme_block(), encoding="utf-8")
    plan = plan_of(dry_run(tmp_path, args=["--config", str(config)]))
    skipped = [s["path"] for s in plan["skipped_files"]]  # type: ignore[attr-defined]
    assert "docs/generated/api.md" in skipped  # the block's exclude took effect


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('fail_on = "never"\n[tool.codejury]\nreflection = true\n', "setting(s) outside [tool.codejury]: fail_on"),
        ('[tool.codejury]\nreflection = "yes"\n', "tool.codejury.reflection must be true or false"),
        ("[tool.codejury]\nfail_on = 3\n", "tool.codejury.fail_on must be a string"),
    ],
)
def test_a_wrapped_config_file_is_validated_like_any_other(tmp_path: Path, text: str, expected: str) -> None:
    config = tmp_path / "ci.toml"
    config.write_text(text, encoding="utf-8")
    assert_config_error(dry_run(tmp_path, args=["--config", str(config)]), "ci.toml: ", expected)


# -- 10. a malformed base-side pyproject.toml ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tool = 5\n", "pyproject.toml: tool must be a table (got 5)"),
        ("[tool]\ncodejury = 5\n", "pyproject.toml: tool.codejury must be a table (got 5)"),
        ('[tool]\ncodejury = "on"\n', "pyproject.toml: tool.codejury must be a table"),
        ("[tool.codejury\n", "pyproject.toml: invalid TOML"),
        ("[tool.codejury]\nmax_requests = 0\n", "pyproject.toml: tool.codejury.max_requests must be greater than 0"),
    ],
)
def test_a_malformed_pyproject_is_one_line_naming_it(tmp_path: Path, text: str, expected: str) -> None:
    assert_config_error(dry_run(tmp_path, {"pyproject.toml": text}), expected)


def test_a_pyproject_without_codejury_settings_is_fine(tmp_path: Path) -> None:
    plan_of(dry_run(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n[tool.ruff]\nline-length = 100\n'}))


# -- 11. --model, --model-for, --exclude ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--model", ""], "command line: --model must be a 'provider:model' string (got the string '')"),
        (["--model", "gpt-5"], "command line: --model must be a 'provider:model' string"),
        (["--model", ":gpt-5"], "--model must be a 'provider:model' string"),
        (["--model-for", "security="], "--model-for expects NAME=VALUE"),
        (["--model-for", "=openai:gpt-5"], "--model-for expects NAME=VALUE"),
        (["--model-for", "security"], "--model-for expects NAME=VALUE"),
        (["--model-for", "security=gpt-5"], "command line: --model-for security must be a 'provider:model' string"),
        (["--model-for", "securty=openai:gpt-5"], "command line: --model-for securty: no reviewer named 'securty'"),
        (["--model-for", "nobody=openai:gpt-5"], "reviewers: "),
        (["--exclude", ""], "command line: --exclude must be a non-empty string (got the string '')"),
    ],
)
def test_flag_values_are_validated_before_any_model_call(tmp_path: Path, args: list[str], expected: str) -> None:
    assert_config_error(dry_run(tmp_path, args=args, model="--model" not in args), expected)


def test_a_plugin_reviewer_may_be_given_a_model(tmp_path: Path) -> None:
    args = ["--plugin", "tests.plugin_example", "--model-for", "licensing=ollama:qwen2.5-coder:7b"]
    plan_of(dry_run(tmp_path, args=args))
    assert_config_error(dry_run(tmp_path, args=args[2:]), "no reviewer named 'licensing'", "plugin")


def test_an_unknown_reviewer_in_a_config_file_is_named_with_its_file(tmp_path: Path) -> None:
    toml = '[reviewers.securty]\nmodel = "openai:gpt-5"\n'
    assert_config_error(dry_run(tmp_path, {".codejury.toml": toml}), ".codejury.toml: reviewers.securty.model")


# -- 12. environment variables ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"CODEJURY_REFLECTION": "maybe"}, "environment: CODEJURY_REFLECTION must be one of 1, true"),
        ({"CODEJURY_FAIL_ON": "sometimes"}, "environment: CODEJURY_FAIL_ON must be one of"),
        ({"CODEJURY_MODEL": "gpt-5"}, "environment: CODEJURY_MODEL must be a 'provider:model' string"),
        ({"CODEJURY_MODEL_TOP": "anthropic"}, "environment: CODEJURY_MODEL_TOP must be a 'provider:model'"),
    ],
)
def test_environment_values_are_validated_and_named(tmp_path: Path, env: dict[str, str], expected: str) -> None:
    assert_config_error(dry_run(tmp_path, env=env, model=False), expected)


def test_reflection_variable_spellings(tmp_path: Path) -> None:
    from codejury.config import Settings, apply_environment

    for value, expected in (("1", True), ("YES", True), ("on", True), ("0", False), ("false", False), ("", False)):
        assert apply_environment(Settings(), {"CODEJURY_REFLECTION": value}).reflection is expected


# -- as a user runs it: a subprocess, exit 2, one line, no traceback -----------------------------------


def write_change(tmp_path: Path, files: Mapping[str, str]) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name, text in files.items():
        (repo / name).write_text(text, encoding="utf-8")
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff("app.py", "", "x = 1\n"), encoding="utf-8")
    return repo, diff


@pytest.mark.parametrize(
    ("files", "extra", "needles"),
    [
        ({".codejury.toml": 'reflection = "false"\n'}, [], (".codejury.toml", "reflection", "true or false")),
        ({"pyproject.toml": "tool = 5\n"}, [], ("pyproject.toml", "tool must be a table")),
        ({}, ["--model", ""], ("--model", "provider:model")),
        ({}, ["--model", MODEL, "--model-for", "nobody=openai:x"], ("--model-for nobody", "no reviewer named")),
    ],
)
def test_bad_config_exits_2_with_one_line_in_a_real_process(
    tmp_path: Path, files: dict[str, str], extra: list[str], needles: tuple[str, ...]
) -> None:
    repo, diff = write_change(tmp_path, files)
    model = [] if "--model" in extra else ["--model", MODEL]
    run = run_codejury(["review", "--diff", str(diff), "--repo", str(repo), "--dry-run", *model, *extra], cwd=tmp_path)
    run.assert_one_line_error(2, *needles)
    assert len([line for line in run.stderr.splitlines() if line.strip()]) == 1, run.stderr
    run.assert_bounded(wall_s=30)
