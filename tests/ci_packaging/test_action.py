"""The GitHub Action (action.yml): its inputs and outputs, pinned actions, its steps run against a stub, and a
whole run of the real CLI on the scripted model and a fake GitHub."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any, get_args

import pytest

from codejury.findings import Verdict
from tests.ci_packaging.helpers import (
    ACTION,
    EXIT_CODES,
    EXPRESSION,
    NEW,
    OLD,
    PINNED_USES,
    SCRIPTED_MODEL_ARGS,
    action_step,
    assert_each_report_given,
    codejury_flags,
    load_action,
    review_help,
    run_bash,
    scripted_findings,
    write_test_reports,
)

# --- the GitHub Action ------------------------------------------------------------------------------


def test_action_is_composite_with_shells_and_no_interpolation_in_scripts() -> None:
    action = load_action()
    assert action["runs"]["using"] == "composite"
    for step in action["runs"]["steps"]:
        if "run" not in step:
            assert "uses" in step
            continue
        assert step.get("shell") == "bash", f"step {step.get('name')!r} has no shell"
        script = step["run"]
        # Script injection guard: inputs and event data reach scripts through env only.
        for expression in EXPRESSION.findall(script):
            pytest.fail(f"${{{{ {expression} }}}} interpolated into the script of {step.get('name')!r}")


def test_action_inputs_are_declared_and_used() -> None:
    action = load_action()
    declared = set(action["inputs"])
    text = ACTION.read_text(encoding="utf-8")
    expressions = [*EXPRESSION.findall(text), *(str(s.get("if", "")) for s in action["runs"]["steps"])]
    used = set(re.findall(r"\binputs\.([A-Za-z0-9_-]+)", "\n".join(expressions)))
    assert used <= declared, f"used but not declared: {sorted(used - declared)}"
    assert declared <= used, f"declared but never used: {sorted(declared - used)}"
    assert {"version", "python-version", "config", "fail-on", "max-inline", "sarif", "tests", "extra-args"} <= declared
    assert action["inputs"]["tests"]["default"] == ""
    for name, spec in action["inputs"].items():
        assert spec.get("description"), f"input {name} has no description"


def test_action_outputs_come_from_existing_steps() -> None:
    action = load_action()
    ids = {step.get("id") for step in action["runs"]["steps"]}
    assert set(action["outputs"]) == {"verdict", "exit-code", "events", "sarif"}
    for name, spec in action["outputs"].items():
        match = re.fullmatch(r"\$\{\{\s*steps\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}", spec["value"])
        assert match, f"output {name}"
        assert match.group(1) in ids


def test_action_command_flags_exist() -> None:
    action = load_action()
    script = action_step(action, "review")["run"]
    assert re.search(r"codejury\"? review\b", script)
    flags = codejury_flags(script)
    assert {"--publish", "--fail-on", "--max-inline", "--format", "--output", "--config", "--tests"} <= flags
    help_text = review_help()
    missing = sorted(f for f in flags if f not in help_text)
    assert not missing, f"flags not in `codejury review --help`: {missing}"


def test_action_sarif_upload_only_when_asked_and_not_on_forks() -> None:
    action = load_action()
    upload = next(s for s in action["runs"]["steps"] if str(s.get("uses", "")).startswith("github/codeql-action/"))
    condition = upload["if"]
    assert "inputs.sarif == 'true'" in condition
    assert "github.event.pull_request.head.repo.full_name == github.repository" in condition


def test_action_pins_every_action_by_commit() -> None:
    action = load_action()
    uses = [s["uses"] for s in action["runs"]["steps"] if "uses" in s]
    assert {u.split("@")[0] for u in uses} == {"actions/setup-python", "github/codeql-action/upload-sarif"}
    lines = [line for line in ACTION.read_text(encoding="utf-8").splitlines() if re.match(r"\s*(-\s*)?uses:", line)]
    assert len(lines) == len(uses)
    for line in lines:
        assert PINNED_USES.search(line), f"not pinned to a commit with its version: {line.strip()}"


def test_action_caches_pip_keyed_on_its_own_pyproject(tmp_path: Path) -> None:
    action = load_action()
    steps = action["runs"]["steps"]
    setup = next(s for s in steps if str(s.get("uses", "")).startswith("actions/setup-python@"))
    assert setup["with"]["cache"] == "pip"
    key_file = setup["with"]["cache-dependency-path"]
    # setup-python hashes files of the workspace only: the key is written there by the step before it.
    key_step = steps[steps.index(setup) - 1]
    action_path, workspace = tmp_path / "action", tmp_path / "workspace"
    action_path.mkdir()
    workspace.mkdir()
    (action_path / "pyproject.toml").write_text('[project]\nname = "codejury"\n', encoding="utf-8")
    env = {
        **_step_env(key_step, {"inputs.version": "", "inputs.extras": "local"}),
        "GITHUB_ACTION_PATH": str(action_path),
        "GITHUB_WORKSPACE": str(workspace),
    }
    assert run_bash(key_step["run"], workspace, env).returncode == 0
    key = (workspace / key_file).read_text(encoding="utf-8")
    assert key.startswith('[project]\nname = "codejury"\n') and "extras=local" in key
    # ... and removed before codejury runs, so the review sees the checkout as it was.
    assert f'rm -f "$GITHUB_WORKSPACE/{key_file}"' in action_step(action, "install")["run"]


def test_action_outputs_name_every_verdict_and_exit_code() -> None:
    outputs = load_action()["outputs"]
    for verdict in get_args(Verdict):
        assert verdict in outputs["verdict"]["description"], verdict
    described = re.findall(r"\b(\d+) [A-Za-z]", outputs["exit-code"]["description"])
    assert tuple(described) == EXIT_CODES


def _step_env(step: dict[str, Any], values: dict[str, str]) -> dict[str, str]:
    """A step's env with its ${{ }} expressions evaluated from ``values``."""

    def evaluate(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            key = match.group(1)
            assert key in values, f"no value for ${{{{ {key} }}}} in the test"
            return values[key]

        return EXPRESSION.sub(one, text)

    return {k: evaluate(str(v)) for k, v in (step.get("env") or {}).items()}


def _run_action_review(
    stub_bin: Path,
    checkout: Path,
    tmp_path: Path,
    inputs: dict[str, str],
    extra_env: dict[str, str],
    token: str = "ghs_workflowtoken",
) -> tuple[subprocess.CompletedProcess[str], dict[str, str], Path]:
    action = load_action()
    values = {f"inputs.{name}": str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    values.update({f"inputs.{k}": v for k, v in inputs.items()})
    values["steps.install.outputs.bin"] = str(stub_bin)
    values["github.token"] = token
    step = action_step(action, "review")
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    outputs = tmp_path / "github-output"
    outputs.write_text("", encoding="utf-8")
    record = tmp_path / "record.json"
    env = {
        **_step_env(step, values),
        "RUNNER_TEMP": str(runner_temp),
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_WORKSPACE": str(checkout),
        "GITHUB_BASE_REF": "main",
        "STUB_RECORD": str(record),
        **extra_env,
    }
    result = run_bash(step["run"], checkout, env)
    parsed = dict(line.split("=", 1) for line in outputs.read_text(encoding="utf-8").splitlines() if "=" in line)
    return result, parsed, record


def test_action_review_step_sets_outputs_and_defers_the_exit_status(
    stub_bin: Path, checkout: Path, tmp_path: Path
) -> None:
    result, outputs, record = _run_action_review(
        stub_bin,
        checkout,
        tmp_path,
        {"config": "ci/codejury.toml", "extra-args": "--reflection  --exclude docs/*"},
        {"STUB_VERDICT": "requested_changes", "STUB_EXIT": "1"},
    )
    assert result.returncode == 0, result.stderr  # the last step exits with the status, after the upload
    assert outputs["exit-code"] == "1"
    assert outputs["verdict"] == "requested_changes"
    assert outputs["events"].endswith("codejury-events.jsonl")
    assert "sarif" not in outputs
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert seen["params"]["publish"] is True
    assert seen["params"]["fmt"] == "markdown", "the review goes to the job log"
    assert seen["params"]["output"] is None
    assert seen["params"]["fail_on"] == "requested_changes"
    assert seen["params"]["max_inline"] == 20
    assert seen["params"]["reflection"] is True
    assert seen["params"]["exclude"] == ["docs/*"]
    assert seen["params"]["tests"] == [], "no --tests when the input is empty"
    assert seen["config_text"] == 'fail_on = "warning"\n', "the base branch's file, not the pull request's"


def test_action_review_step_with_sarif(stub_bin: Path, checkout: Path, tmp_path: Path) -> None:
    result, outputs, record = _run_action_review(
        stub_bin, checkout, tmp_path, {"sarif": "true", "fail-on": "never"}, {"STUB_VERDICT": "approved"}
    )
    assert result.returncode == 0, result.stderr
    assert outputs["exit-code"] == "0"
    assert outputs["verdict"] == "approved"
    assert outputs["sarif"].endswith("codejury.sarif")
    sarif = json.loads(Path(outputs["sarif"]).read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert seen["params"]["fmt"] == "sarif"
    assert seen["params"]["fail_on"] == "never"
    assert seen["params"]["config_file"] is None


def test_action_review_step_when_codejury_stops_early(stub_bin: Path, checkout: Path, tmp_path: Path) -> None:
    result, outputs, _ = _run_action_review(stub_bin, checkout, tmp_path, {"extra-args": "--no-such-flag"}, {})
    assert result.returncode == 0
    assert outputs["exit-code"] == "2"
    assert outputs["verdict"] == ""
    assert "events" not in outputs and "sarif" not in outputs


def test_action_gives_each_test_report_as_a_tests_argument(stub_bin: Path, checkout: Path, tmp_path: Path) -> None:
    result, outputs, record = _run_action_review(
        stub_bin, checkout, tmp_path, {"tests": write_test_reports(checkout)}, {}
    )
    assert result.returncode == 0, result.stderr
    assert outputs["exit-code"] == "0"
    assert_each_report_given(record, result.stderr)


def test_action_stops_with_exit_2_on_a_test_report_that_is_not_junit(
    scripted_bin: Path, checkout: Path, tmp_path: Path
) -> None:
    (checkout / "junit.xml").write_text("<html>not a test report</html>\n", encoding="utf-8")
    inputs = {"tests": "junit.xml", "extra-args": SCRIPTED_MODEL_ARGS}
    result, outputs, _ = _run_action_review(scripted_bin, checkout, tmp_path, inputs, {"SCRIPTED_FINDINGS": "[]"})
    assert result.returncode == 0, result.stderr  # the last step exits with the status
    assert outputs["exit-code"] == "2"
    assert "--tests junit.xml" in result.stderr


@pytest.mark.parametrize("verdict", get_args(Verdict))
def test_action_reports_every_verdict(stub_bin: Path, checkout: Path, tmp_path: Path, verdict: str) -> None:
    result, outputs, _ = _run_action_review(stub_bin, checkout, tmp_path, {}, {"STUB_VERDICT": verdict})
    assert result.returncode == 0, result.stderr
    assert outputs["verdict"] == verdict
    assert f"verdict {verdict}" in result.stdout


def test_action_reports_no_verdict_it_does_not_know(stub_bin: Path, checkout: Path, tmp_path: Path) -> None:
    result, outputs, _ = _run_action_review(stub_bin, checkout, tmp_path, {}, {"STUB_VERDICT": "x\ninjected=1"})
    assert result.returncode == 0, result.stderr
    assert outputs["verdict"] == "" and "injected" not in outputs


async def test_the_verdict_the_action_reads_is_in_the_event_log(tmp_path: Path) -> None:
    """The action's ``verdict`` output comes from the ``review_finished`` event: keep that contract."""
    from codejury.testing.scripted import Final, Raw, finding
    from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review

    path = "app/auth/users.py"
    change = make_change(tmp_path, {path: (AUTH_OLD, AUTH_NEW)})
    critical = finding(path, 10, "SQL injection", severity="critical", category="security")
    scripts = {"security": [Final([critical])], "coordinator": [Raw({"decisions": []})]}
    review, _, events = await run_review(change, scripts)  # type: ignore[arg-type]
    finished = [e for e in events.events if e["type"] == "review_finished"]  # type: ignore[attr-defined]
    assert [e["verdict"] for e in finished] == [review.verdict] == ["requested_changes"]


def test_action_exit_step_propagates_the_status(tmp_path: Path) -> None:
    action = load_action()
    step = next(s for s in action["runs"]["steps"] if "steps.review.outputs.exit-code" in str(s.get("if", "")))
    for status in ("1", "3", "5", "130"):
        env = _step_env(step, {"steps.review.outputs.exit-code": status})
        assert run_bash(step["run"], tmp_path, env).returncode == int(status)


# --- whole runs of the component and the action: the real CLI on the scripted model, fake forges ---


def _github_event(tmp_path: Path, gh: Any, repo: str, head_repo: str) -> dict[str, str]:
    pull = gh.pull(7)
    event = {
        "number": 7,
        "pull_request": {
            "number": 7,
            "head": {"sha": pull.head_sha, "repo": {"full_name": head_repo}},
            "base": {"sha": pull.base_sha, "repo": {"full_name": repo}},
        },
    }
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REPOSITORY": repo,
        "GITHUB_API_URL": gh.api_url,
        "GITHUB_GRAPHQL_URL": gh.graphql_url,
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md"),
    }


@pytest.mark.parametrize("fork", [False, True], ids=["same-repository", "fork"])
def test_action_reviews_a_pull_request_end_to_end(
    scripted_bin: Path, checkout: Path, tmp_path: Path, fork: bool
) -> None:
    from codejury_fakes.github import ACTIONS_LOGIN, FakeGitHub

    repo, actions_token, fork_token = "octo/app", "ghs_actions_token_0001", "ghs_fork_token_0002"
    with FakeGitHub(repo) as gh:
        gh.add_user("alice")
        gh.add_token(actions_token, kind="actions", permissions={"contents": "write"})
        gh.add_token(fork_token, kind="fork")
        gh.repo().actions_can_approve = True
        gh.add_pr(number=7, author="alice", files={"app.py": (OLD, NEW)}, body="Adds things.")
        env = {
            **_github_event(tmp_path, gh, repo, "someone/app" if fork else repo),
            "SCRIPTED_FINDINGS": scripted_findings(),
        }
        result, outputs, _ = _run_action_review(
            scripted_bin,
            checkout,
            tmp_path,
            {"extra-args": SCRIPTED_MODEL_ARGS},
            env,
            token=fork_token if fork else actions_token,
        )
        assert result.returncode == 0, result.stderr
        assert outputs["exit-code"] == "0", result.stderr
        assert outputs["verdict"] in {"approved", "approved_with_comments", "significant_concerns"}
        assert "Unchecked input" in result.stdout, "the review is in the job log"
        events = [json.loads(line) for line in Path(outputs["events"]).read_text(encoding="utf-8").splitlines()]
        assert [e["verdict"] for e in events if e["type"] == "review_finished"] == [outputs["verdict"]]
        bot_comments = [c for c in gh.issue_comments(7) if c.user == ACTIONS_LOGIN]
        if fork:
            assert bot_comments == [] and gh.reviews(7) == [] and gh.check_runs() == []
            assert "Unchecked input" in (tmp_path / "step-summary.md").read_text(encoding="utf-8")
            assert "nothing was posted" in result.stderr
        else:
            assert len(bot_comments) == 1, "one summary comment"
            assert [r.user for r in gh.reviews(7)] == [ACTIONS_LOGIN]
            assert len(gh.check_runs()) == 1
