"""What an operator watches of ``codejury serve`` (the embedded queue): its ``/metrics`` (build info, the
queue's depth and oldest waiting job, the reviews it ran, its job failures by reason class) and its log
lines as JSON (``--log-format json``), on a real uvicorn, the fake GitLab and the scripted model."""

from __future__ import annotations

import asyncio
import io
import json
import platform
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner
from codejury_fakes.gitlab import FakeGitLab
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from codejury import __version__
from codejury.cli import cli
from codejury.service.commands import build_service
from codejury.service.jobs import JobRunner, ReviewSetup
from codejury.service.logs import ServiceLog, job_context
from codejury.service.webhooks import ReviewRequest
from codejury.telemetry.service_metrics import JobMetrics, QueueDepth, QueueMetrics
from codejury.testing.scripted import Final, Raw, ScriptedResolver, Sleep
from tests.service.helpers import GITLAB_TOKEN, NEW, OLD, gitlab_delivery
from tests.service.helpers import gitlab_mr_event as mr_event
from tests.service.test_local_reviews import FINDING, gitlab_summaries, options, serving, until
from tests.timing import bounded

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def jobs(got: Samples) -> tuple[float, float]:
    return got[("codejury_review_jobs", (("state", "waiting"),))], got[
        ("codejury_review_jobs", (("state", "running"),))
    ]


@pytest.mark.waits
async def test_serve_exports_build_info_queue_depth_and_the_reviews_it_ran(gl: FakeGitLab, tmp_path: Path) -> None:
    scripted = ScriptedResolver(
        {"reviewer": [Sleep(1.5, Final([FINDING])), Final([FINDING])], "coordinator": [Raw({"decisions": []})]}
    )
    secret_env = {"CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN, "CODEJURY_GITLAB_WEBHOOK_TOKEN": GITLAB_TOKEN}
    opts = options(tmp_path, CODEJURY_GITLAB_URL=gl.url, **secret_env)
    stream = io.StringIO()
    log = ServiceLog("json", stream=stream, env=secret_env)
    url = f"{gl.url}/acme/widgets/-/merge_requests/7"
    with scripted.active():
        async with serving(build_service(opts, say=log)) as base, httpx2.AsyncClient(base_url=base) as c:
            got = samples((await c.get("/metrics")).text)
            assert got[("codejury_build_info", (("python", platform.python_version()), ("version", __version__)))] == 1
            assert jobs(got) == (0, 0) and got[("codejury_review_queue_up", ())] == 1
            for head in ("a" * 40, "b" * 40):  # the second push waits while the first one's review runs
                body, headers = gitlab_delivery(mr_event(url, head_sha=head))
                assert (await c.post("/webhooks/gitlab", content=body, headers=headers)).status_code == 202
            got = samples((await c.get("/metrics")).text)
            assert jobs(got) == (1, 1)
            assert 0 <= got[("codejury_review_oldest_waiting_job_age_seconds", ())] < 60
            # the forge gets the second push once the first job has read its head (its models are set up)
            await until(lambda: "scripted:reviewer" in scripted.resolved)
            gl.push(1, 7, files={"app.py": (OLD, NEW + "# second push\n")})
            await until(lambda: len(gitlab_summaries(gl)) >= 1)

            async def both_counted() -> Samples:
                for _ in range(200):
                    got = samples((await c.get("/metrics")).text)
                    if (
                        jobs(got) == (0, 0)
                        and sum(v for (n, _), v in got.items() if n == "codejury_reviews_total") == 2
                    ):
                        return got
                    await asyncio.sleep(0.05)
                raise AssertionError(f"not counted: {got}")

            got = await both_counted()
            assert got[("codejury_review_oldest_waiting_job_age_seconds", ())] == 0
            assert all(got[("codejury_review_job_failures_total", (("reason", r),))] == 0 for r in ("error", "refused"))
    lines = stream.getvalue().splitlines()
    entries = [json.loads(line) for line in lines]  # every line is one JSON object
    assert FakeGitLab.BOT_TOKEN not in stream.getvalue() and GITLAB_TOKEN not in stream.getvalue()
    done = [e for e in entries if e["message"].endswith("reviewed and published")]
    assert len(done) == 2 and {e["job"] for e in done} == {"gitlab:acme/widgets!7"}
    assert all(e["level"] == "info" and e["time"].endswith("Z") for e in done)


async def test_a_queue_that_does_not_answer_reads_as_down_within_the_bound() -> None:
    async def hung() -> QueueDepth:
        await asyncio.sleep(30)
        raise AssertionError("unreachable")

    queue = QueueMetrics(hung, timeout_s=0.2)
    registry = CollectorRegistry()
    registry.register(queue)
    with bounded(0.2, hung_s=30, what="the refresh"):  # the queue would answer after 30 s
        await queue.refresh()
    names = {m.name for m in registry.collect()}
    assert names == {"codejury_review_queue_up"}
    assert registry.get_sample_value("codejury_review_queue_up") == 0


async def test_jobs_that_publish_no_review_are_counted_by_reason(gl: FakeGitLab) -> None:
    registry = CollectorRegistry()
    runner = JobRunner(
        ReviewSetup(),
        {"CODEJURY_GITLAB_URL": gl.url, "CODEJURY_GITLAB_TOKEN": "wrong"},
        job_metrics=JobMetrics(registry),
    )
    try:
        foreign = ReviewRequest("gitlab", "https://elsewhere.example/a/b/-/merge_requests/1", "gitlab:a/b!1")
        assert (await runner.run(foreign)).startswith("refused")
        url = f"{gl.url}/acme/widgets/-/merge_requests/7"
        outcome = await runner.run(ReviewRequest("gitlab", url, "gitlab:acme/widgets!7"))
        assert outcome.startswith("not reviewed")
    finally:
        await runner.close()

    def failures(reason: str) -> float | None:
        return registry.get_sample_value("codejury_review_job_failures_total", {"reason": reason})

    assert failures("refused") == 1 and failures("not_reviewed") == 1
    assert failures("forge_unavailable") == failures("review_failed") == failures("error") == 0


def test_log_lines_are_scrubbed_and_carry_the_job_key(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    log = ServiceLog("json", stream=stream, env={"CODEJURY_GITLAB_TOKEN": "glpat-s3cr3t-value-0123"}, clock=lambda: 0.0)
    log("started")
    with job_context("gitlab:acme/widgets!7"):
        log("fetch failed: token glpat-s3cr3t-value-0123 refused")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first == {"time": "1970-01-01T00:00:00.000Z", "level": "info", "message": "started"}
    assert second["job"] == "gitlab:acme/widgets!7" and "s3cr3t" not in second["message"]
    text = io.StringIO()
    ServiceLog("text", stream=text, env={"CODEJURY_GITLAB_TOKEN": "glpat-s3cr3t-value-0123"})(
        "token glpat-s3cr3t-value-0123"
    )
    assert text.getvalue().startswith("codejury: token ") and "s3cr3t" not in text.getvalue()


def test_the_help_of_serve_and_worker_names_the_log_and_metrics_flags() -> None:
    serve = CliRunner().invoke(cli, ["serve", "--help"]).output
    worker = CliRunner().invoke(cli, ["worker", "--help"]).output
    assert "--log-format [text|json]" in serve and "--log-format [text|json]" in worker
    assert "--metrics-port PORT" in worker and "--metrics-host HOST" in worker
