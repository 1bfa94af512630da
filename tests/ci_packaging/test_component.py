"""The GitLab CI/CD component (templates/review.yml): its inputs, its job, and its script run against a stub
and against the real CLI on the scripted model and a fake GitLab."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from codejury.config import FAIL_ON_CHOICES
from tests.ci_packaging.helpers import (
    GITLAB_EXAMPLE,
    INPUT_REF,
    NEW,
    OLD,
    PROJECT_CI,
    ROOT,
    SCRIPTED_MODEL_ARGS,
    assert_each_report_given,
    codejury_flags,
    component_documents,
    component_job,
    component_script,
    project_version,
    review_help,
    run_bash,
    scripted_findings,
    write_test_reports,
)

# --- the GitLab CI/CD component ---------------------------------------------------------------------


def test_component_inputs_have_the_documented_defaults() -> None:
    header, _, _ = component_documents()
    inputs = header["spec"]["inputs"]
    assert set(inputs) == {"stage", "image", "config", "fail_on", "extra_args", "max_inline", "tests"}
    assert inputs["stage"]["default"] == "test"
    assert inputs["image"]["default"] == f"registry.gitlab.com/codejury/codejury:{project_version()}"
    assert "$CI_" not in inputs["image"]["default"], "a consumer's own registry variables are not our image"
    assert inputs["config"]["default"] == ""
    assert inputs["extra_args"]["default"] == ""
    assert inputs["tests"]["default"] == ""
    assert inputs["fail_on"]["default"] == "requested_changes"
    assert inputs["fail_on"]["options"] == list(FAIL_ON_CHOICES)
    assert inputs["max_inline"] == {**inputs["max_inline"], "type": "number", "default": 20}
    for name, spec in inputs.items():
        assert spec.get("description"), f"input {name} has no description"


def test_component_default_image_is_the_versioned_one_this_repository_builds(tmp_path: Path) -> None:
    header, _, _ = component_documents()
    default = header["spec"]["inputs"]["image"]["default"]
    assert not default.endswith(":latest") and ":" in default.rsplit("/", 1)[-1], "a versioned image"
    name, tag = default.rsplit(":", 1)
    assert tag == project_version(), "the component's image is the release's: bump it with the version"
    # The project's own CI builds and pushes exactly that name on the release tag.
    ci = yaml.safe_load(PROJECT_CI.read_text(encoding="utf-8"))
    job = ci["image"]
    assert [r["if"] for r in job["rules"]] == ["$CI_COMMIT_TAG =~ /^[0-9]+\\.[0-9]+\\.[0-9]+$/"]
    script = "\n".join(job["script"])
    assert 'docker push "$CI_REGISTRY_IMAGE:$CI_COMMIT_TAG"' in script
    assert 'docker push "$CI_REGISTRY_IMAGE:$CI_COMMIT_TAG-local"' in script
    assert re.search(
        r"docker build [^\n]*--build-arg EXTRAS=local [^\n]*\$CI_REGISTRY_IMAGE:\$CI_COMMIT_TAG-local", script
    )
    assert name == "registry.gitlab.com/codejury/codejury", "$CI_REGISTRY_IMAGE of the codejury project"
    # Its first command refuses a tag that is not the package's version, or that the changelog has no entry for.
    (tmp_path / "src" / "codejury").mkdir(parents=True)
    shutil.copy(ROOT / "src" / "codejury" / "__init__.py", tmp_path / "src" / "codejury" / "__init__.py")
    shutil.copy(ROOT / "CHANGELOG.md", tmp_path / "CHANGELOG.md")
    check = job["script"][0]
    assert run_bash(check, tmp_path, {"CI_COMMIT_TAG": project_version()}).returncode == 0
    refused = run_bash(check, tmp_path, {"CI_COMMIT_TAG": "99.0.0"})
    assert refused.returncode == 1 and "not the version in src/codejury/__init__.py" in refused.stderr
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## [Unreleased]\n", encoding="utf-8")
    unlisted = run_bash(check, tmp_path, {"CI_COMMIT_TAG": project_version()})
    assert unlisted.returncode == 1 and f"CHANGELOG.md has no entry for {project_version()}" in unlisted.stderr


def test_component_inputs_are_declared_and_used() -> None:
    header, _, jobs_text = component_documents()
    declared = set(header["spec"]["inputs"])
    used = set(INPUT_REF.findall(jobs_text))
    assert used <= declared, f"used but not declared: {sorted(used - declared)}"
    assert declared <= used, f"declared but never used: {sorted(declared - used)}"


def test_component_job_runs_only_in_merge_request_pipelines() -> None:
    _, jobs, _ = component_documents()
    assert set(jobs) == {"codejury-review"}
    job = jobs["codejury-review"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert job["image"]["entrypoint"] == [""], "an image's ENTRYPOINT must not take over the script"
    assert job["stage"] == "$[[ inputs.stage ]]"


def test_component_command_is_a_real_review_invocation() -> None:
    job = component_job()
    script = component_script(job)
    assert re.search(r"(?m)^\s*codejury review\b", script)
    flags = codejury_flags(script)
    assert {"--publish", "--fail-on", "--max-inline", "--format", "--output", "--config", "--tests"} <= flags
    help_text = review_help()
    missing = sorted(f for f in flags if f not in help_text)
    assert not missing, f"flags not in `codejury review --help`: {missing}"
    # The Code Quality artifact is the file the review writes, uploaded even when the job fails.
    output = re.search(r"--output\s+(\S+)", script)
    assert output is not None
    assert "--format codeclimate" in script
    assert job["artifacts"]["reports"]["codequality"] == output.group(1)
    assert job["artifacts"]["when"] == "always"


def _component_shell(inputs: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The job's script and variables as GitLab would run them with these inputs (else the defaults)."""
    header, _, _ = component_documents()
    values = {name: spec.get("default") for name, spec in header["spec"]["inputs"].items()}
    values.update(inputs)

    def substitute(text: str) -> str:
        return INPUT_REF.sub(lambda m: str(values[m.group(1)]), text)

    job = component_job()
    variables = {k: substitute(str(v)) for k, v in (job.get("variables") or {}).items()}
    return substitute(component_script(job)), variables


def _mr_env(stub_bin: Path, record: Path) -> dict[str, str]:
    return {
        "PATH": f"{stub_bin}{os.pathsep}{os.environ['PATH']}",
        "STUB_RECORD": str(record),
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
    }


def test_component_script_runs_with_the_defaults(stub_bin: Path, checkout: Path, tmp_path: Path) -> None:
    script, variables = _component_shell({})
    record = tmp_path / "record.json"
    result = run_bash(script, checkout, {**_mr_env(stub_bin, record), **variables})
    assert result.returncode == 0, result.stderr
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert seen["params"]["publish"] is True
    assert seen["params"]["fail_on"] == "requested_changes"
    assert seen["params"]["max_inline"] == 20
    assert seen["params"]["fmt"] == "codeclimate"
    assert seen["params"]["config_file"] is None, "no --config when the input is empty"
    assert seen["params"]["tests"] == [], "no --tests when the input is empty"
    assert "test report" not in result.stderr
    assert json.loads((checkout / "gl-code-quality-report.json").read_text(encoding="utf-8")) == []


def test_component_script_reads_config_from_the_target_branch(stub_bin: Path, checkout: Path, tmp_path: Path) -> None:
    script, variables = _component_shell(
        {"config": "./ci/codejury.toml", "fail_on": "warning", "max_inline": 5, "extra_args": "--exclude 'docs/**'"}
    )
    (checkout / "docs").mkdir()
    (checkout / "docs" / "a.md").write_text("x\n", encoding="utf-8")  # a glob must not expand
    record = tmp_path / "record.json"
    result = run_bash(script, checkout, {**_mr_env(stub_bin, record), **variables})
    assert result.returncode == 0, result.stderr
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert seen["config_text"] == 'fail_on = "warning"\n', "the target branch's file, not the merge request's"
    assert seen["params"]["fail_on"] == "warning"
    assert seen["params"]["max_inline"] == 5
    assert seen["params"]["exclude"] == ["docs/**"]


def test_component_script_fails_clearly_without_the_config_on_the_target_branch(
    stub_bin: Path, checkout: Path, tmp_path: Path
) -> None:
    script, variables = _component_shell({"config": "ci/new.toml"})
    (checkout / "ci" / "new.toml").write_text("reflection = true\n", encoding="utf-8")
    record = tmp_path / "record.json"
    result = run_bash(script, checkout, {**_mr_env(stub_bin, record), **variables})
    assert result.returncode == 2
    assert "cannot read ci/new.toml from the target branch main" in result.stderr
    assert not record.exists(), "codejury must not run with the merge request's own config"


def test_component_script_keeps_the_review_exit_status(stub_bin: Path, checkout: Path, tmp_path: Path) -> None:
    script, variables = _component_shell({})
    record = tmp_path / "record.json"
    result = run_bash(script, checkout, {**_mr_env(stub_bin, record), **variables, "STUB_EXIT": "1"})
    assert result.returncode == 1


def test_component_gives_each_test_report_as_a_tests_argument(stub_bin: Path, checkout: Path, tmp_path: Path) -> None:
    script, variables = _component_shell({"tests": write_test_reports(checkout)})
    record = tmp_path / "record.json"
    result = run_bash(script, checkout, {**_mr_env(stub_bin, record), **variables})
    assert result.returncode == 0, result.stderr
    assert_each_report_given(record, result.stderr)


def test_component_stops_with_exit_2_on_a_test_report_that_is_not_junit(
    scripted_bin: Path, checkout: Path, tmp_path: Path
) -> None:
    (checkout / "junit.xml").write_text("<html>not a test report</html>\n", encoding="utf-8")
    script, variables = _component_shell({"tests": "junit.xml", "extra_args": SCRIPTED_MODEL_ARGS})
    env = {**variables, "PATH": f"{scripted_bin}{os.pathsep}{os.environ['PATH']}", "SCRIPTED_FINDINGS": "[]"}
    result = run_bash(script, checkout, {**env, "CI_PIPELINE_SOURCE": "merge_request_event"})
    assert result.returncode == 2
    assert "--tests junit.xml" in result.stderr


def test_gitlab_example_includes_the_component_with_declared_inputs() -> None:
    header, _, _ = component_documents()
    example = yaml.safe_load(GITLAB_EXAMPLE.read_text(encoding="utf-8"))
    includes = [i for i in example["include"] if "component" in i]
    assert len(includes) == 1
    assert re.fullmatch(r"\$CI_SERVER_FQDN/[^/]+/codejury/review@\S+", includes[0]["component"])
    assert set(includes[0].get("inputs", {})) <= set(header["spec"]["inputs"])


def test_component_job_publishes_and_writes_the_code_quality_report(
    scripted_bin: Path, checkout: Path, tmp_path: Path
) -> None:
    from codejury_fakes.gitlab import FakeGitLab

    from codejury.forges.markers import parse_summary

    script, variables = _component_shell({"extra_args": SCRIPTED_MODEL_ARGS})
    with FakeGitLab() as gl:
        gl.add_mr(1, 7, files={"app.py": (OLD, NEW)}, description="Adds things.")
        env = {
            **variables,
            "PATH": f"{scripted_bin}{os.pathsep}{os.environ['PATH']}",
            "SCRIPTED_FINDINGS": scripted_findings(),
            "CI_PIPELINE_SOURCE": "merge_request_event",
            "CI_API_V4_URL": gl.api_url,
            "CI_MERGE_REQUEST_PROJECT_ID": "1",
            "CI_MERGE_REQUEST_IID": "7",
            "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
            "CI_PROJECT_DIR": str(checkout),
            "CODEJURY_GITLAB_TOKEN": FakeGitLab.BOT_TOKEN,
        }
        result = run_bash(script, checkout, env)
        assert result.returncode == 0, result.stderr
        notes = [n for n in gl.notes(1, 7, system=False) if n["author"]["username"] == FakeGitLab.BOT]
        assert any(parse_summary(n["body"]) for n in notes), "the summary comment is posted"
        inline = [d for d in gl.discussions(1, 7) if d["notes"][0].get("position")]
        assert {d["notes"][0]["position"]["new_line"] for d in inline} == {5, 15}
    report = json.loads((checkout / "gl-code-quality-report.json").read_text(encoding="utf-8"))
    findings = [issue for issue in report if issue["check_name"] != "codejury/review-limited"]
    assert {(issue["location"]["path"], issue["location"]["lines"]["begin"]) for issue in findings} == {
        ("app.py", 5),
        ("app.py", 15),
    }
    limited = [issue for issue in report if issue["check_name"] == "codejury/review-limited"]
    # The job's checkout does not hold the merge request's head and git cannot fetch it: the changed files are read
    # through the forge's API, and the report says the tools saw only them.
    assert limited and all(issue["severity"] == "minor" for issue in limited)
    read = "only the changed files were read, through the forge's API"
    assert any(read in issue["description"] for issue in limited), limited
    assert "published on" in result.stderr
