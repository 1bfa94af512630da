from __future__ import annotations

import json
from typing import Any

from codejury.findings import Criterion, Walkthrough
from codejury.render.jsonout import (
    PLAN_JSON_SCHEMA,
    REVIEW_JSON_SCHEMA,
    plan_to_json,
    review_to_json,
    schema_errors,
)
from tests.render.samples import finding, full_review, not_reviewed_review, plan

USAGE_KEYS = [
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "duration_s",
]


def test_review_top_level_keys_in_stable_order() -> None:
    data = json.loads(review_to_json(full_review()))
    assert list(data) == [
        "verdict",
        "tier",
        "summary",
        "findings",
        "reviewers",
        "skipped_files",
        "usage",
        "coordinator",
        "judged",
        "break_glass",
        "dropped_findings",
        "notes",
        "approval_withheld",
        "cut_files",
        "tests",
        "below_threshold",
        "suspected_injections",
        "remembered",
    ]
    assert data["verdict"] == "requested_changes"
    assert data["tier"] == "full"
    assert data["judged"] is True
    assert data["break_glass"] is False
    assert data["dropped_findings"] == {"duplicate": 2, "outside_diff": 1}


def test_finding_shape_with_and_without_suggestion() -> None:
    data = json.loads(review_to_json(full_review()))
    first, second = data["findings"]
    assert list(first) == [
        "id",
        "reviewer",
        "category",
        "severity",
        "path",
        "start_line",
        "end_line",
        "title",
        "body",
        "suggestion",
        "confidence",
        "evidence",
        "verified",
        "advisory",
        "grounds",
    ]
    assert (first["evidence"], first["verified"], first["advisory"]) == ([], None, False)
    assert first["grounds"] == "model alone"
    assert first["suggestion"].startswith("cur.execute(")
    assert "suggestion" not in second
    assert second["start_line"] == second["end_line"] == 7
    assert second["confidence"] == 0.7


def test_reviewer_shape_error_only_when_present_and_coordinator_separate() -> None:
    data = json.loads(review_to_json(full_review()))
    names = [r["name"] for r in data["reviewers"]]
    assert names == ["security", "performance", "documentation"]
    assert "coordinator" not in names
    ok = data["reviewers"][0]
    assert list(ok) == ["name", "model", "status", *USAGE_KEYS]
    assert ok["cache_read_tokens"] == 800
    failed = data["reviewers"][2]
    assert list(failed) == ["name", "model", "status", "error", *USAGE_KEYS]
    assert failed["status"] == "failed"
    assert failed["error"] == "timed out after 300s"
    assert data["coordinator"]["name"] == "coordinator"
    assert "error" not in data["coordinator"]
    assert "requests" not in ok


def test_usage_and_skipped_files() -> None:
    data = json.loads(review_to_json(full_review()))
    assert list(data["usage"]) == USAGE_KEYS
    assert data["usage"]["input_tokens"] == 4100
    assert data["usage"]["cost_usd"] == 0.0443
    assert data["skipped_files"] == [{"path": "package-lock.json", "reason": "lock file"}]


def test_coordinator_null_when_absent() -> None:
    data = json.loads(review_to_json(full_review(coordinator=None, findings=[], verdict="approved")))
    assert data["coordinator"] is None
    assert data["findings"] == []
    assert schema_errors(data, REVIEW_JSON_SCHEMA) == []


def test_json_is_indented_two_and_keeps_unicode() -> None:
    text = review_to_json(full_review(summary="naïve — ok"))
    assert text.startswith('{\n  "verdict"')
    assert "naïve — ok" in text


def test_review_validates_against_schema() -> None:
    data = json.loads(review_to_json(full_review()))
    assert schema_errors(data, REVIEW_JSON_SCHEMA) == []


def test_schema_rejects_drift() -> None:
    data: dict[str, Any] = json.loads(review_to_json(full_review()))
    data["findings"][0]["severity"] = "blocker"
    data["findings"][1]["suggestion"] = None
    data["reviewers"][0]["extra"] = 1
    del data["usage"]["cost_usd"]
    data["judged"] = "yes"
    errors = schema_errors(data, REVIEW_JSON_SCHEMA)
    joined = "\n".join(errors)
    assert "$.findings[0].severity" in joined
    assert "$.findings[1].suggestion" in joined
    assert "unexpected key 'extra'" in joined
    assert "missing 'cost_usd'" in joined
    assert "$.judged: expected boolean" in joined


def test_schema_rejects_bool_as_integer_and_out_of_range() -> None:
    data: dict[str, Any] = json.loads(review_to_json(full_review()))
    data["usage"]["input_tokens"] = True
    data["findings"][0]["confidence"] = 1.5
    data["findings"][0]["start_line"] = 0
    errors = "\n".join(schema_errors(data, REVIEW_JSON_SCHEMA))
    assert "$.usage.input_tokens: expected integer" in errors
    assert "$.findings[0].confidence: 1.5 > 1" in errors
    assert "$.findings[0].start_line: 0 < 1" in errors


def test_schema_lists_every_key_the_serializer_can_emit() -> None:
    props = REVIEW_JSON_SCHEMA["properties"]
    criteria = [Criterion(issue="#1", text="Names are escaped.")]
    full = full_review(walkthrough=Walkthrough(summary="Adds a."), criteria=criteria)
    assert set(props) == set(json.loads(review_to_json(full)))
    assert set(props["criteria"]["items"]["properties"]) == set(criteria[0].model_dump())
    assert set(props["findings"]["items"]["properties"]) == {*finding().model_dump(), "grounds"}
    assert REVIEW_JSON_SCHEMA["properties"]["findings"]["items"]["required"].count("suggestion") == 0


def test_plan_shape_and_schema() -> None:
    text = plan_to_json(plan())
    data = json.loads(text)
    assert list(data) == [
        "tier",
        "reviewers",
        "skipped_files",
        "estimated_input_tokens",
        "estimated_cost_usd",
        "coordinator_model",
        "model_problems",
    ]
    assert data["reviewers"][0] == {
        "name": "code_quality",
        "model": "openai:gpt-5",
        "files": ["src/a.py", "src/b.py"],
    }
    assert data["skipped_files"] == [{"path": "dist/app.min.js", "reason": "minified"}]
    assert data["estimated_input_tokens"] == 12345
    assert data["coordinator_model"] == "anthropic:claude-opus"
    assert text.startswith('{\n  "tier"')
    assert schema_errors(data, PLAN_JSON_SCHEMA) == []
    data["reviewers"][0]["files"] = "src/a.py"
    assert schema_errors(data, PLAN_JSON_SCHEMA) == ["$.reviewers[0].files: expected array, got str"]


def test_schemas_are_json_serialisable() -> None:
    assert json.loads(json.dumps(REVIEW_JSON_SCHEMA))["title"] == "codejury review"
    assert json.loads(json.dumps(PLAN_JSON_SCHEMA))["title"] == "codejury plan"


def test_a_not_reviewed_review_is_valid_json_contract() -> None:
    data = json.loads(review_to_json(not_reviewed_review()))
    assert data["verdict"] == "not_reviewed" and data["findings"] == [] and data["reviewers"] == []
    assert schema_errors(data, REVIEW_JSON_SCHEMA) == []
    assert data["skipped_files"][0] == {"path": "yarn.lock", "reason": "lock file"}


def test_each_finding_says_in_words_what_it_stands_on() -> None:
    review = full_review(
        findings=[finding(evidence=["ruff:S608"], verified=True), finding(id="B", verified=True), finding(id="C")]
    )
    data = json.loads(review_to_json(review))
    assert [f["grounds"] for f in data["findings"]] == [
        "ruff S608; checked against the code",
        "model, checked against the code",
        "model alone",
    ]
    assert data["findings"][0]["evidence"] == ["ruff:S608"]  # the keys stay as they were
    assert schema_errors(data, REVIEW_JSON_SCHEMA) == []
