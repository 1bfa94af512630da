"""Prometheus metrics of a review: counted from a real scripted review, pushed to a fake
Pushgateway that checks what the real one checks, and written as a node-exporter textfile."""

from __future__ import annotations

import base64
import dataclasses
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from codejury.findings import Review
from codejury.record.events import EventLog
from codejury.telemetry.metrics import MetricsRecorder, ReviewMetrics, render_metrics
from codejury.testing.scripted import Raw, ToolCall, finding
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review
from tests.telemetry.fakes import FakePushgateway, is_text_format

PATH = "app/auth/users.py"  # full tier: every specialist runs


async def scripted_review(tmp_path: Path) -> tuple[Review, EventLog]:
    scripts = {
        "security": [
            ToolCall("read_patch", {"path": PATH}),
            Raw({"findings": [finding(PATH, 10, "SQL injection", severity="critical", category="security")]}),
        ],
        "performance": [Raw({"findings": [finding(PATH, 11, "Query per call", severity="warning")]})],
        "coordinator": [Raw({"decisions": []})],
    }
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    change = dataclasses.replace(change, meta=dataclasses.replace(change.meta, repository="acme/shop"))
    result, _, events = await run_review(change, scripts)
    assert isinstance(result, Review)
    events.emit("model_failback", from_model="scripted:security", to_model="scripted:old", reason="529")
    events.emit("breaker", model="scripted:old", from_state="closed", to_state="open")
    return result, events


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, keyed by name and sorted labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_a_review_is_counted_by_tier_verdict_tokens_findings_failbacks_and_breakers(tmp_path: Path) -> None:
    review, events = await scripted_review(tmp_path)
    metrics = ReviewMetrics()
    metrics.observe(review, events.events)
    body, content_type = render_metrics(metrics.registry)
    assert content_type.startswith("text/plain; version=0.0.4")
    got = samples(body.decode())
    assert got[("codejury_reviews_total", (("tier", "full"), ("verdict", "requested_changes")))] == 1
    assert got[("codejury_findings_total", (("reviewer", "security"), ("severity", "critical")))] == 1
    assert got[("codejury_findings_total", (("reviewer", "performance"), ("severity", "warning")))] == 1
    security = next(r for r in review.reviewers if r.name == "security")
    tokens = ("codejury_tokens_total", (("kind", "input"), ("model", "scripted:security")))
    assert got[tokens] == security.input_tokens > 0
    assert got[("codejury_agent_runs_total", (("agent", "security"), ("status", "ok")))] == 1
    assert got[("codejury_failbacks_total", (("from_model", "scripted:security"), ("to_model", "scripted:old")))] == 1
    assert got[("codejury_breaker_state", (("codejury_breaker_state", "open"), ("model", "scripted:old")))] == 1
    # a model that answered and whose breaker never moved is closed
    assert got[("codejury_breaker_state", (("codejury_breaker_state", "closed"), ("model", "scripted:security")))] == 1
    assert got[("codejury_review_duration_seconds_count", (("tier", "full"),))] == 1
    assert got[("codejury_review_cost_usd_count", (("tier", "full"),))] == 1
    # a second review in the same registry (a review service) adds up; a fresh registry starts at zero
    metrics.observe(review, [])
    assert (
        samples(render_metrics(metrics.registry)[0].decode())[
            ("codejury_reviews_total", (("tier", "full"), ("verdict", "requested_changes")))
        ]
        == 2
    )
    assert not any(
        name == "codejury_reviews_total" for name, _ in samples(render_metrics(ReviewMetrics().registry)[0].decode())
    )


async def test_openmetrics_is_served_when_the_scraper_asks_for_it(tmp_path: Path) -> None:
    review, events = await scripted_review(tmp_path)
    metrics = ReviewMetrics()
    metrics.observe(review, events.events)
    body, content_type = render_metrics(metrics.registry, "application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text")
    assert body.rstrip().endswith(b"# EOF")


async def test_push_puts_the_text_format_to_the_job_grouped_by_repository(tmp_path: Path) -> None:
    review, events = await scripted_review(tmp_path)
    warnings: list[str] = []
    with FakePushgateway() as gateway:
        MetricsRecorder(push_url=gateway.origin, warn=warnings.append).record(review, events.events)
    assert warnings == [] and gateway.refused == []
    [push] = gateway.pushes
    assert push.method == "PUT" and is_text_format(push.content_type)
    # "acme/shop" has a slash: the grouping value travels base64-encoded, as the Pushgateway wants it
    encoded = base64.urlsafe_b64encode(b"acme/shop").decode()
    assert push.path == f"/metrics/job/codejury/repository@base64/{encoded}"
    assert push.grouping == {"job": "codejury", "repository": "acme/shop"}
    reviews = push.families["codejury_reviews"]
    assert [(s.labels, s.value) for s in reviews.samples if s.name == "codejury_reviews_total"] == [
        ({"tier": "full", "verdict": "requested_changes"}, 1.0)
    ]


async def test_credentials_in_the_push_url_go_as_basic_auth_and_never_into_a_warning(tmp_path: Path) -> None:
    review, events = await scripted_review(tmp_path)
    seen: list[str] = []
    with FakePushgateway() as gateway:
        original = gateway.handle

        def spy(h, method):  # type: ignore[no-untyped-def]
            seen.append(h.headers.get("Authorization", ""))
            original(h, method)

        gateway.handle = spy  # type: ignore[method-assign]
        url = gateway.origin.replace("http://", "http://ci:hunter2-pass@")
        MetricsRecorder(push_url=url, warn=seen.append).record(review, events.events)
    assert seen == ["Basic " + base64.b64encode(b"ci:hunter2-pass").decode()]
    warnings: list[str] = []
    MetricsRecorder(push_url="http://ci:hunter2-pass@127.0.0.1:9/", warn=warnings.append).record(review, events.events)
    assert len(warnings) == 1 and "hunter2" not in warnings[0]
    assert warnings[0].startswith("metrics: could not push to the Pushgateway at http://127.0.0.1:9/")


async def test_an_unreachable_or_silent_pushgateway_costs_one_warning_and_at_most_two_seconds(tmp_path: Path) -> None:
    review, events = await scripted_review(tmp_path)
    warnings: list[str] = []
    with FakePushgateway(hang=True) as gateway:
        started = time.monotonic()
        MetricsRecorder(push_url=gateway.origin, warn=warnings.append).record(review, events.events)
        took = time.monotonic() - started
    assert took < 2.0
    assert len(warnings) == 1 and "(the review is not affected)" in warnings[0]


async def test_the_textfile_is_written_atomically_in_the_text_format(tmp_path: Path) -> None:
    review, events = await scripted_review(tmp_path)
    target = tmp_path / "textfile" / "codejury.prom"
    target.parent.mkdir()
    target.write_text("# an older run's metrics\n")
    MetricsRecorder(textfile=target).record(review, events.events)
    assert sorted(p.name for p in target.parent.iterdir()) == ["codejury.prom"]  # no temporary file left
    got = samples(target.read_text())
    assert got[("codejury_reviews_total", (("tier", "full"), ("verdict", "requested_changes")))] == 1


async def test_an_unwritable_textfile_is_one_warning(tmp_path: Path) -> None:
    review, events = await scripted_review(tmp_path)
    warnings: list[str] = []
    MetricsRecorder(textfile=tmp_path / "gone" / "x.prom", warn=warnings.append).record(review, events.events)
    assert len(warnings) == 1
    assert warnings[0].startswith(f"metrics: could not write the metrics textfile {tmp_path / 'gone' / 'x.prom'}: ")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--metrics-push", "ftp://gateway"], "--metrics-push expects the http:// or https:// URL"),
        (["--metrics-push", "http://"], "--metrics-push expects the http:// or https:// URL"),
        (["--metrics-textfile", "/nonexistent-dir/x.prom"], "cannot write --metrics-textfile"),
    ],
)
def test_bad_metrics_flags_are_refused_before_the_review_with_exit_2(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    from click.testing import CliRunner

    from codejury.cli import cli
    from tests.engine_helpers import unified_diff

    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff(PATH, AUTH_OLD, AUTH_NEW))
    result = CliRunner().invoke(cli, ["review", "--diff", str(diff), *flags])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr
