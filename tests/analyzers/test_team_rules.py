"""Team rules that forbid code by name: a hit on the added line that uses it, silence otherwise."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from codejury.analyzers import AnalyzerSkipped, domain_for
from codejury.analyzers.team_rules import TeamRulesAnalyzer, parse_sentence
from codejury.change.types import PrefetchedBase
from codejury.evidence import Evidence
from tests.analyzers.helpers import hits, make_change

OUTBOUND = """# Outbound HTTP

All outbound HTTP requests go through `internal/httpclient.Client` (`httpclient.New(baseURL)`).
It sets timeouts and retries idempotent requests.

- Never call `http.Get`, `http.Post`, `http.DefaultClient` or a bare `&http.Client{}` from
  `net/http` for an outbound request.
- Tests may use `httptest` servers and their clients.
"""
LOGGING = """# Logging

- Use the project's logger: `from inventory.log import get_logger`, then `log = get_logger(__name__)`.
- Never use `print()` in library or service code (scripts under `scripts/` may).
- Put values in `extra={...}`, not in the message.
"""
GO_OLD = 'package geo\n\nimport "net/http"\n\nfunc Lookup(c *httpclient.Client) {\n\tc.Get("/geo")\n}\n'


async def review(tmp_path: Path, files: dict[str, tuple[str, str]], rules: dict[str, str]) -> list[Evidence]:
    os.makedirs(tmp_path, exist_ok=True)  # noqa: ASYNC230 - a test's own temporary directory
    paths = {f".codejury/rules/{name}": text for name, text in rules.items()}
    base = PrefetchedBase(paths, {".codejury/rules": list(paths)})
    return await TeamRulesAnalyzer().analyze(replace(make_change(tmp_path, files), base=base))


async def test_code_a_rule_forbids_is_a_hit_on_the_line_that_uses_it(tmp_path: Path) -> None:
    new = GO_OLD.replace(
        '\tc.Get("/geo")\n', "\t// not http.Get: the client\n\tresp, err := http.Get(url)\n\t_ = err\n"
    )
    new += "func client() *http.Client {\n\treturn &http.Client{Timeout: 5}\n}\n"
    evidence = await review(tmp_path, {"internal/geo/geo.go": (GO_OLD, new)}, {"outbound-http.md": OUTBOUND})
    assert hits(evidence) == {
        ("forbidden-code", "internal/geo/geo.go", 7),
        ("forbidden-code", "internal/geo/geo.go", 11),
    }
    first = min(evidence, key=lambda e: e.start_line)
    assert "`http.Get`" in first.message and ".codejury/rules/outbound-http.md" in first.message
    assert "Never call `http.Get`" in first.message  # the rule's own words, for the reviewer and the author
    assert first.severity == "warning" and domain_for(first) == "compliance"


async def test_exempt_directories_lookalikes_comments_and_prose_are_silent(tmp_path: Path) -> None:
    files = {
        "inventory/sync.py": ("x = 1\n", 'x = 1\nlog.info("done")\nfingerprint(x)\nlog.print(x)\n# print(x) later\n'),
        "scripts/backfill.py": ("", 'print("backfilled")\n'),
        "docs/logging.md": ("", "Use `print()` only in scripts.\n"),
    }
    assert await review(tmp_path, files, {"logging.md": LOGGING}) == []
    files["inventory/sync.py"] = ("x = 1\n", 'x = 1\nprint(f"synced {x}")\n')
    evidence = await review(tmp_path / "again", files, {"logging.md": LOGGING})
    assert hits(evidence) == {("forbidden-code", "inventory/sync.py", 2)}


def test_only_code_in_a_sentence_that_forbids_it_counts() -> None:
    assert [f.code for f in parse_sentence("Never use `print()` here (scripts under `scripts/` may).", "r.md")] == [
        "print()"
    ]
    assert [f.exempt for f in parse_sentence("Never use `print()` (scripts under `scripts/` may).", "r.md")] == [
        ("scripts/",)
    ]
    assert list(parse_sentence("Use `log.info()` for progress.", "r.md")) == []  # says what to use, not what not to
    assert list(parse_sentence("Never pass `ctx` around.", "r.md")) == []  # a plain word, not code by name
    assert list(parse_sentence("Do not import from `internal/legacy/`.", "r.md")) == []  # a path: left to the model


async def test_no_rules_no_base_or_no_code_changed(tmp_path: Path) -> None:
    new = GO_OLD.replace('c.Get("/geo")', "http.Get(url)")
    assert await review(tmp_path, {"geo.go": (GO_OLD, new)}, {}) == []
    assert await review(tmp_path / "md", {"README.md": ("a\n", "http.Get\n")}, {"outbound-http.md": OUTBOUND}) == []
    change = make_change(tmp_path, {"geo.go": (GO_OLD, new)})  # no base reader: a diff file without --repo
    with pytest.raises(AnalyzerSkipped, match="base side cannot be read"):
        await TeamRulesAnalyzer().analyze(change)
