"""CI artifacts: SARIF, rdjson and Code Quality validate against their schemas and carry stable fingerprints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from codejury.findings import Finding, Review, ReviewerReport
from codejury.fingerprint import fingerprint, location_fingerprint, normalise_title, unique_fingerprints
from codejury.render import codeclimate, rdjson, sarif
from tests.render.samples import HOSTILE, finding, full_review, not_reviewed_review

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


def schema_errors(instance: Any, name: str) -> list[str]:
    """Violations of the vendored schema ``name``, validated with the draft it declares."""
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]


def clean_review(**overrides: Any) -> Review:
    ok = ReviewerReport(name="security", model="m", status="ok")
    fields: dict[str, Any] = {
        "verdict": "approved",
        "tier": "lite",
        "summary": "No findings.",
        "reviewers": [ok],
        "coordinator": ReviewerReport(name="coordinator", model="m", status="skipped"),
    }
    fields.update(overrides)
    return Review(**fields)


def all_ok(review: Review) -> Review:
    return review.model_copy(update={"reviewers": [r for r in review.reviewers if r.status != "failed"]})


def hostile_review() -> Review:
    return full_review(
        findings=[finding(title=HOSTILE, body=HOSTILE, suggestion=HOSTILE, path="src/with space/ü.py", category="")]
    )


def grounded_review() -> Review:
    """Findings on every kind of grounds: analyzer rules of two tools (one a security rule), a passed check,
    a failing test, the model alone."""
    others = [
        ("S", "code_quality", "quoting", "Unquoted variable", ["shellcheck:SC2086"]),
        ("T", "code_quality", "logic", "Wrong total", ["junit:tests.test_db::test_total"]),
        ("M", "performance", "n+1-query", "Loop", []),
    ]
    findings = [
        finding(id="R", evidence=["ruff:S608"], verified=True),
        finding(id="V", category="auth", title="Token compared with ==", verified=True),
        *(
            finding(id=i, reviewer=r, category=c, severity="warning", title=t, evidence=e, suggestion=None)
            for i, r, c, t, e in others
        ),
    ]
    return all_ok(full_review(findings=findings))


REVIEWS = {
    "full": full_review,
    "grounded": grounded_review,
    "clean": clean_review,
    "not_reviewed": not_reviewed_review,
    "hostile": hostile_review,
    "unjudged": lambda: full_review(
        judged=False,
        verdict="significant_concerns",
        coordinator=ReviewerReport(name="coordinator", model="m", status="failed", error="boom"),
    ),
}


# --- schemas -----------------------------------------------------------------------------------------


def test_the_vendored_schemas_declare_the_drafts_they_are_checked_with() -> None:
    drafts = {
        name: jsonschema.validators.validator_for(
            json.loads((SCHEMAS / name).read_text(encoding="utf-8")), default=None
        )
        for name in ("sarif-2.1.0.json", "rdjson.json", "codeclimate.json")
    }
    assert drafts == {
        "sarif-2.1.0.json": jsonschema.Draft4Validator,
        "rdjson.json": jsonschema.Draft4Validator,
        "codeclimate.json": jsonschema.Draft202012Validator,
    }


@pytest.mark.parametrize("name", sorted(REVIEWS))
def test_sarif_validates_against_the_sarif_2_1_0_schema(name: str) -> None:
    log = json.loads(sarif.render(REVIEWS[name]()))
    assert schema_errors(log, "sarif-2.1.0.json") == []
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1


@pytest.mark.parametrize("name", sorted(REVIEWS))
def test_rdjson_validates_against_reviewdogs_schema(name: str) -> None:
    assert schema_errors(json.loads(rdjson.render(REVIEWS[name]())), "rdjson.json") == []


@pytest.mark.parametrize("name", sorted(REVIEWS))
def test_codeclimate_validates_against_the_documented_format_and_gitlabs_own_validator(name: str) -> None:
    report = json.loads(codeclimate.render(REVIEWS[name]()))
    assert schema_errors(report, "codeclimate.json") == []
    for entry in report:
        assert schema_errors(entry, "gitlab-codeclimate.json") == []
    fingerprints = [e["fingerprint"] for e in report]
    assert len(set(fingerprints)) == len(fingerprints)  # GitLab keys entries by fingerprint


_RDF_FIELDS = {
    "result": {"diagnostics", "source", "severity"},
    "diagnostic": {"message", "location", "severity", "source", "code", "suggestions", "original_output"},
    "location": {"path", "range"},
    "range": {"start", "end"},
    "position": {"line", "column"},
    "suggestion": {"range", "text"},
    "source": {"name", "url"},
    "code": {"value", "url"},
}


def _range_ok(r: dict[str, Any]) -> bool:
    return set(r) <= _RDF_FIELDS["range"] and all(set(p) <= _RDF_FIELDS["position"] for p in r.values())


def test_rdjson_has_no_field_outside_the_proto_because_reviewdog_rejects_unknown_fields() -> None:
    for review in (full_review(), REVIEWS["unjudged"](), hostile_review(), grounded_review()):
        result = json.loads(rdjson.render(review))
        assert set(result) <= _RDF_FIELDS["result"] and set(result["source"]) <= _RDF_FIELDS["source"]
        for d in result["diagnostics"]:
            assert set(d) <= _RDF_FIELDS["diagnostic"], d
            assert set(d["code"]) <= _RDF_FIELDS["code"]
            if "location" in d:
                assert set(d["location"]) <= _RDF_FIELDS["location"] and _range_ok(d["location"]["range"])
            for s in d.get("suggestions", []):
                assert set(s) <= _RDF_FIELDS["suggestion"] and _range_ok(s["range"])


# --- fingerprints ------------------------------------------------------------------------------------


def test_fingerprint_is_16_hex_chars_and_survives_a_line_shift() -> None:
    before = finding()
    after = finding(id="F9", start_line=52, end_line=54, body="Reworded body.", reviewer="code_quality")
    fp = fingerprint(before)
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert fingerprint(after) == fp
    assert location_fingerprint(after) != location_fingerprint(before)
    assert location_fingerprint(finding()) == location_fingerprint(before)


def test_fingerprint_ignores_case_digits_and_punctuation_in_the_title_and_category_case() -> None:
    a = finding(title="Query inside a loop (3 calls)", category="N+1-Query ")
    b = finding(title="query inside a loop: 12 calls!", category="n+1-query")
    assert normalise_title(a.title) == "query inside a loop calls"
    assert fingerprint(a) == fingerprint(b)


@pytest.mark.parametrize(
    "change", [{"path": "src/app/other.py"}, {"category": "xss"}, {"title": "SQL built from a constant"}]
)
def test_fingerprint_differs_for_a_different_finding(change: dict[str, Any]) -> None:
    assert fingerprint(finding(**change)) != fingerprint(finding())


def test_fingerprints_are_stable_across_renders_and_line_shifts_in_every_format() -> None:
    review = full_review()
    shifted = full_review(
        findings=[
            f.model_copy(update={"start_line": f.start_line + 7, "end_line": f.end_line + 7}) for f in review.findings
        ]
    )
    assert sarif.render(review) == sarif.render(review)
    assert codeclimate.render(review) == codeclimate.render(review)
    assert rdjson.render(review) == rdjson.render(review)

    def sarif_fps(r: Review) -> list[str]:
        return [res["partialFingerprints"]["codejury/v1"] for res in json.loads(sarif.render(r))["runs"][0]["results"]]

    def cq_fps(r: Review) -> list[str]:
        return [e["fingerprint"] for e in json.loads(codeclimate.render(r))]

    assert sarif_fps(shifted) == sarif_fps(review) == [fingerprint(f) for f in review.findings]
    assert cq_fps(shifted) == cq_fps(review)
    assert len(set(sarif_fps(review))) == 2


def test_findings_sharing_a_fingerprint_get_distinct_ids_whatever_their_order() -> None:
    first = finding(id="A", start_line=10, end_line=10)
    second = finding(id="B", start_line=30, end_line=31)
    other = finding(id="C", title="Something else")
    ids = unique_fingerprints([first, second, other])
    assert ids == [fingerprint(first), f"{fingerprint(first)}-2", fingerprint(other)]
    assert unique_fingerprints([other, second, first]) == [ids[2], ids[1], ids[0]]
    report = json.loads(codeclimate.render(all_ok(full_review(findings=[second, first]))))
    assert [e["fingerprint"] for e in report] == [ids[1], ids[0]]


# --- content -----------------------------------------------------------------------------------------


def _three_severities() -> Review:
    return full_review(
        findings=[
            finding(id="C", severity="critical", title="a"),
            finding(id="W", severity="warning", title="b"),
            finding(id="S", severity="suggestion", title="c"),
        ]
    )


def test_severities_are_mapped_in_every_format() -> None:
    review = _three_severities()
    results = json.loads(sarif.render(review))["runs"][0]["results"]
    assert [r["level"] for r in results] == ["error", "warning", "note"]
    diagnostics = json.loads(rdjson.render(all_ok(review)))["diagnostics"]
    assert [d["severity"] for d in diagnostics] == ["ERROR", "WARNING", "INFO"]
    report = json.loads(codeclimate.render(all_ok(review)))
    assert [e["severity"] for e in report] == ["critical", "major", "minor"]


def test_sarif_result_carries_what_github_needs() -> None:
    run = json.loads(sarif.render(full_review()))["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "codejury" and driver["version"]
    assert [r["id"] for r in driver["rules"]] == ["n+1-query", "sql-injection"]
    sqli = run["results"][0]
    assert sqli["ruleId"] == "sql-injection" and driver["rules"][sqli["ruleIndex"]]["id"] == "sql-injection"
    assert sqli["message"]["text"].startswith("SQL built from request input\n\nThe query interpolates")
    assert sqli["message"]["text"].endswith("\n\nGrounds: model alone")
    location = sqli["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": "src/app/db.py"}, "region": {"startLine": 42, "endLine": 44}}
    assert sqli["properties"] == {
        "reviewer": "security",
        "severity": "critical",
        "confidence": 0.9,
        "category": "sql-injection",
        "grounds": "model alone",
        "evidence": [],
    }
    fix = sqli["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert fix["deletedRegion"] == {"startLine": 42, "endLine": 44}
    assert fix["insertedContent"]["text"].startswith("cur.execute(")
    assert "fixes" not in run["results"][1]
    assert run["properties"]["verdict"] == "requested_changes"


def test_sarif_uri_is_a_percent_encoded_repository_relative_path() -> None:
    result = json.loads(sarif.render(hostile_review()))["runs"][0]["results"][0]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/with%20space/%C3%BC.py"
    assert result["ruleId"] == "general"
    assert "\x1b" not in result["message"]["text"] and "\u202e" not in result["message"]["text"]


def test_rdjson_carries_the_suggestion_over_the_finding_lines() -> None:
    diagnostics = json.loads(rdjson.render(full_review()))["diagnostics"]
    sqli, loop = diagnostics[0], diagnostics[1]
    assert sqli["location"] == {"path": "src/app/db.py", "range": {"start": {"line": 42}, "end": {"line": 44}}}
    assert sqli["code"] == {"value": "sql-injection"}
    assert sqli["suggestions"] == [
        {
            "range": {"start": {"line": 42}, "end": {"line": 44}},
            "text": 'cur.execute("SELECT * FROM t WHERE name = %s", (name,))',
        }
    ]
    assert "suggestions" not in loop
    assert json.loads(rdjson.render(full_review()))["source"] == {"name": "codejury"}


def test_codeclimate_entry_has_gitlabs_fields() -> None:
    entry = json.loads(codeclimate.render(full_review()))[0]
    assert entry["description"] == "SQL built from request input (model alone)"
    assert entry["check_name"] == "sql-injection"
    assert entry["location"] == {"path": "src/app/db.py", "lines": {"begin": 42, "end": 44}}
    assert entry["categories"] == ["Security"] and entry["type"] == "issue"


# --- failed reviewers --------------------------------------------------------------------------------


def test_sarif_with_a_failed_reviewer_is_not_a_clean_successful_run() -> None:
    review = full_review(findings=[], verdict="approved")  # documentation failed, nothing found
    invocation = json.loads(sarif.render(review))["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and "documentation" in note["message"]["text"]
    descriptors = json.loads(sarif.render(review))["runs"][0]["tool"]["driver"]["notifications"]
    assert note["descriptor"]["id"] in {d["id"] for d in descriptors}
    assert "timed out after 300s" in note["message"]["text"]


def test_sarif_of_an_unjudged_review_says_so() -> None:
    invocation = json.loads(sarif.render(REVIEWS["unjudged"]()))["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    texts = [n["message"]["text"] for n in invocation["toolExecutionNotifications"]]
    assert any("coordinator" in t.lower() for t in texts)


def test_sarif_of_a_complete_review_is_successful_with_no_notifications() -> None:
    invocation = json.loads(sarif.render(clean_review()))["runs"][0]["invocations"][0]
    assert invocation == {"executionSuccessful": True}


def test_rdjson_and_codeclimate_report_failed_reviewers_instead_of_looking_clean() -> None:
    review = full_review(findings=[], verdict="approved")
    [notice] = json.loads(rdjson.render(review))["diagnostics"]
    assert notice["code"] == {"value": "codejury/reviewer-failed"} and "documentation" in notice["message"]
    [entry] = json.loads(codeclimate.render(review))
    assert entry["check_name"] == "codejury/reviewer-failed" and "documentation" in entry["description"]
    again = json.loads(codeclimate.render(full_review(findings=[], verdict="approved", summary="other run")))
    assert again[0]["fingerprint"] == entry["fingerprint"]
    assert json.loads(rdjson.render(clean_review()))["diagnostics"] == []
    assert json.loads(codeclimate.render(clean_review())) == []


# --- nothing reviewed --------------------------------------------------------------------------------


def test_sarif_of_a_change_nothing_reviewed_is_not_a_clean_pass() -> None:
    run = json.loads(sarif.render(not_reviewed_review()))["runs"][0]
    invocation = run["invocations"][0]
    assert run["results"] == [] and run["properties"]["verdict"] == "not_reviewed"
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["descriptor"]["id"] == "not-reviewed" and note["level"] == "warning"
    assert note["descriptor"]["id"] in {d["id"] for d in run["tool"]["driver"]["notifications"]}
    assert "Nothing was reviewed" in note["message"]["text"] and "yarn.lock: lock file" in note["message"]["text"]
    assert [s["path"] for s in note["properties"]["skippedFiles"]] == ["yarn.lock", "vendor/lib/a.go"]


def test_rdjson_and_codeclimate_say_nothing_was_reviewed() -> None:
    [notice] = json.loads(rdjson.render(not_reviewed_review()))["diagnostics"]
    assert notice["code"] == {"value": "codejury/not-reviewed"} and notice["severity"] == "WARNING"
    assert "Nothing was reviewed" in notice["message"] and "location" not in notice
    [entry] = json.loads(codeclimate.render(not_reviewed_review()))
    assert entry["check_name"] == "codejury/not-reviewed" and entry["severity"] == "major"
    assert "Nothing was reviewed" in entry["description"]
    other = not_reviewed_review(summary="Nothing was reviewed: every changed file was skipped (go.sum: lock file).")
    assert json.loads(codeclimate.render(other))[0]["fingerprint"] == entry["fingerprint"], "stable across runs"


# --- command line ------------------------------------------------------------------------------------


def _cli_review(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from codejury.cli import cli
    from codejury.testing.scripted import Final, Raw, ScriptedResolver
    from codejury.testing.scripted import finding as model_finding
    from tests.engine_helpers import AUTH_NEW, AUTH_OLD, unified_diff

    path = "app/auth/users.py"
    sqli = model_finding(path, 10, "SQL injection in find_user", severity="critical", category="sql-injection")
    resolver = ScriptedResolver({"reviewer": [Final([sqli])], "coordinator": [Raw({"decisions": []})]})
    repo = tmp_path / "repo"
    (repo / "app/auth").mkdir(parents=True)
    (repo / path).write_text(AUTH_NEW)
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff(path, AUTH_OLD, AUTH_NEW))
    config = tmp_path / "codejury.toml"
    config.write_text("analyzers = false\n")  # the formats of the scripted finding, not the analyzers' hits
    flags = ["--diff", str(diff), "--repo", str(repo), "--config", str(config), "--model", "scripted:reviewer"]
    flags += ["--model-for", "coordinator=scripted:coordinator", "--plugin", "codejury.testing.scripted"]
    with resolver.active():  # the scripted models, registered by --plugin codejury.testing.scripted
        result = CliRunner().invoke(cli, ["review", *flags, *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_cli_writes_a_valid_sarif_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out.sarif"
    code, stdout, err = _cli_review(tmp_path, monkeypatch, "--format", "sarif", "-o", str(out), "--fail-on", "never")
    assert code == 0, err
    assert stdout == ""
    log = json.loads(out.read_text(encoding="utf-8"))
    assert schema_errors(log, "sarif-2.1.0.json") == []
    run = log["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is True
    [result] = run["results"]
    assert (result["ruleId"], result["level"]) == ("sql-injection", "error")
    region = result["locations"][0]["physicalLocation"]["region"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "app/auth/users.py"
    assert region["startLine"] == 10
    assert result["partialFingerprints"]["codejury/v1"] == fingerprint(
        Finding(
            id="x",
            reviewer="security",
            category="sql-injection",
            severity="critical",
            path="app/auth/users.py",
            start_line=1,
            end_line=1,
            title="SQL injection in find_user",
            body="",
            confidence=1,
        )
    )


@pytest.mark.parametrize("fmt", ["sarif", "rdjson", "codeclimate"])
def test_cli_dry_run_with_a_review_only_format_is_a_one_line_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    code, stdout, err = _cli_review(tmp_path, monkeypatch, "--dry-run", "--format", fmt)
    assert code == 2 and stdout == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codejury: ") and f"--format {fmt}" in lines[0]
    assert "--dry-run" in lines[0]


# --- grounds: the analyzer and rule, a passed check, or the model alone -------------------------------


def test_sarif_puts_each_analyzers_rules_in_its_own_extension_with_docs_and_security_severity() -> None:
    log = json.loads(sarif.render(grounded_review()))
    assert schema_errors(log, "sarif-2.1.0.json") == []
    tool = log["runs"][0]["tool"]
    assert tool["driver"]["name"] == "codejury"
    assert [e["name"] for e in tool["extensions"]] == ["ruff", "shellcheck"]
    results = {r["message"]["text"].split("\n")[0]: r for r in log["runs"][0]["results"]}

    ruff = results["SQL built from request input"]
    assert ruff["ruleId"] == "ruff/S608"
    component = tool["extensions"][ruff["rule"]["toolComponent"]["index"]]
    rule = component["rules"][ruff["ruleIndex"]]
    assert component["name"] == "ruff" and rule["id"] == ruff["rule"]["id"] == "ruff/S608"
    assert rule["helpUri"] == "https://docs.astral.sh/ruff/rules/hardcoded-sql-expression/"
    assert rule["properties"]["security-severity"] == "9.5" and "security" in rule["properties"]["tags"]
    assert ruff["properties"]["grounds"] == "ruff S608; checked against the code"
    assert ruff["properties"]["evidence"] == ["ruff:S608"]
    assert ruff["message"]["text"].endswith("Grounds: ruff S608; checked against the code")

    shell = results["Unquoted variable"]
    rule = tool["extensions"][shell["rule"]["toolComponent"]["index"]]["rules"][shell["ruleIndex"]]
    assert (shell["ruleId"], rule["id"]) == ("shellcheck/SC2086", "shellcheck/SC2086")
    assert rule["helpUri"] == "https://www.shellcheck.net/wiki/SC2086"
    assert rule["properties"] == {"tags": ["code_quality"]}  # not a security rule: no security-severity

    driver_rules = tool["driver"]["rules"]
    for title, grounds in [
        ("Token compared with ==", "model, checked against the code"),
        ("Wrong total", "failing test tests.test_db::test_total"),
        ("Loop", "model alone"),
    ]:
        result = results[title]
        assert "rule" not in result and driver_rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["properties"]["grounds"] == grounds and result["message"]["text"].endswith(grounds)
    auth = driver_rules[results["Token compared with =="]["ruleIndex"]]
    assert auth["properties"] == {"tags": ["security"], "security-severity": "9.5"}  # the security reviewer's
    assert driver_rules[results["Loop"]["ruleIndex"]]["properties"] == {"tags": ["performance"]}


def test_sarif_rule_ids_are_unique_per_component_and_results_point_at_them() -> None:
    review = grounded_review()
    twice = review.model_copy(update={"findings": [*review.findings, finding(id="R2", evidence=["ruff:S608"])]})
    tool = json.loads(sarif.render(twice))["runs"][0]["tool"]
    for component in [tool["driver"], *tool["extensions"]]:
        ids = [r["id"] for r in component["rules"]]
        assert len(ids) == len(set(ids))
    [ruff] = [e for e in tool["extensions"] if e["name"] == "ruff"]
    assert [r["id"] for r in ruff["rules"]] == ["ruff/S608"]


def test_rdjson_carries_the_tools_rule_as_source_and_code() -> None:
    diagnostics = json.loads(rdjson.render(grounded_review()))["diagnostics"]
    by_title = {d["message"].split("\n")[0]: d for d in diagnostics}
    ruff = by_title["SQL built from request input"]
    assert ruff["source"] == {"name": "ruff"}
    assert ruff["code"] == {"value": "S608", "url": "https://docs.astral.sh/ruff/rules/hardcoded-sql-expression/"}
    assert ruff["message"].endswith("\n\nGrounds: ruff S608; checked against the code")
    assert by_title["Unquoted variable"]["code"]["value"] == "SC2086"
    loop = by_title["Loop"]
    assert "source" not in loop and loop["code"] == {"value": "n+1-query"}
    assert loop["message"].endswith("Grounds: model alone")


def test_codeclimate_carries_the_tools_rule_and_the_grounds_the_widget_shows() -> None:
    report = {e["description"].split(" (")[0]: e for e in json.loads(codeclimate.render(grounded_review()))}
    ruff = report["SQL built from request input"]
    assert ruff["check_name"] == "ruff/S608"
    assert ruff["description"] == "SQL built from request input (ruff S608; checked against the code)"
    assert report["Unquoted variable"]["check_name"] == "shellcheck/SC2086"
    assert report["Token compared with =="]["description"].endswith("(model, checked against the code)")
    assert report["Loop"]["check_name"] == "n+1-query" and report["Loop"]["description"] == "Loop (model alone)"
