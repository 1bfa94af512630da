"""The analyzers' rules as the CI formats describe them: each tool's documentation page, ruff's rule names,
which rules are security rules."""

from __future__ import annotations

import json
import subprocess

import pytest

from codejury.analyzers.ruff import SELECT, find_ruff
from codejury.render.tool_rules import RUFF_RULE_NAMES, help_uri, is_security_rule, rule_name


@pytest.mark.parametrize(
    ("tool", "rule", "uri"),
    [
        ("ruff", "S608", "https://docs.astral.sh/ruff/rules/hardcoded-sql-expression/"),
        ("ruff", "B006", "https://docs.astral.sh/ruff/rules/mutable-argument-default/"),
        ("ruff", "X999", None),  # a code we do not know: no page rather than a wrong one
        ("shellcheck", "SC2086", "https://www.shellcheck.net/wiki/SC2086"),
        ("hadolint", "DL3008", "https://github.com/hadolint/hadolint/wiki/DL3008"),
        ("hadolint", "SC2046", "https://www.shellcheck.net/wiki/SC2046"),  # hadolint runs shellcheck on RUN lines
        ("mypy", "attr-defined", "https://mypy.rtfd.io/en/stable/_refs.html#code-attr-defined"),
        ("zizmor", "template-injection", "https://docs.zizmor.sh/audits/#template-injection"),
        ("oxlint", "no-debugger", "https://oxc.rs/docs/guide/usage/linter/rules/eslint/no-debugger.html"),
        (
            "oxlint",
            "typescript/no-explicit-any",
            "https://oxc.rs/docs/guide/usage/linter/rules/typescript/no-explicit-any.html",
        ),
        (
            "oxlint",
            "eslint-plugin-jsx-a11y/alt-text",
            "https://oxc.rs/docs/guide/usage/linter/rules/jsx_a11y/alt-text.html",
        ),
        ("cppcheck", "memleak", None),
        ("secrets", "aws-access-key", None),
        ("zizmor", "../../evil", None),  # a rule id that is not a plain name never becomes a link
    ],
)
def test_help_uri_is_the_tools_own_page_for_the_rule(tool: str, rule: str, uri: str | None) -> None:
    assert help_uri(tool, rule) == uri


def test_security_rules_are_the_ones_the_security_reviewer_owns() -> None:
    assert is_security_rule("ruff", "S608") and is_security_rule("secrets", "aws-access-key")
    assert is_security_rule("zizmor", "artipacked") and is_security_rule("codeql", "py/sql-injection")
    assert not is_security_rule("ruff", "S113")  # a request without a timeout: performance
    assert not is_security_rule("ruff", "B006") and not is_security_rule("shellcheck", "SC2086")
    assert rule_name("ruff", "S608") == "hardcoded-sql-expression" and rule_name("mypy", "attr-defined") is None


def test_ruffs_rule_names_are_the_installed_ruffs_for_every_rule_the_analyzer_selects() -> None:
    ruff = find_ruff()
    assert ruff is not None, "ruff ships with codejury"
    listed = subprocess.run([str(ruff), "rule", "--all", "--output-format", "json"], capture_output=True, check=True)
    rules = [r for r in json.loads(listed.stdout) if r.get("code") and "Removed" not in json.dumps(r.get("status"))]
    selected = {r["code"]: r["name"] for r in rules if r["code"].startswith(SELECT) and r["code"] in RUFF_RULE_NAMES}
    assert {code: RUFF_RULE_NAMES[code] for code in selected} == selected
    # every selected rule of the linters the analyzer runs has its page (S, B and ASYNC whole; the named codes)
    linters = ("flake8-bandit", "flake8-bugbear", "flake8-async", "Pyflakes", "Pylint", "Ruff-specific rules")
    wanted = {r["code"] for r in rules if r["code"].startswith(SELECT) and r["linter"] in linters}
    assert wanted - set(RUFF_RULE_NAMES) == set()
