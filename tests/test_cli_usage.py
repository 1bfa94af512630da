"""A usage error (an unknown option or command, a value a flag does not take, a missing flag) is one line naming
the command and the cause, and exit 2, like codejury's own errors; --help and --version are unchanged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from codejury.cli import cli


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["review", "--bogus"],
            "codejury: review: No such option '--bogus'. Did you mean '--base'? (codejury review --help)",
        ),
        (["nosuch"], "codejury: No such command 'nosuch'. (codejury --help)"),
        (["--nope"], "codejury: No such option '--nope'. (codejury --help)"),
        (["stats", "--since"], "codejury: stats: Option '--since' requires an argument. (codejury stats --help)"),
        (["dashboard"], "codejury: dashboard: Missing option '-o' / '--output'. (codejury dashboard --help)"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(args: list[str], line: str) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [line] and result.stdout == ""


def test_a_bad_choice_names_the_flag_and_the_choices_on_one_line() -> None:
    result = CliRunner().invoke(cli, ["review", "--fail-on", "nope"])
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("codejury: review: Invalid value for '--fail-on': 'nope' is not one of 'suggestion'")
    assert line.endswith("(codejury review --help)")


def test_a_secret_given_as_a_bad_value_is_scrubbed() -> None:
    key = "sk-live-0123456789abcdef0123"
    result = CliRunner(env={"OPENAI_API_KEY": key}).invoke(cli, ["review", "--fail-on", key])
    assert result.exit_code == 2 and key not in result.stderr and len(result.stderr.splitlines()) == 1


def test_the_installed_command_answers_the_same_and_help_still_works() -> None:
    command = [str(Path(sys.executable).with_name("codejury"))]  # the console script pip installed
    done = subprocess.run([*command, "review", "--bogus"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "codejury: review: No such option '--bogus'. Did you mean '--base'? (codejury review --help)"
    ]
    shown = subprocess.run([*command, "review", "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout.startswith("Usage: codejury review [OPTIONS]")
