"""``issue_tracker_url`` is a URL template kept as the user wrote it: http(s), a host, and ``{key}`` exactly once
after the host; anything else is one line naming the key, and exit 2, before any request."""

from __future__ import annotations

from pathlib import Path

import pytest

from codejury.config import Settings, merge_file_table
from codejury.config_schema import SettingKeys
from tests.hostile.test_config_values import assert_config_error, dry_run, plan_of

ROOT = Path(__file__).resolve().parents[1]


def place(tmp_path: Path, name: str) -> Path:
    """A directory of its own for each run (the config file of one must not be read by the other)."""
    (tmp_path / name).mkdir()
    return tmp_path / name


TEMPLATE = "https://jira.example.com/rest/api/2/issue/{key}?fields=summary,description"


def test_the_template_is_kept_as_written_from_a_file_and_from_the_environment() -> None:
    assert merge_file_table(Settings(), {"issue_tracker_url": f" {TEMPLATE} "}, "x").issue_tracker_url == TEMPLATE
    from_env = SettingKeys.model_validate({"issue_tracker_url": TEMPLATE})
    assert from_env.issue_tracker_url == TEMPLATE and "%7B" not in TEMPLATE


def test_a_review_with_the_template_set_plans(tmp_path: Path) -> None:
    plan_of(dry_run(place(tmp_path, "file"), {".codejury.toml": f'issue_tracker_url = "{TEMPLATE}"\n'}))
    plan_of(dry_run(place(tmp_path, "env"), env={"CODEJURY_ISSUE_TRACKER_URL": TEMPLATE}))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://jira.example.com/rest/api/2/issue/", "{key} exactly once"),
        ("https://jira.example.com/rest/api/2/issue/%7Bkey%7D", "{key} exactly once"),
        ("https://jira.example.com/{key}/{key}", "{key} exactly once"),
        ("https://{key}.example.com/issue", "{key} in its path or query, not in its host"),
        ("ftp://jira.example.com/{key}", "an http:// or https:// URL template"),
        ("jira.example.com/{key}", "an http:// or https:// URL template"),
    ],
)
def test_a_template_without_one_key_after_an_http_host_is_one_line(tmp_path: Path, value: str, expected: str) -> None:
    from_file = dry_run(place(tmp_path, "file"), {".codejury.toml": f'issue_tracker_url = "{value}"\n'})
    assert_config_error(from_file, ".codejury.toml: issue_tracker_url must be ", expected)
    from_env = dry_run(place(tmp_path, "env"), env={"CODEJURY_ISSUE_TRACKER_URL": value})
    assert_config_error(from_env, "CODEJURY_ISSUE_TRACKER_URL must be ", expected)


def test_the_settings_reference_shows_the_template_with_its_key() -> None:
    row = next(
        line
        for line in (ROOT / "docs" / "settings.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| `issue_tracker_url` |")
    )
    assert "http(s) URL template with {key}" in row and "https://jira.example.com/rest/api/2/issue/{key}" in row
