"""Reviews and plans as JSON: the stable machine-readable contract, with JSON Schemas to check it.

Key order is fixed and optional keys (a finding's ``suggestion``, a reviewer's ``error``) are
absent rather than null; a finding's ``grounds`` says in words what it stands on (``render.grounds_phrase``:
the analyzer and rule, ``model, checked against the code`` or ``model alone``) beside the ``evidence`` keys and
``verified``; its ``withholds_approval`` is present only when true (a finding held
on security evidence that no model confirmed). ``below_threshold`` lists the findings under the
confidence threshold, each flagged ``"below_threshold": true`` (not published, not counted toward the
verdict); ``remembered`` the findings that match a writer's earlier dismissal in the repository (``[memory]``),
each with where, by whom and how it was dismissed and whether it was ``suppressed`` (not published, not counted
toward the verdict) or published anyway (a security finding an analyzer backs); ``suspected_injections`` the
passages that look like instructions to the reviewer.
``schema_errors(instance, schema)`` is a small checker for the subset of JSON Schema used here
(type, properties, required, additionalProperties, items, enum, minimum), so tests and end-to-end
runs can validate output without a ``jsonschema`` dependency.
"""

from __future__ import annotations

import json
from typing import Any, get_args

from codejury.findings import (
    CriterionStatus,
    Finding,
    Plan,
    Remembered,
    Review,
    ReviewerReport,
    Usage,
    Verdict,
    Walkthrough,
)
from codejury.render import finding_grounds

_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "duration_s",
)


def _usage(usage: Usage | ReviewerReport) -> dict[str, Any]:
    return {key: getattr(usage, key) for key in _USAGE_KEYS}


def _finding(f: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": f.id,
        "reviewer": f.reviewer,
        "category": f.category,
        "severity": f.severity,
        "path": f.path,
        "start_line": f.start_line,
        "end_line": f.end_line,
        "title": f.title,
        "body": f.body,
    }
    if f.suggestion is not None:
        out["suggestion"] = f.suggestion
    out["confidence"] = f.confidence
    out["evidence"] = list(f.evidence)
    out["verified"] = f.verified
    out["advisory"] = f.advisory
    out["grounds"] = finding_grounds(f)
    if f.withholds_approval:
        out["withholds_approval"] = True
    return out


def _reviewer(r: ReviewerReport) -> dict[str, Any]:
    out: dict[str, Any] = {"name": r.name, "model": r.model, "status": r.status}
    if r.error is not None:
        out["error"] = r.error
    out.update(_usage(r))
    return out


def review_to_dict(review: Review) -> dict[str, Any]:
    """A review as plain data in the stable shape (what ``review_to_json`` serialises)."""
    return {
        "verdict": review.verdict,
        "tier": review.tier,
        "summary": review.summary,
        "findings": [_finding(f) for f in review.findings],
        "reviewers": [_reviewer(r) for r in review.reviewers],
        "skipped_files": [{"path": s.path, "reason": s.reason} for s in review.skipped_files],
        "usage": _usage(review.usage),
        "coordinator": _reviewer(review.coordinator) if review.coordinator is not None else None,
        "judged": review.judged,
        "break_glass": review.break_glass,
        "dropped_findings": dict(sorted(review.dropped_findings.items())),
        "notes": list(review.notes),
        "approval_withheld": list(review.approval_withheld),
        "cut_files": list(review.cut_files),
        "tests": review.tests,
        "below_threshold": [{**_finding(f), "below_threshold": True} for f in review.below_threshold],
        "suspected_injections": [i.model_dump() for i in review.suspected_injections],
        "remembered": [_remembered(r) for r in review.remembered],
        **({"walkthrough": walkthrough_to_dict(review.walkthrough)} if review.walkthrough is not None else {}),
        **({"criteria": [c.model_dump() for c in review.criteria]} if review.criteria else {}),
    }


def _remembered(r: Remembered) -> dict[str, Any]:
    return {
        **_finding(r.finding),
        "dismissed_in": r.dismissed_in,
        "dismissed_by": r.dismissed_by,
        "how": r.how,
        "dismissed_at": r.dismissed_at,
        "suppressed": r.suppressed,
    }


def walkthrough_to_dict(w: Walkthrough) -> dict[str, Any]:
    """A walkthrough as plain data in the stable shape (the review's ``walkthrough`` key, ``codejury describe``)."""
    return {
        "summary": w.summary,
        "groups": [{"purpose": g.purpose, "files": [f.model_dump() for f in g.files]} for g in w.groups],
        "diagram": w.diagram,
        "model": w.model,
        "source": w.source,
        "unsupported": w.unsupported,
        "usage": _usage(w.usage),
    }


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """A plan as plain data in the stable shape (what ``plan_to_json`` serialises)."""
    return {
        "tier": plan.tier,
        "reviewers": [{"name": r.name, "model": r.model, "files": list(r.files)} for r in plan.reviewers],
        "skipped_files": [{"path": s.path, "reason": s.reason} for s in plan.skipped_files],
        "estimated_input_tokens": plan.estimated_input_tokens,
        "estimated_cost_usd": plan.estimated_cost_usd,
        "coordinator_model": plan.coordinator_model,
        "model_problems": dict(sorted(plan.model_problems.items())),
        **({"refusal": plan.refusal} if plan.refusal is not None else {}),
        **({"estimate_notes": list(plan.estimate_notes)} if plan.estimate_notes else {}),
    }


def review_to_json(review: Review) -> str:
    """The review as indented JSON in the stable shape."""
    return json.dumps(review_to_dict(review), indent=2, ensure_ascii=False)


def plan_to_json(plan: Plan) -> str:
    """The dry-run plan as indented JSON in the stable shape."""
    return json.dumps(plan_to_dict(plan), indent=2, ensure_ascii=False)


# --- schemas ---------------------------------------------------------------------------------------

_NON_NEG_INT: dict[str, Any] = {"type": "integer", "minimum": 0}
_NON_NEG_NUM: dict[str, Any] = {"type": "number", "minimum": 0}
_STR: dict[str, Any] = {"type": "string"}
_TIER: dict[str, Any] = {"type": "string", "enum": ["trivial", "lite", "full"]}


def _object(properties: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": [k for k in properties if k not in optional],
        "additionalProperties": False,
    }


_USAGE_SCHEMA = _object(
    {
        "input_tokens": _NON_NEG_INT,
        "output_tokens": _NON_NEG_INT,
        "cache_read_tokens": _NON_NEG_INT,
        "cache_write_tokens": _NON_NEG_INT,
        "cost_usd": _NON_NEG_NUM,
        "duration_s": _NON_NEG_NUM,
    }
)
_REVIEWER_SCHEMA = _object(
    {
        "name": _STR,
        "model": _STR,
        "status": {"type": "string", "enum": ["ok", "failed", "skipped"]},
        "error": _STR,
        **_USAGE_SCHEMA["properties"],
    },
    optional=("error",),
)
_FINDING_SCHEMA = _object(
    {
        "id": _STR,
        "reviewer": _STR,
        "category": _STR,
        "severity": {"type": "string", "enum": ["critical", "warning", "suggestion"]},
        "path": _STR,
        "start_line": {"type": "integer", "minimum": 1},
        "end_line": {"type": "integer", "minimum": 1},
        "title": _STR,
        "body": _STR,
        "suggestion": _STR,
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "evidence": {"type": "array", "items": _STR},
        "verified": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
        "advisory": {"type": "boolean"},
        "grounds": _STR,
        "withholds_approval": {"type": "boolean"},
    },
    optional=("suggestion", "withholds_approval"),
)
_BELOW_THRESHOLD_SCHEMA = _object(
    {**_FINDING_SCHEMA["properties"], "below_threshold": {"type": "boolean", "enum": [True]}},
    optional=("suggestion", "withholds_approval"),
)
_REMEMBERED_SCHEMA = _object(
    {
        **_FINDING_SCHEMA["properties"],
        "dismissed_in": _STR,
        "dismissed_by": _STR,
        "how": _STR,
        "dismissed_at": _STR,
        "suppressed": {"type": "boolean"},
    },
    optional=("suggestion", "withholds_approval"),
)
_INJECTION_SCHEMA = _object({"source": _STR, "place": _STR, "rule": _STR, "excerpt": _STR})
_SKIPPED_SCHEMA = _object({"path": _STR, "reason": _STR})
_WALKTHROUGH_SCHEMA = _object(
    {
        "summary": _STR,
        "groups": {
            "type": "array",
            "items": _object(
                {"purpose": _STR, "files": {"type": "array", "items": _object({"path": _STR, "line": _STR})}}
            ),
        },
        "diagram": {"anyOf": [{"type": "null"}, _STR]},
        "model": _STR,
        "source": {"type": "string", "enum": ["model", "diff"]},
        "unsupported": _NON_NEG_INT,
        "usage": _USAGE_SCHEMA,
    }
)

_CRITERION_SCHEMA = _object(
    {
        "issue": _STR,
        "text": _STR,
        "status": {"type": "string", "enum": list(get_args(CriterionStatus))},
        "cited_by": {"type": "array", "items": _STR},
        "evidence": _STR,
    }
)

REVIEW_JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "codejury review",
    **_object(
        {
            "verdict": {
                "type": "string",
                "enum": list(get_args(Verdict)),
            },
            "tier": _TIER,
            "summary": _STR,
            "findings": {"type": "array", "items": _FINDING_SCHEMA},
            "reviewers": {"type": "array", "items": _REVIEWER_SCHEMA},
            "skipped_files": {"type": "array", "items": _SKIPPED_SCHEMA},
            "usage": _USAGE_SCHEMA,
            "coordinator": {"anyOf": [{"type": "null"}, _REVIEWER_SCHEMA]},
            "judged": {"type": "boolean"},
            "break_glass": {"type": "boolean"},
            "dropped_findings": {"type": "object", "additionalProperties": _NON_NEG_INT},
            "notes": {"type": "array", "items": _STR},
            "approval_withheld": {"type": "array", "items": _STR},
            "cut_files": {"type": "array", "items": _STR},
            "tests": {"anyOf": [{"type": "null"}, _STR]},
            "below_threshold": {"type": "array", "items": _BELOW_THRESHOLD_SCHEMA},
            "suspected_injections": {"type": "array", "items": _INJECTION_SCHEMA},
            "remembered": {"type": "array", "items": _REMEMBERED_SCHEMA},
            "walkthrough": _WALKTHROUGH_SCHEMA,
            "criteria": {"type": "array", "items": _CRITERION_SCHEMA},
        },
        optional=("walkthrough", "criteria"),
    ),
}

PLAN_JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "codejury plan",
    **_object(
        {
            "tier": _TIER,
            "reviewers": {
                "type": "array",
                "items": _object({"name": _STR, "model": _STR, "files": {"type": "array", "items": _STR}}),
            },
            "skipped_files": {"type": "array", "items": _SKIPPED_SCHEMA},
            "estimated_input_tokens": _NON_NEG_INT,
            "estimated_cost_usd": _NON_NEG_NUM,
            "coordinator_model": _STR,
            "model_problems": {"type": "object", "additionalProperties": _STR},
            "refusal": _STR,
            "estimate_notes": {"type": "array", "items": _STR},
        },
        optional=("refusal", "estimate_notes"),
    ),
}

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _type_ok(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, _TYPES[name])


def schema_errors(instance: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """Violations of ``schema`` in ``instance`` (empty when valid), for the JSON Schema subset above."""
    if "anyOf" in schema:
        if any(not schema_errors(instance, option, where) for option in schema["anyOf"]):
            return []
        return [f"{where}: matches none of anyOf"]
    expected = schema.get("type")
    if expected is not None and not _type_ok(instance, expected):
        return [f"{where}: expected {expected}, got {type(instance).__name__}"]
    errors: list[str] = []
    if "enum" in schema and instance not in schema["enum"]:
        errors.append(f"{where}: {instance!r} not one of {schema['enum']}")
    if "minimum" in schema and instance < schema["minimum"]:
        errors.append(f"{where}: {instance} < {schema['minimum']}")
    if "maximum" in schema and instance > schema["maximum"]:
        errors.append(f"{where}: {instance} > {schema['maximum']}")
    if isinstance(instance, dict):
        properties: dict[str, Any] = schema.get("properties", {})
        errors += [f"{where}: missing {key!r}" for key in schema.get("required", []) if key not in instance]
        extra = schema.get("additionalProperties", True)
        for key, value in instance.items():
            if key in properties:
                errors += schema_errors(value, properties[key], f"{where}.{key}")
            elif extra is False:
                errors.append(f"{where}: unexpected key {key!r}")
            elif isinstance(extra, dict):
                errors += schema_errors(value, extra, f"{where}.{key}")
    if isinstance(instance, list) and "items" in schema:
        for i, item in enumerate(instance):
            errors += schema_errors(item, schema["items"], f"{where}[{i}]")
    return errors
