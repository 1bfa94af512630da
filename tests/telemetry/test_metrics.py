"""Prometheus metrics of a review: counted from a real scripted review (a long-running process's counters),
and a one-shot review's last-run gauges pushed to a fake Pushgateway that checks what the real one checks,
or written as a node-exporter textfile."""

from __future__ import annotations

import base64
import dataclasses
import time
from pathlib import Path

import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from codejury.findings import Review
from codejury.record.events import EventLog
from codejury.telemetry.last_run import EXPORT_TIMEOUT_S, LastRunRecorder
from codejury.telemetry.metrics import ReviewMetrics, render_metrics
from codejury.testing.scripted import Final, Raw, ScriptedResolver, ToolCall, finding
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review
from tests.telemetry.fakes import FakePushgateway, Push, is_text_format
from tests.timing import bounded

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


def counters(families: dict[str, Metric]) -> list[str]:
    return [name for name, family in families.items() if family.type in ("counter", "histogram", "summary")]


async def test_push_puts_the_last_run_gauges_to_the_job_grouped_by_repository(tmp_path: Path) -> None:
    review, events = await scripted_review(tmp_path)
    warnings: list[str] = []
    with FakePushgateway() as gateway:
        LastRunRecorder(push_url=gateway.origin, warn=warnings.append, clock=lambda: 1_750_000_000.0).record(
            review, events.events
        )
    assert warnings == [] and gateway.refused == []
    [push] = gateway.pushes
    assert push.method == "PUT" and is_text_format(push.content_type)
    # "acme/shop" has a slash: the grouping value travels base64-encoded, as the Pushgateway wants it
    encoded = base64.urlsafe_b64encode(b"acme/shop").decode()
    assert push.path == f"/metrics/job/codejury/repository@base64/{encoded}"
    assert push.grouping == {"job": "codejury", "repository": "acme/shop"}
    assert counters(push.families) == []  # a batch job's counter would start at 1 every run
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in push.families.values() for s in f.samples}
    assert got[("codejury_last_review_timestamp_seconds", ())] == 1_750_000_000.0
    assert got[("codejury_last_review_verdict", (("verdict", "requested_changes"),))] == 1
    assert got[("codejury_last_review_verdict", (("verdict", "approved"),))] == 0
    assert got[("codejury_last_review_tier", (("tier", "full"),))] == 1
    assert got[("codejury_last_review_findings", (("severity", "critical"),))] == 1
    assert got[("codejury_last_review_findings", (("severity", "warning"),))] == 1
    assert got[("codejury_last_review_findings", (("severity", "suggestion"),))] == 0
    assert got[("codejury_last_review_duration_seconds", ())] == review.usage.duration_s
    assert got[("codejury_last_review_cost_usd", ())] == review.usage.cost_usd
    assert got[("codejury_last_review_tokens", (("kind", "input"),))] == review.usage.input_tokens > 0


async def test_pushes_of_two_repositories_keep_each_repositorys_last_run(tmp_path: Path) -> None:
    review, events = await scripted_review(tmp_path)
    other = review.model_copy(update={"verdict": "approved", "findings": []})
    other_events = [{"type": "change", "repository": "acme/billing"}]
    with FakePushgateway() as gateway:
        LastRunRecorder(push_url=gateway.origin, clock=lambda: 100.0).record(review, events.events)
        LastRunRecorder(push_url=gateway.origin, clock=lambda: 200.0).record(other, other_events)
    shop = gateway.groups[(("job", "codejury"), ("repository", "acme/shop"))]
    billing = gateway.groups[(("job", "codejury"), ("repository", "acme/billing"))]
    assert shop["codejury_last_review_timestamp_seconds"].samples[0].value == 100.0
    assert billing["codejury_last_review_timestamp_seconds"].samples[0].value == 200.0
    verdicts = {s.labels["verdict"]: s.value for s in billing["codejury_last_review_verdict"].samples}
    assert verdicts["approved"] == 1 and verdicts["requested_changes"] == 0


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
        LastRunRecorder(push_url=url, warn=seen.append).record(review, events.events)
    assert seen == ["Basic " + base64.b64encode(b"ci:hunter2-pass").decode()]
    warnings: list[str] = []
    LastRunRecorder(push_url="http://ci:hunter2-pass@127.0.0.1:9/", warn=warnings.append).record(review, events.events)
    assert len(warnings) == 1 and "hunter2" not in warnings[0]
    assert warnings[0].startswith("metrics: could not push to the Pushgateway at http://127.0.0.1:9/")


@pytest.mark.waits
async def test_an_unreachable_or_silent_pushgateway_costs_one_warning_and_at_most_two_seconds(tmp_path: Path) -> None:
    review, events = await scripted_review(tmp_path)
    warnings: list[str] = []
    # the gateway is silent until it stops, 60 s at most
    with FakePushgateway(hang=True) as gateway, bounded(EXPORT_TIMEOUT_S, hung_s=60, what="the push"):
        LastRunRecorder(push_url=gateway.origin, warn=warnings.append).record(review, events.events)
    assert len(warnings) == 1 and "(the review is not affected)" in warnings[0]
    assert "no answer within 1.8 s" in warnings[0] or "timed out" in warnings[0], warnings  # its own bound fired


async def test_the_textfile_holds_the_last_run_gauges_with_the_repository_written_atomically(tmp_path: Path) -> None:
    review, events = await scripted_review(tmp_path)
    target = tmp_path / "textfile" / "codejury.prom"
    target.parent.mkdir()
    target.write_text("# an older run's metrics\n")
    LastRunRecorder(textfile=target, clock=lambda: 42.0).record(review, events.events)
    assert sorted(p.name for p in target.parent.iterdir()) == ["codejury.prom"]  # no temporary file left
    families = {f.name: f for f in text_string_to_metric_families(target.read_text())}
    assert counters(families) == []
    got = samples(target.read_text())
    assert got[("codejury_last_review_timestamp_seconds", (("repository", "acme/shop"),))] == 42.0
    verdict = ("codejury_last_review_verdict", (("repository", "acme/shop"), ("verdict", "requested_changes")))
    assert got[verdict] == 1


async def test_an_unwritable_textfile_is_one_warning(tmp_path: Path) -> None:
    review, events = await scripted_review(tmp_path)
    warnings: list[str] = []
    LastRunRecorder(textfile=tmp_path / "gone" / "x.prom", warn=warnings.append).record(review, events.events)
    assert len(warnings) == 1
    assert warnings[0].startswith(f"metrics: could not write the metrics textfile {tmp_path / 'gone' / 'x.prom'}: ")


def cli_review(diff: Path, gateway: FakePushgateway, reviewer: list[Final]) -> None:
    """One ``codejury review --diff … --metrics-push …`` on scripted models, in process."""
    from click.testing import CliRunner

    from codejury.cli import cli

    resolver = ScriptedResolver({"reviewer": reviewer, "coordinator": [Raw({"decisions": []})]})
    flags = ["--plugin", "codejury.testing.scripted", "--model", "scripted:reviewer"]
    flags += ["--model-for", "coordinator=scripted:coordinator", "--metrics-push", gateway.origin]
    with resolver.active():
        result = CliRunner().invoke(cli, ["review", "--diff", str(diff), "--format", "json", *flags])
    assert result.exit_code in (0, 1), result.stderr
    assert "metrics:" not in result.stderr


def test_two_cli_pushes_each_carry_their_own_last_run_and_no_counter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.engine_helpers import unified_diff

    monkeypatch.setenv("CODEJURY_RECORD_URL", "none")
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff("app.py", "a = 1\nb = 2\n", "a = 1\nb = input()\n"))
    warning = finding("app.py", 2, "Unchecked input", severity="warning", category="validation")
    with FakePushgateway() as gateway:
        cli_review(diff, gateway, [Final([warning])])
        cli_review(diff, gateway, [Final([])])
    assert gateway.refused == []
    first, second = gateway.pushes
    assert first.method == second.method == "PUT"  # each run replaces its group: the last run is what it holds
    for push in (first, second):
        assert counters(push.families) == [], "a counter from a fresh process restarts at 1 every run"
        assert "codejury_reviews" not in push.families

    def value(push: Push, name: str, **labels: str) -> float:
        return next(s.value for s in push.families[name].samples if s.labels == labels)

    assert value(first, "codejury_last_review_findings", severity="warning") == 1
    assert value(second, "codejury_last_review_findings", severity="warning") == 0
    assert value(first, "codejury_last_review_verdict", verdict="approved") == 0
    assert value(second, "codejury_last_review_verdict", verdict="approved") == 1
    assert (
        value(second, "codejury_last_review_timestamp_seconds")
        >= value(first, "codejury_last_review_timestamp_seconds")
        > time.time() - 300
    )
    [group] = gateway.groups.values()  # what Prometheus scrapes from the gateway: the second run, whole
    assert group["codejury_last_review_findings"].samples == second.families["codejury_last_review_findings"].samples


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


async def test_label_values_are_snake_case_and_no_created_series_is_exported(tmp_path: Path) -> None:
    from prometheus_client import CollectorRegistry

    from codejury.telemetry.service_metrics import JobMetrics

    review, events = await scripted_review(tmp_path)
    dropped = {"failed verification": 2, "analyzer hits over the per-review check limit": 1, "dropped by judge": 1}
    review = review.model_copy(update={"dropped_findings": dropped})
    metrics = ReviewMetrics()
    metrics.observe(review, events.events)
    jobs = CollectorRegistry()
    JobMetrics(jobs).failed("forge_unavailable")
    for registry in (metrics.registry, jobs):
        text = render_metrics(registry)[0].decode()
        found = samples(text)
        assert not [name for name, _ in found if name.endswith("_created")], text
        assert not [labels for _, labels in found if any(" " in value for _, value in labels)], text
    found = samples(render_metrics(metrics.registry)[0].decode())
    assert found[("codejury_findings_dropped_total", (("reason", "failed_verification"),))] == 2
    assert (
        found[("codejury_findings_dropped_total", (("reason", "analyzer_hits_over_the_per_review_check_limit"),))] == 1
    )
    assert found[("codejury_findings_dropped_total", (("reason", "dropped_by_judge"),))] == 1
