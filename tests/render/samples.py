"""Reviews and plans built by hand for the renderer tests."""

from __future__ import annotations

from typing import Any

from codejury.findings import Finding, Plan, PlannedReviewer, Review, ReviewerReport, SkippedFile, Usage


def finding(**overrides: Any) -> Finding:
    fields: dict[str, Any] = {
        "id": "F1",
        "reviewer": "security",
        "category": "sql-injection",
        "severity": "critical",
        "path": "src/app/db.py",
        "start_line": 42,
        "end_line": 44,
        "title": "SQL built from request input",
        "body": "The query interpolates `name` directly.\nUse a bound parameter.",
        "suggestion": 'cur.execute("SELECT * FROM t WHERE name = %s", (name,))',
        "confidence": 0.9,
    }
    fields.update(overrides)
    return Finding(**fields)


def full_review(**overrides: Any) -> Review:
    fields: dict[str, Any] = {
        "verdict": "requested_changes",
        "tier": "full",
        "summary": "1 critical issue and 1 warning from 2 reviewers.",
        "findings": [
            finding(),
            finding(
                id="F2",
                reviewer="performance",
                category="n+1-query",
                severity="warning",
                path="src/app/views.py",
                start_line=7,
                end_line=7,
                title="Query inside a loop",
                body="Each iteration issues a query.",
                suggestion=None,
                confidence=0.7,
            ),
        ],
        "reviewers": [
            ReviewerReport(
                name="security",
                model="anthropic:claude-sonnet",
                status="ok",
                requests=2,
                input_tokens=1200,
                output_tokens=300,
                cache_read_tokens=800,
                cache_write_tokens=100,
                cost_usd=0.0123,
                duration_s=12.5,
            ),
            ReviewerReport(
                name="performance",
                model="openai:gpt-5-mini",
                status="ok",
                input_tokens=900,
                output_tokens=200,
                cost_usd=0.002,
                duration_s=8.0,
            ),
            ReviewerReport(
                name="documentation",
                model="openai:gpt-5-nano",
                status="failed",
                error="timed out after 300s",
                duration_s=300.0,
            ),
        ],
        "coordinator": ReviewerReport(
            name="coordinator",
            model="anthropic:claude-opus",
            status="ok",
            input_tokens=2000,
            output_tokens=150,
            cost_usd=0.03,
            duration_s=20.0,
        ),
        "skipped_files": [SkippedFile(path="package-lock.json", reason="lock file")],
        "usage": Usage(
            requests=5,
            input_tokens=4100,
            output_tokens=650,
            cache_read_tokens=800,
            cache_write_tokens=100,
            cost_usd=0.0443,
            duration_s=65.0,
        ),
        "dropped_findings": {"duplicate": 2, "outside_diff": 1},
    }
    fields.update(overrides)
    return Review(**fields)


def plan(**overrides: Any) -> Plan:
    fields: dict[str, Any] = {
        "tier": "lite",
        "reviewers": [
            PlannedReviewer(name="code_quality", model="openai:gpt-5", files=["src/a.py", "src/b.py"]),
            PlannedReviewer(name="documentation", model="openai:gpt-5-nano", files=["README.md"]),
        ],
        "coordinator_model": "anthropic:claude-opus",
        "skipped_files": [SkippedFile(path="dist/app.min.js", reason="minified")],
        "estimated_input_tokens": 12345,
        "estimated_cost_usd": 0.0456,
    }
    fields.update(overrides)
    return Plan(**fields)


HOSTILE = "evil\x1b[31mred\x1b]0;title\x07 [bold]markup[/bold] :smile: \u202eesrever\r\nnext"


def not_reviewed_review(**overrides: Any) -> Review:
    """A change in which every file was skipped: no model ran, verdict not_reviewed."""
    skipped = [
        SkippedFile(path="yarn.lock", reason="lock file"),
        SkippedFile(path="vendor/lib/a.go", reason="vendored code (vendor/, already vendored before this change)"),
    ]
    fields: dict[str, Any] = {
        "verdict": "not_reviewed",
        "tier": "trivial",
        "summary": "Nothing was reviewed: every changed file was skipped (yarn.lock: lock file; vendor/lib/a.go: "
        "vendored code). Nothing is approved; a human should look at this change.",
        "skipped_files": skipped,
        "usage": Usage(duration_s=0.1),
    }
    fields.update(overrides)
    return Review(**fields)
