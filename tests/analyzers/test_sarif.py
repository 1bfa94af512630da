"""SARIF 2.1.0 from CodeQL, Semgrep and ESLint: located, mapped to severities, kept to changed lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codejury.analyzers.sarif import SarifEvidence
from codejury.errors import InputError
from tests.analyzers.helpers import make_change

OLD = "".join(f"line {n}\n" for n in range(1, 11))
NEW = OLD + "".join(f"added {n}\n" for n in range(11, 16))


def result(uri: str, line: int, *, rule: str = "r1", level: str | None = None, base: str | None = None) -> Any:
    loc: dict[str, Any] = {"uri": uri}
    if base:
        loc["uriBaseId"] = base
    item: dict[str, Any] = {
        "ruleId": rule,
        "message": {"text": f"{rule} at {line}"},
        "locations": [{"physicalLocation": {"artifactLocation": loc, "region": {"startLine": line}}}],
    }
    if level:
        item["level"] = level
    return item


def write(tmp_path: Path, name: str, doc: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


CODEQL = {
    "version": "2.1.0",
    "runs": [{
        "tool": {"driver": {"name": "CodeQL", "rules": [
            {"id": "py/sql-injection", "defaultConfiguration": {"level": "error"},
             "properties": {"security-severity": "8.8", "tags": ["security", "external/cwe/cwe-089"]}},
            {"id": "py/unused-import", "defaultConfiguration": {"level": "note"}},
        ]}},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": "file:///home/runner/work/shop/shop/"}},
        "results": [
            result("app/views.py", 12, rule="py/sql-injection", base="%SRCROOT%"),
            result("app/views.py", 13, rule="py/unused-import", base="%SRCROOT%"),
            result("app/views.py", 3, rule="py/sql-injection", base="%SRCROOT%"),
        ],
    }],
}  # fmt: skip


async def test_codeql_results_are_located_through_their_base_and_graded(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"app/views.py": (OLD, NEW)})
    evidence = await SarifEvidence.from_files([write(tmp_path, "codeql.sarif", CODEQL)]).analyze(change)
    assert [(e.analyzer, e.rule, e.path, e.start_line, e.severity) for e in evidence] == [
        ("codeql", "py/sql-injection", "app/views.py", 12, "critical"),
        ("codeql", "py/unused-import", "app/views.py", 13, "suggestion"),
    ], "line 3 is unchanged"
    assert "cwe-089" in evidence[0].message


async def test_semgrep_file_uris_under_the_root_and_levels(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"src/a.js": (OLD, NEW), "src/b.js": ("", "x\n")})
    root = (tmp_path / "head").resolve()
    doc = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "Semgrep OSS", "rules": []}}, "results": [
        result(f"file://{root}/src/a.js", 14, rule="javascript.express.xss", level="error"),
        result(f"file://{root}/src/b.js", 1, rule="js.warn", level="warning"),
        result(f"file://{root}/src/unchanged.js", 1, rule="js.other", level="error"),
    ]}]}  # fmt: skip
    evidence = await SarifEvidence.from_files([write(tmp_path, "semgrep.sarif", doc)]).analyze(change)
    assert [(e.analyzer, e.path, e.start_line, e.severity) for e in evidence] == [
        ("semgrep-oss", "src/a.js", 14, "warning"),
        ("semgrep-oss", "src/b.js", 1, "warning"),
    ]


async def test_eslint_absolute_paths_from_another_checkout_match_by_suffix(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"web/src/app.ts": (OLD, NEW)}, with_root=False)
    doc = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "ESLint"}}, "results": [
        result("file:///builds/team/web/src/app.ts", 11, rule="no-eval", level="error"),
        result("file:///builds/team/web/src/app.ts", 2, rule="no-undef", level="error"),
    ]}]}  # fmt: skip
    evidence = await SarifEvidence.from_files([write(tmp_path, "eslint.sarif", doc)]).analyze(change)
    found = [(e.analyzer, e.rule, e.path, e.start_line) for e in evidence]
    assert found == [("eslint", "no-eval", "web/src/app.ts", 11)]


@pytest.mark.parametrize(
    ("content", "needle"),
    [("{not json", "not valid SARIF"), ('{"runs": [{"results": []}]}', "not valid SARIF"), ("[]", "no 'runs'")],
)
def test_a_malformed_file_is_one_input_error_naming_it(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "bad.sarif"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=needle) as info:
        SarifEvidence.from_files([path])
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_and_oversized_files_are_input_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError, match="not found"):
        SarifEvidence.from_files([tmp_path / "absent.sarif"])
    monkeypatch.setattr("codejury.analyzers.sarif.MAX_SARIF_BYTES", 100)
    big = write(tmp_path, "big.sarif", {"version": "2.1.0", "runs": [], "pad": "x" * 200})
    with pytest.raises(InputError, match="limit"):
        SarifEvidence.from_files([big])
