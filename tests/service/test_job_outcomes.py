"""What a job's log line says when no reviewer succeeded: a partial review posted (the analyzers' hits, unchecked,
never an approval) or the failure note (nothing the analyzers found to post), on the fake GitLab serving git."""

from __future__ import annotations

from pathlib import Path

from codejury_fakes.gitlab import FakeGitLab
from pydantic_ai.exceptions import ModelHTTPError

from codejury.forges.markers import parse_summary
from codejury.service.jobs import JobRunner, ReviewSetup
from codejury.service.webhooks import ReviewRequest
from codejury.testing.scripted import Fail, ScriptedResolver
from tests.forges.test_ci_checkout import BASE, HEAD, upstream
from tests.service.test_local_reviews import SCRIPTED_PLUGIN

REFUSED = Fail(ModelHTTPError(401, "scripted", None))  # every reviewer's model refuses the key


async def _job(gl: FakeGitLab, tmp_path: Path, iid: int) -> tuple[str, str]:
    """One queued review of merge request ``iid`` with every model refusing; its log line and its summary."""
    env = {
        "CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN,
        "CODEJURY_GITLAB_URL": gl.url,
        "CODEJURY_REPO_CACHE": str(tmp_path / "repo-cache"),
        "CODEJURY_RECORD_URL": "none",
    }
    runner = JobRunner(ReviewSetup(model="scripted:reviewer", plugins=(SCRIPTED_PLUGIN,)), env)
    try:
        url = f"{gl.url}/acme/widgets/-/merge_requests/{iid}"
        with ScriptedResolver({"reviewer": [REFUSED], "coordinator": [REFUSED]}).active():
            outcome = await runner.run(ReviewRequest("gitlab", url, f"gitlab:acme/widgets!{iid}"))
    finally:
        await runner.close()
    notes = gl.notes(1, iid, system=False)
    [summary] = [n["body"] for n in notes if n["author"]["username"] == FakeGitLab.BOT and parse_summary(n["body"])]
    return outcome, summary


async def test_a_job_no_reviewer_answered_says_it_posted_the_analyzers_hits_as_a_partial_review(tmp_path: Path) -> None:
    repo, base, head = upstream(tmp_path)  # reports.py: %-built SQL, ruff's S608
    with FakeGitLab() as gl:
        gl.add_mr(1, 7, files={"reports.py": (BASE, HEAD)}, head_sha=head, base_sha=base)
        gl.serve_git("acme/widgets", repo)
        outcome, summary = await _job(gl, tmp_path, 7)
    assert outcome.startswith("review failed, partial review posted: no reviewer succeeded"), outcome
    assert "failure note" not in outcome
    assert "Review failed" not in summary and "S608" in summary


async def test_a_job_no_reviewer_answered_and_no_analyzer_hit_says_it_posted_the_failure_note(tmp_path: Path) -> None:
    with FakeGitLab() as gl:
        gl.add_mr(1, 7, files={"NOTES.md": ("Notes.\n", "Notes, and more notes.\n")})
        outcome, summary = await _job(gl, tmp_path, 7)
    assert outcome.startswith("review failed, failure note posted: no reviewer succeeded"), outcome
    assert "Review failed" in summary
