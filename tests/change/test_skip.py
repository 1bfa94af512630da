"""Skip rules (``[skip]``): which rule skips a change, in words, and what none of them skips."""

from __future__ import annotations

import pytest

from codejury.change.skip import skipped_by
from codejury.change.types import ChangeMeta, FileChange
from codejury.config import SkipRules
from codejury.config_schema import Source, validate_table
from codejury.errors import ConfigError

RULES = SkipRules(
    labels=["skip-review"],
    authors=["dependabot[bot]", "renovate*"],
    titles=[r"chore\(deps\)"],
    target_branches=["release/*"],
    paths=["docs/**", "*.md"],
)


def meta(**kw: object) -> ChangeMeta:
    fields: dict[str, object] = {"title": "Add a report", "author": "alice", "base_ref": "main"}
    fields.update(kw)
    return ChangeMeta(**fields)  # type: ignore[arg-type]


def files(*paths: str, moved_from: str | None = None) -> list[FileChange]:
    return [FileChange(path=p, old_path=moved_from, status="renamed" if moved_from else "modified") for p in paths]


@pytest.mark.parametrize(
    ("change", "changed", "rule"),
    [
        (meta(labels=("bug", "Skip-Review")), files("app.py"), "skipped by [skip] labels: the label skip-review"),
        (meta(author="dependabot[bot]"), files("app.py"), "skipped by [skip] authors: dependabot[bot] matches"),
        (meta(author="renovate-bot"), files("app.py"), "skipped by [skip] authors: renovate-bot matches renovate*"),
        (
            meta(title="chore(deps): bump x"),
            files("app.py"),
            r"skipped by [skip] titles: the title matches chore\(deps\)",
        ),
        (meta(base_ref="release/2.1"), files("app.py"), "skipped by [skip] target_branches: release/2.1 matches"),
        (meta(), files("docs/a/b.txt", "README.md"), "skipped by [skip] paths: every changed file matches"),
    ],
)
def test_each_rule_skips_and_says_which(change: ChangeMeta, changed: list[FileChange], rule: str) -> None:
    reason = skipped_by(RULES, change, changed)
    assert reason is not None and reason.startswith(rule)


@pytest.mark.parametrize(
    ("change", "changed"),
    [
        (meta(), files("app.py")),
        (meta(title="Fix chore(deps) handling"), files("app.py")),  # searched from the title's start
        (meta(), files("README.md", "app.py")),  # one file outside the paths: reviewed
        (meta(), files("app.py", moved_from="docs/app.py")),  # moved out of docs: the new place is reviewed
        (meta(labels=("skip-review-later",)), files("app.py")),
    ],
)
def test_a_change_no_rule_matches_is_reviewed(change: ChangeMeta, changed: list[FileChange]) -> None:
    assert skipped_by(RULES, change, changed) is None


def test_no_rules_skip_nothing() -> None:
    assert skipped_by(SkipRules(), meta(labels=("skip-review",)), files("README.md")) is None


def test_a_title_rule_that_is_not_a_regular_expression_is_one_line_error() -> None:
    with pytest.raises(ConfigError, match=r"skip\.titles.*regular expression") as info:
        validate_table({"skip": {"titles": ["chore(deps"]}}, Source(".codejury.toml"))
    assert "\n" not in str(info.value)
