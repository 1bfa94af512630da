"""Daily caps and the kill switch: whole ``codejury review --url … --publish`` runs against the fake
GitLab and GitHub, with the scripted model, a SQLite review store and a routing document on loopback.

A refused review calls no model, is published as not reviewed (an earlier approval withdrawn),
exits as a ``not_reviewed`` review does, says why in one stderr line and one event, and is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from codejury_fakes.github import FakeGitHub
from codejury_fakes.gitlab import FakeGitLab
from codejury_fakes.routing_server import RoutingServer
from sqlalchemy import select

from codejury.record import schema
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from codejury.testing.review_seed import write_reviews
from tests.forges.test_github_bot import bot_reviews
from tests.forges.test_github_bot import gh as gh  # noqa: F401  (the fixture)
from tests.forges.test_github_bot import run as github_run
from tests.forges.test_github_bot import summary as github_summary
from tests.forges.test_gitlab_bot import B
from tests.forges.test_gitlab_bot import gl as gl  # noqa: F401  (the fixture)
from tests.forges.test_gitlab_bot import run as gitlab_run
from tests.forges.test_gitlab_bot import summary as gitlab_summary


@pytest.fixture
def store_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'store' / 'reviews.sqlite3'}"
    monkeypatch.setenv("CODEJURY_RECORD_URL", url)
    return url


@pytest.fixture
def routing() -> Iterator[RoutingServer]:
    with RoutingServer() as server:
        yield server


def limits(tmp_path: Path, **caps: float) -> list[str]:
    """``--config`` with ``[limits]`` set to ``caps`` (analyzers off: the scripted model alone reviews)."""
    config = tmp_path / "limits.toml"
    config.write_text("analyzers = false\n[limits]\n" + "".join(f"{k} = {v}\n" for k, v in caps.items()))
    return ["--config", str(config)]


def stored(url: str) -> list[Any]:
    store = Store(parse_record_url(url))
    try:
        with store.connect() as conn:
            return list(conn.execute(select(schema.reviews).order_by(schema.reviews.c.id)))
    finally:
        store.close()


def held_slots(url: str) -> int:
    store = Store(parse_record_url(url))
    try:
        with store.connect() as conn:
            return len(list(conn.execute(select(schema.review_slots))))
    finally:
        store.close()


def gitlab_repository(gl: FakeGitLab) -> str:  # noqa: F811
    """The repository as a review of the fake GitLab's merge request names it (host, port and path)."""
    return gl.url.split("://", 1)[1] + "/acme/widgets"


def events_of(path: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["type"] == kind]


def refusal_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "not reviewed:" in line]


# -- the per-repository cap ------------------------------------------------------------------------------
def test_the_review_past_the_repository_cap_is_refused_and_withdraws_the_approval(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    store_url: str,
) -> None:
    caps = limits(tmp_path, reviews_per_day_per_repository=2)
    write_reviews(store_url, gitlab_repository(gl), 1)  # one review of this repository earlier today
    code, _, err = gitlab_run(gl, monkeypatch, [B], "--publish", *caps)
    assert code == 0, err
    assert gl.approvals(1, 7) == ["project_1_bot"]  # the second review of the day: approved
    assert refusal_lines(err) == []
    assert held_slots(store_url) == 0  # its record replaced the slot its admission reserved

    events = tmp_path / "events.jsonl"
    resolvers: list[Any] = []
    code, out, err = gitlab_run(
        gl, monkeypatch, [B], "--publish", *caps, "--format", "json", "--fail-on", "unreviewed",
        "--events", str(events), resolvers=resolvers,
    )  # fmt: skip

    assert code == 1  # --fail-on unreviewed fails a review nobody looked at
    day = datetime.now(UTC).date().isoformat()
    reason = f"the daily review cap of {gitlab_repository(gl)} is reached (2 of 2 on {day} UTC)"
    assert refusal_lines(err) == [f"codejury: not reviewed: {reason}"]
    review = json.loads(out)
    assert review["verdict"] == "not_reviewed"
    assert review["summary"] == f"Not reviewed: {reason}."
    assert review["findings"] == [] and review["reviewers"] == []
    assert all(m.calls == 0 for m in resolvers[0].models.values())  # no model was called
    assert gl.approvals(1, 7) == []  # the approval of the earlier review is withdrawn
    body = gitlab_summary(gl)["body"]
    assert f"Not reviewed: {reason}" in body and "does not approve it" in body
    [refused] = events_of(events, "review_refused")
    assert refused["control"] == "reviews_per_day_per_repository" and refused["reason"] == reason
    verdicts = [row.verdict for row in stored(store_url)]
    assert verdicts == ["requested_changes", "approved_with_comments", "not_reviewed"]  # the refusal is recorded too


def test_a_refused_review_exits_0_under_the_default_fail_on(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    store_url: str,
) -> None:
    write_reviews(store_url, gitlab_repository(gl), 3)
    code, out, err = gitlab_run(
        gl, monkeypatch, [B], "--publish", *limits(tmp_path, reviews_per_day_per_repository=3), "--format", "json",
        "--fail-on", "requested_changes",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["verdict"] == "not_reviewed"
    assert len(refusal_lines(err)) == 1
    assert gl.approvals(1, 7) == []


# -- the spend cap, the global cap, the next UTC day -------------------------------------------------------
def test_the_spend_cap_counts_the_recorded_cost(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    store_url: str,
) -> None:
    write_reviews(store_url, gitlab_repository(gl), 2, cost=0.75)  # $1.50 spent today; reviews alone are far from a cap
    caps = limits(tmp_path, reviews_per_day_per_repository=100, spend_per_day_per_repository_usd=1.5)
    code, out, err = gitlab_run(gl, monkeypatch, [B], "--publish", *caps, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["verdict"] == "not_reviewed"
    assert "daily spend cap" in refusal_lines(err)[0] and "$1.50 of $1.50" in refusal_lines(err)[0]

    code, out, err = gitlab_run(
        gl, monkeypatch, [B], "--publish", *limits(tmp_path, spend_per_day_per_repository_usd=1.6), "--format", "json"
    )
    assert code == 0, err
    assert json.loads(out)["verdict"] == "approved_with_comments"  # $1.50 of $1.60: room left


def test_the_global_cap_counts_every_repository(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    store_url: str,
) -> None:
    write_reviews(store_url, "gitlab.example.com/shop/api", 2)
    write_reviews(store_url, "github.com/acme/other", 1)
    caps = limits(tmp_path, reviews_per_day=3, reviews_per_day_per_repository=10)
    code, out, err = gitlab_run(gl, monkeypatch, [B], "--publish", *caps, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["verdict"] == "not_reviewed"
    day = datetime.now(UTC).date().isoformat()
    assert refusal_lines(err) == [f"codejury: not reviewed: the daily review cap is reached (3 of 3 on {day} UTC)"]


def test_reviews_of_an_earlier_utc_day_do_not_count(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    store_url: str,
) -> None:
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    write_reviews(store_url, gitlab_repository(gl), 5, at=today - timedelta(seconds=1))  # 23:59:59 UTC yesterday
    code, out, err = gitlab_run(
        gl, monkeypatch, [B], "--publish", *limits(tmp_path, reviews_per_day_per_repository=5), "--format", "json"
    )
    assert code == 0, err
    assert json.loads(out)["verdict"] == "approved_with_comments"
    assert refusal_lines(err) == []
    assert gl.approvals(1, 7) == ["project_1_bot"]


def test_a_dry_run_says_what_the_cap_would_do_and_refuses_nothing(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    store_url: str,
) -> None:
    write_reviews(store_url, gitlab_repository(gl), 1)
    code, out, err = gitlab_run(
        gl, monkeypatch, [B], *limits(tmp_path, reviews_per_day_per_repository=1), "--dry-run", "--format", "json"
    )
    assert code == 0, err
    plan = json.loads(out)
    assert plan["refusal"].startswith(f"the daily review cap of {gitlab_repository(gl)} is reached (1 of 1")
    assert [line for line in err.splitlines() if "refused" in line] == [
        f"codejury: dry run: a review now would be refused: {plan['refusal']}"
    ]
    assert len(stored(store_url)) == 1  # a plan is not recorded


def test_a_store_that_cannot_count_lets_the_review_run_with_one_warning(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("CODEJURY_RECORD_URL", "none")
    code, out, err = gitlab_run(
        gl, monkeypatch, [B], "--publish", *limits(tmp_path, reviews_per_day=1), "--format", "json"
    )
    assert code == 0, err
    assert json.loads(out)["verdict"] == "approved_with_comments"
    assert [line for line in err.splitlines() if "caps" in line] == [
        "codejury: daily caps not checked, the review runs: record.url is none: nothing counts the reviews"
    ]


# -- the kill switch --------------------------------------------------------------------------------------
def test_the_kill_switch_stops_the_review_before_any_model_and_withdraws_the_approval(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    store_url: str,
    routing: RoutingServer,
) -> None:
    code, _, err = github_run(gh, monkeypatch, [B], "--publish")
    assert code == 0, err
    assert bot_reviews(gh) == ["APPROVED"]

    routing.body = json.dumps({"kill_switch": True, "reason": "provider incident, reviews paused"}).encode()
    events = tmp_path / "events.jsonl"
    code, out, err = github_run(
        gh, monkeypatch, [B], "--publish", "--remote-config", routing.url, "--format", "json",
        "--fail-on", "unreviewed", "--events", str(events),
    )  # fmt: skip

    assert code == 1
    reason = "the kill switch is on (provider incident, reviews paused)"
    assert refusal_lines(err) == [f"codejury: not reviewed: {reason}"]
    assert json.loads(out)["verdict"] == "not_reviewed"
    assert [r.state for r in gh.reviews(7) if r.state == "APPROVED"] == []  # dismissed
    assert f"Not reviewed: {reason}" in github_summary(gh)
    runs = gh.check_runs()
    assert runs[-1].conclusion == "failure" and runs[-1].title == f"not reviewed: {reason}"
    assert [e["control"] for e in events_of(events, "review_refused")] == ["kill_switch"]
    assert events_of(events, "agent_started") == [] and routing.hits == 1  # no reviewer started
    assert [row.verdict for row in stored(store_url)][-1] == "not_reviewed"


def test_a_kill_switch_for_other_repositories_lets_this_one_through(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    routing: RoutingServer,
) -> None:
    routing.body = json.dumps({"kill_switch": ["shop/api"], "reason": "runaway"}).encode()
    code, out, err = gitlab_run(gl, monkeypatch, [B], "--remote-config", routing.url, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["verdict"] == "approved_with_comments"

    routing.body = json.dumps({"kill_switch": ["shop/api", "ACME/widgets"]}).encode()
    code, out, err = gitlab_run(gl, monkeypatch, [B], "--remote-config", routing.url, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["verdict"] == "not_reviewed"
    assert refusal_lines(err) == ["codejury: not reviewed: the kill switch is on"]


def test_a_malformed_kill_switch_is_one_warning_and_the_review_runs(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    routing: RoutingServer,
) -> None:
    routing.body = json.dumps({"kill_switch": "yes"}).encode()
    code, out, err = gitlab_run(gl, monkeypatch, [B], "--remote-config", routing.url, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["verdict"] == "approved_with_comments"
    assert "remote config ignored ('kill_switch' must be true, false or a list of repositories)" in err


# -- the review service ----------------------------------------------------------------------------------
async def test_a_service_job_over_the_cap_publishes_not_reviewed_and_says_so_in_its_log_line(
    gl: FakeGitLab,  # noqa: F811
    tmp_path: Path,
    store_url: str,
) -> None:
    from codejury.service.jobs import JobRunner, ReviewSetup
    from codejury.service.webhooks import ReviewRequest
    from codejury.testing.scripted import Final, Raw, ScriptedResolver

    write_reviews(store_url, gitlab_repository(gl), 4, cost=1.0)
    config = tmp_path / "service.toml"
    config.write_text("analyzers = false\n[limits]\nspend_per_day_usd = 4.0\n")
    env = {"CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN, "CODEJURY_GITLAB_URL": gl.url}
    setup = ReviewSetup(
        model="scripted:reviewer", model_for=("coordinator=scripted:coordinator",),
        plugins=("codejury.testing.scripted",), config_file=config, record_url=store_url,
    )  # fmt: skip
    resolver = ScriptedResolver({"reviewer": [Final([B])], "coordinator": [Raw({"decisions": []})]})
    runner = JobRunner(setup, {**env, "CODEJURY_RECORD_URL": ""})
    try:
        with resolver.active():
            outcome = await runner.run(
                ReviewRequest("gitlab", f"{gl.url}/acme/widgets/-/merge_requests/7", "gitlab:acme/widgets!7")
            )
    finally:
        await runner.close()
    day = datetime.now(UTC).date().isoformat()
    assert outcome == f"not reviewed, published as such: the daily spend cap is reached ($4.00 of $4.00 on {day} UTC)"
    assert gl.approvals(1, 7) == []
    assert "the daily spend cap is reached" in gitlab_summary(gl)["body"]
    assert [row.verdict for row in stored(store_url)][-1] == "not_reviewed"
    assert all(m.calls == 0 for m in resolver.models.values())
