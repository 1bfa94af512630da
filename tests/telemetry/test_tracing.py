"""Traces of a review with the real OpenTelemetry SDK, exported over loopback to a fake OTLP/HTTP
collector that decodes each ExportTraceServiceRequest: span names, parent/child structure, GenAI
attributes, and no secret (or, by default, no prompt text) in any attribute."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from codejury.config import Settings
from codejury.findings import Review
from codejury.pipeline import ReviewOptions, review
from codejury.plugins import Plugins
from codejury.record.events import EventLog
from codejury.secrets import secret_values
from codejury.telemetry import tracing
from codejury.telemetry.otlp import FLUSH_TIMEOUT_S
from codejury.telemetry.tracing import start_tracing, traces_endpoint
from codejury.testing.scripted import Raw, ScriptedResolver, Step, ToolCall, finding
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, scripted_settings
from tests.telemetry.fakes import FakeCollector, SpanRecord
from tests.timing import FOREVER, limit

PATH = "app/auth/users.py"
ENV_SECRET = "ci-deploy-credential-7f3a9c2e41"  # the value of a *_TOKEN variable: a known secret
MARKER = "marker_text_from_the_change_1234"
NEW = AUTH_NEW + f'\n\nDEPLOY = "{ENV_SECRET}"  # {MARKER}\n'

SCRIPTS: dict[str, list[Step]] = {
    "security": [
        ToolCall("read_file", {"path": PATH, "start_line": 1, "end_line": 20}),
        Raw({"findings": [finding(PATH, 10, "SQL injection", severity="critical", category="security")]}),
    ],
    "coordinator": [Raw({"decisions": []})],
}


async def traced_review(
    tmp_path: Path, collector: FakeCollector, settings: Settings | None = None
) -> tuple[Review, list[SpanRecord], list[str]]:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.origin, "DEPLOY_TOKEN": ENV_SECRET}
    warnings: list[str] = []
    settings = settings or scripted_settings()
    with EventLog(None, run_id="traced", secrets=secret_values(env)) as events:
        handle = start_tracing(env, include_content=settings.record_prompts, redact=events.redact)
        assert handle is not None
        try:
            opts = ReviewOptions(
                settings=settings,
                env=env,
                events=events,
                warn=warnings.append,
                plugins=Plugins(ScriptedResolver(SCRIPTS).plugin_manager()),
            )
            result = await review(make_change(tmp_path, {PATH: (AUTH_OLD, NEW)}), opts)
        finally:
            handle.close(warnings.append)
    assert isinstance(result, Review)
    return result, list(collector.spans), warnings


def by_name(spans: Sequence[SpanRecord]) -> dict[str, list[SpanRecord]]:
    out: dict[str, list[SpanRecord]] = {}
    for s in spans:
        out.setdefault(s.name, []).append(s)
    return out


def all_text(spans: Sequence[SpanRecord]) -> str:
    def text(values: Mapping[str, Any]) -> str:
        return json.dumps(values, default=str)

    return "\n".join(
        [s.name + s.status_message + text(s.attributes) + "".join(n + text(a) for n, a in s.events) for s in spans]
    )


async def test_a_review_is_one_trace_of_stage_spans_with_gen_ai_model_and_tool_spans(tmp_path: Path) -> None:
    with FakeCollector() as collector:
        result, spans, warnings = await traced_review(tmp_path, collector)
    assert warnings == []
    assert {(m, p, c) for m, p, c in collector.requests} == {("POST", "/v1/traces", "application/x-protobuf")}
    named = by_name(spans)
    [root] = named["codejury.review"]
    assert root.parent_id == "" and len({s.trace_id for s in spans}) == 1
    assert root.attributes["codejury.tier"] == "full" and root.attributes["codejury.verdict"] == result.verdict
    assert root.attributes["codejury.findings"] == len(result.findings)
    stages = ["configure", "filter", "tier", "reviewers", "evidence", "judge", "verdict", "publish", "record"]
    for stage in stages:
        [span] = named[f"codejury.{stage}"]
        assert span.parent_id == root.span_id, stage
    reviewers = named["codejury.reviewers"][0]
    # one invoke_agent span per reviewer, under the reviewers stage, named after the reviewer
    agents = {s.attributes["gen_ai.agent.name"]: s for s in spans if s.name.startswith("invoke_agent ")}
    assert {"security", "performance", "code_quality", "documentation"} <= agents.keys()
    assert all(agents[n].parent_id == reviewers.span_id for n in ("security", "performance"))
    assert agents["coordinator"].parent_id == named["codejury.judge"][0].span_id
    security = agents["security"]
    chats = [s for s in spans if s.name.startswith("chat ") and s.parent_id == security.span_id]
    assert len(chats) == 2  # the tool call, then the findings
    for chat in chats:
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"]
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
    [tool] = [s for s in spans if s.name == "execute_tool read_file"]
    assert tool.parent_id == security.span_id and tool.attributes["gen_ai.tool.name"] == "read_file"
    # no prompt, response or tool content by default, and never the secret
    text = all_text(spans)
    assert ENV_SECRET not in text and MARKER not in text and "SELECT name, hash" not in text


async def test_with_record_prompts_the_content_is_traced_but_a_known_secret_still_is_not(tmp_path: Path) -> None:
    with FakeCollector() as collector:
        _, spans, _ = await traced_review(tmp_path, collector, scripted_settings(record_prompts=True))
    text = all_text(spans)
    assert MARKER in text  # the change's text is in the prompt attributes now
    assert ENV_SECRET not in text and "[REDACTED]" in text


async def test_a_collector_that_refuses_costs_one_warning_line_and_the_review_goes_on(tmp_path: Path) -> None:
    with FakeCollector(status=400) as collector:
        started = time.monotonic()
        result, spans, warnings = await traced_review(tmp_path, collector)
        took = time.monotonic() - started
    assert result.verdict == "requested_changes" and spans == []
    assert len(warnings) == 1
    assert warnings[0].startswith(f"traces: could not export to {collector.origin}/v1/traces: ")
    assert took < limit(FLUSH_TIMEOUT_S, hung_s=FOREVER)  # a refused export is not retried, and the flush is cut


def test_tracing_is_off_without_the_standard_variables_and_with_them_turned_off() -> None:
    assert traces_endpoint({}) is None
    assert start_tracing({"OTEL_SERVICE_NAME": "x"}) is None
    assert tracing.span("filter") is tracing.span("judge")  # the one shared no-op
    assert traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == "http://c:4318/v1/traces"
    assert traces_endpoint({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/x"}) == "http://c:4318/x"
    off = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}
    assert traces_endpoint({**off, "OTEL_SDK_DISABLED": "true"}) is None
    assert traces_endpoint({**off, "OTEL_TRACES_EXPORTER": "none"}) is None


def test_the_review_path_does_not_import_the_sdk_while_tracing_is_off() -> None:
    code = (
        "import sys, codejury.pipeline, codejury.cli\n"
        "print(any(m.startswith('opentelemetry.sdk') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
