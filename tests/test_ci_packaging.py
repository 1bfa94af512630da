"""CI packaging: the GitLab CI/CD component, the GitHub Action, the example workflows and the Dockerfile.

Static checks (inputs declared and used, flags that exist, least permissions, no script injection,
no ENTRYPOINT that takes over a GitLab job's ``script:``) and runs of the component's and the action's
shell scripts against a stub ``codejury`` that parses its arguments with the real click command.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from click.testing import CliRunner

from codejury.cli import cli
from codejury.config import FAIL_ON_CHOICES
from codejury.findings import Verdict

ROOT = Path(__file__).resolve().parents[1]
COMPONENT = ROOT / "templates" / "review.yml"
ACTION = ROOT / "action.yml"
GITLAB_EXAMPLE = ROOT / "docs" / "ci" / "gitlab-ci.yml"
GITHUB_EXAMPLE = ROOT / "docs" / "ci" / "github-workflow.yml"
DOCKERFILE = ROOT / "Dockerfile"
PROJECT_CI = ROOT / ".gitlab-ci.yml"
README = ROOT / "README.md"
DOCKERIGNORE = ROOT / ".dockerignore"

# A third-party action pinned by commit, the version it names in a comment: `owner/repo[/path]@<sha> # v1.2.3`.
PINNED_USES = re.compile(r"uses:\s*[\w.-]+/[\w.-]+(?:/[\w./-]+)?@[0-9a-f]{40} # v\d+\.\d+\.\d+\s*$")
# Exit statuses of `codejury review` (README, "Using it") plus 130 when interrupted.
EXIT_CODES = ("0", "1", "2", "3", "4", "5", "130")
INPUT_REF = re.compile(r"\$\[\[\s*inputs\.([A-Za-z0-9_-]+)\s*\]\]")
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")
# Lines of the scripts that run other programs than codejury (their flags are not codejury's).
OTHER_COMMANDS = re.compile(r"\b(git|pip|venv)\b")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "T",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "T",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


# --- helpers ---------------------------------------------------------------------------------------


def component_documents() -> tuple[dict[str, Any], dict[str, Any], str]:
    """The component's spec header, its jobs, and the jobs' raw text."""
    text = COMPONENT.read_text(encoding="utf-8")
    docs = list(yaml.safe_load_all(text))
    assert len(docs) == 2, "templates/review.yml must be a spec header, a '---' line, then the jobs"
    header, jobs = docs
    jobs_text = re.split(r"(?m)^---\s*$", text, maxsplit=1)[1]
    return header, jobs, jobs_text


def component_job() -> dict[str, Any]:
    _, jobs, _ = component_documents()
    job: dict[str, Any] = jobs["codejury-review"]
    return job


def component_script(job: dict[str, Any]) -> str:
    script = job["script"]
    return "\n".join(script) if isinstance(script, list) else str(script)


def load_action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    return data


def action_step(action: dict[str, Any], step_id: str) -> dict[str, Any]:
    for step in action["runs"]["steps"]:
        if step.get("id") == step_id:
            found: dict[str, Any] = step
            return found
    raise AssertionError(f"action.yml has no step with id {step_id!r}")


def project_version() -> str:
    version: str = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    return version


def load_workflow() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(GITHUB_EXAMPLE.read_text(encoding="utf-8"))
    if True in data:  # YAML 1.1 reads the key `on` as the boolean true
        data["on"] = data.pop(True)
    return data


def codejury_flags(script: str) -> set[str]:
    """The ``--flags`` a script passes to codejury (lines running git or pip are left out)."""
    flags: set[str] = set()
    for line in script.splitlines():
        if OTHER_COMMANDS.search(line):
            continue
        flags.update(FLAG.findall(line))
    return flags


def review_help() -> str:
    result = CliRunner().invoke(cli, ["review", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, line continuations joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        if full:
            keyword, _, rest = full.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    assert not pending, "Dockerfile ends inside a line continuation"
    return out


def final_stage(instructions: list[tuple[str, str]]) -> list[tuple[str, str]]:
    starts = [i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM"]
    return instructions[starts[-1] :]


def _dockerignore_regex(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go filepath.Match plus ``**``) as a regex over slash paths."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"  # any number of directories, none included
            i += 3
            continue
        if pattern.startswith("**", i):
            out += ".*"
            i += 2
            continue
        char = pattern[i]
        end = pattern.find("]", i + 1)
        if char == "[" and end > i:  # a character class, "[^...]" negated
            out += "[" + pattern[i + 1 : end].replace("\\", "\\\\") + "]"
            i = end + 1
            continue
        out += "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char)
        i += 1
    return re.compile(out + r"\Z")


def dockerignore_excludes(path: str) -> bool:
    """Whether the build context leaves ``path`` out (last matching pattern wins; a match on a parent counts)."""
    rules = []
    for raw in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        rules.append((negate, _dockerignore_regex(pattern)))
    parts = path.split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for negate, regex in rules:
        if any(regex.match(c) for c in candidates):
            excluded = not negate
    return excluded


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV, "HOME": str(repo)},
    )
    return result.stdout


STUB = """\
#!{python}
# A stand-in for `codejury`: parses its arguments with the real click command, records them, writes a
# report in the asked format, exits with $STUB_EXIT.
import json, os, sys
import click
from codejury.cli import review_command

argv = sys.argv[1:]
assert argv[:1] == ["review"], argv
try:
    ctx = review_command.make_context("review", argv[1:])
except click.UsageError as exc:
    print(f"stub codejury: {{exc.format_message()}}", file=sys.stderr)
    sys.exit(2)
params = ctx.params
config = params.get("config_file")
record = {{
    "argv": argv,
    "params": {{k: (str(v) if v is not None and not isinstance(v, (bool, int, tuple)) else v)
               for k, v in params.items()}},
    "config_text": open(config, encoding="utf-8").read() if config else None,
}}
with open(os.environ["STUB_RECORD"], "w", encoding="utf-8") as out:
    json.dump(record, out)
verdict = os.environ.get("STUB_VERDICT", "approved")
if params.get("events_file") is not None:
    with open(params["events_file"], "w", encoding="utf-8") as out:
        out.write(json.dumps({{"type": "review_started"}}) + "\\n")
        out.write(json.dumps({{"type": "review_finished", "verdict": verdict, "tier": "lite"}}) + "\\n")
output, fmt = params.get("output"), params.get("fmt")
if output is not None:
    if fmt == "codeclimate":
        body = []
    elif fmt == "sarif":
        body = {{"version": "2.1.0", "runs": [{{"results": [], "properties": {{"verdict": verdict}}}}]}}
    else:
        body = {{"verdict": verdict, "findings": []}}
    with open(output, "w", encoding="utf-8") as out:
        json.dump(body, out)
sys.exit(int(os.environ.get("STUB_EXIT", "0")))
"""


SCRIPTED_CODEJURY = """\
#!{python}
# The real `codejury`, with the scripted model of the test suite in place of a provider.
import json, os, sys
sys.path.insert(0, {root!r})
from codejury.testing.scripted import Final, Raw, ScriptedResolver

findings = json.loads(os.environ["SCRIPTED_FINDINGS"])
resolver = ScriptedResolver({{"reviewer": [Final(findings)], "coordinator": [Raw({{"decisions": []}})]}})
from codejury.cli import main
with resolver.active():  # registered by --plugin codejury.testing.scripted
    main()
"""
SCRIPTED_MODEL_ARGS = (
    "--plugin codejury.testing.scripted --model scripted:reviewer --model-for coordinator=scripted:coordinator"
)


@pytest.fixture
def scripted_bin(tmp_path: Path) -> Path:
    """A directory with the real ``codejury`` on the scripted model, and this interpreter as ``python``."""
    bin_dir = tmp_path / "scripted-bin"
    bin_dir.mkdir()
    exe = bin_dir / "codejury"
    exe.write_text(SCRIPTED_CODEJURY.format(python=sys.executable, root=str(ROOT)), encoding="utf-8")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (bin_dir / "python").symlink_to(sys.executable)
    return bin_dir


@pytest.fixture
def stub_bin(tmp_path: Path) -> Path:
    """A directory with a stub ``codejury`` and this interpreter as ``python``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "codejury"
    stub.write_text(STUB.format(python=sys.executable), encoding="utf-8")
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (bin_dir / "python").symlink_to(sys.executable)
    return bin_dir


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A clone whose `main` has ci/codejury.toml, checked out on a branch that rewrites it."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    (origin / "ci").mkdir()
    (origin / "ci" / "codejury.toml").write_text('fail_on = "warning"\n', encoding="utf-8")
    (origin / "app.py").write_text("print('hi')\n", encoding="utf-8")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "base")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "checkout", "-qb", "feature")
    (clone / "ci" / "codejury.toml").write_text('fail_on = "never"\n', encoding="utf-8")
    git(clone, "commit", "-qam", "the merge request weakens its own review")
    return clone


def _clean_environ() -> dict[str, str]:
    """This process's environment without anything a CI runner or a model provider would set."""
    prefixes = ("CI_", "GITHUB_", "RUNNER_", "CODEJURY_", "GITLAB_")
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(prefixes) and not k.endswith(("_API_KEY", "_TOKEN")) and k != "CI"
    }


def run_bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    shell = shutil.which("bash")
    assert shell is not None
    full_env = {**_clean_environ(), **GIT_ENV, "HOME": str(cwd), **env}
    return subprocess.run([shell, "-c", script], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=60)


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
    # Its first command refuses a tag that is not the package's version.
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    check = job["script"][0]
    assert run_bash(check, tmp_path, {"CI_COMMIT_TAG": project_version()}).returncode == 0
    refused = run_bash(check, tmp_path, {"CI_COMMIT_TAG": "99.0.0"})
    assert refused.returncode == 1 and "not the version in pyproject.toml" in refused.stderr


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


def _test_reports(checkout: Path) -> str:
    """Two reports a glob matches and one named by its path, in the checkout; the ``tests`` input naming them
    (spaces and newlines), plus a pattern that matches no file."""
    (checkout / "reports").mkdir()
    for name in ("unit.xml", "api.xml", "notes.txt"):
        (checkout / "reports" / name).write_text("<testsuites/>\n", encoding="utf-8")
    (checkout / "junit.xml").write_text("<testsuites/>\n", encoding="utf-8")
    return "reports/*.xml\n  junit.xml coverage/*.xml\n"


NO_MATCH_LINE = "codejury: no test report matches coverage/*.xml: reviewing without it"


def _assert_each_report_given(record: Path, stderr: str) -> None:
    """What the stub codejury received from ``_test_reports``' input: one --tests per existing report, in
    order, nothing for the pattern that matches no file, and the one line that says so."""
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert seen["params"]["tests"] == ["reports/api.xml", "reports/unit.xml", "junit.xml"]
    assert seen["argv"].count("--tests") == 3
    assert "coverage/*.xml" not in seen["argv"], "a pattern that matches nothing is no argument"
    assert stderr.splitlines() == [NO_MATCH_LINE]


def test_component_gives_each_test_report_as_a_tests_argument(stub_bin: Path, checkout: Path, tmp_path: Path) -> None:
    script, variables = _component_shell({"tests": _test_reports(checkout)})
    record = tmp_path / "record.json"
    result = run_bash(script, checkout, {**_mr_env(stub_bin, record), **variables})
    assert result.returncode == 0, result.stderr
    _assert_each_report_given(record, result.stderr)


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
    result, outputs, record = _run_action_review(stub_bin, checkout, tmp_path, {"tests": _test_reports(checkout)}, {})
    assert result.returncode == 0, result.stderr
    assert outputs["exit-code"] == "0"
    _assert_each_report_given(record, result.stderr)


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

OLD = "".join(f"line {n}\n" for n in range(1, 31))
NEW = OLD.replace("line 5\n", "line five\n").replace("line 15\n", "line fifteen\n")


def _findings() -> str:
    from codejury.testing.scripted import finding

    return json.dumps(
        [
            finding("app.py", 5, "Unchecked input", severity="warning", category="validation"),
            finding("app.py", 15, "Name is unclear", severity="suggestion", category="naming"),
        ]
    )


def test_component_job_publishes_and_writes_the_code_quality_report(
    scripted_bin: Path, checkout: Path, tmp_path: Path
) -> None:
    from codejury.forges.markers import parse_summary
    from codejury.testing.gitlab import FakeGitLab

    script, variables = _component_shell({"extra_args": SCRIPTED_MODEL_ARGS})
    with FakeGitLab() as gl:
        gl.add_mr(1, 7, files={"app.py": (OLD, NEW)}, description="Adds things.")
        env = {
            **variables,
            "PATH": f"{scripted_bin}{os.pathsep}{os.environ['PATH']}",
            "SCRIPTED_FINDINGS": _findings(),
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
    # The job's checkout does not hold the merge request's head: the report says the analyzers did not run.
    assert limited and all(issue["severity"] == "minor" for issue in limited)
    assert any("ruff skipped: the change has no head-side tree" in issue["description"] for issue in limited)
    assert "published on" in result.stderr


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
    from codejury.testing.github import ACTIONS_LOGIN, FakeGitHub

    repo, actions_token, fork_token = "octo/app", "ghs_actions_token_0001", "ghs_fork_token_0002"
    with FakeGitHub(repo) as gh:
        gh.add_user("alice")
        gh.add_token(actions_token, kind="actions", permissions={"contents": "write"})
        gh.add_token(fork_token, kind="fork")
        gh.repo().actions_can_approve = True
        gh.add_pr(number=7, author="alice", files={"app.py": (OLD, NEW)}, body="Adds things.")
        env = {**_github_event(tmp_path, gh, repo, "someone/app" if fork else repo), "SCRIPTED_FINDINGS": _findings()}
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


# --- the example GitHub workflow --------------------------------------------------------------------


def test_github_workflow_uses_pull_request_with_least_permissions() -> None:
    workflow = load_workflow()
    events = workflow["on"]
    assert "pull_request" in events
    assert "pull_request_target" not in events
    assert "pull_request_target" not in re.sub(r"(?m)#.*$", "", GITHUB_EXAMPLE.read_text(encoding="utf-8"))
    job = workflow["jobs"]["review"]
    action_step_ = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("codejury/codejury@"))
    sarif = str((action_step_.get("with") or {}).get("sarif", "false")).lower() == "true"
    expected = {"contents": "read", "pull-requests": "write", "checks": "write"}
    if sarif:
        expected["security-events"] = "write"
    permissions = job.get("permissions", workflow.get("permissions"))
    assert permissions == expected


def test_github_workflow_checkout_and_secrets() -> None:
    workflow = load_workflow()
    job = workflow["jobs"]["review"]
    checkout_step = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout@"))
    assert checkout_step["with"]["fetch-depth"] == 0
    action_step_ = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("codejury/codejury@"))
    keys = action_step_["env"]
    assert keys and all(re.fullmatch(r"\$\{\{ secrets\.\w+ \}\}", v) for v in keys.values())
    # Fork pull requests have no model key: the documented workflow skips them.
    assert job["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    action = load_action()
    assert set(action_step_.get("with") or {}) <= set(action["inputs"])
    for step in job["steps"]:
        assert "run" not in step or not EXPRESSION.search(step["run"])


def _third_party_uses(text: str) -> list[str]:
    """The `uses:` lines of a workflow text, codejury's own action left out."""
    lines = [line.strip() for line in text.splitlines() if re.match(r"\s*(-\s*)?uses:", line)]
    return [line for line in lines if "codejury/codejury@" not in line]


def test_documented_workflows_pin_third_party_actions_by_commit() -> None:
    readme = README.read_text(encoding="utf-8")
    github_section = readme.split("## Set it up in GitHub Actions", 1)[1].split("\n## ", 1)[0]
    for name, text in (
        ("docs/ci/github-workflow.yml", GITHUB_EXAMPLE.read_text(encoding="utf-8")),
        ("README", github_section),
    ):
        uses = _third_party_uses(text)
        assert any("actions/checkout@" in u for u in uses), name
        for line in uses:
            assert PINNED_USES.search(line), f"{name}: not pinned to a commit with its version: {line}"
    # The README's workflow is the example's, checkout pin included.
    assert set(_third_party_uses(github_section)) == set(_third_party_uses(GITHUB_EXAMPLE.read_text(encoding="utf-8")))


def test_install_instructions_work_without_pypi() -> None:
    """codejury is not on PyPI: every install line names a clone (`-e .`) or the git repository."""
    texts = {
        p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in [README, *(ROOT / "docs").rglob("*.md")]
    }
    for name, text in texts.items():
        for line in text.splitlines():
            for spec in re.findall(r"pip install (?:-[-\w]+ )*('[^']*'|\S+)", line):
                spec = spec.strip("'")
                if "codejury" in spec:
                    assert "@ git+https://" in spec, f"{name}: {line.strip()}"
    assert "pip install -e '.[local]'" in texts["README.md"]


def test_no_claim_that_the_embedded_model_compiles() -> None:
    action = load_action()
    readme = README.read_text(encoding="utf-8")
    texts = {
        "action.yml extras": action["inputs"]["extras"]["description"],
        "docs/ci/github-workflow.yml": GITHUB_EXAMPLE.read_text(encoding="utf-8"),
        "README GitHub section": readme.split("## Set it up in GitHub Actions", 1)[1].split("\n## ", 1)[0],
    }
    for name, text in texts.items():
        assert "compil" not in " ".join(text.split()).replace("no compiler", ""), name
        assert "llama-cpp-python" not in text, name


# --- the Dockerfile ---------------------------------------------------------------------------------


def test_dockerfile_copy_sources_exist_and_are_in_the_build_context() -> None:
    copies = [args for keyword, args in dockerfile_instructions() if keyword == "COPY"]
    assert copies
    for args in copies:
        words = args.split()
        if any(w.startswith("--from") for w in words):
            continue
        sources = [w for w in words[:-1] if not w.startswith("--")]
        for source in sources:
            path = source.rstrip("/")
            assert (ROOT / path).exists(), f"COPY source {source} does not exist"
            assert not dockerignore_excludes(path), f"COPY source {source} is excluded by .dockerignore"


def test_dockerfile_image_shape() -> None:
    instructions = dockerfile_instructions()
    args = [a for k, a in instructions if k == "ARG"]
    assert "PYTHON_IMAGE=python:3.11-slim" in args
    assert 'EXTRAS=""' in args
    final = final_stage(instructions)
    runs = " ".join(a for k, a in final if k == "RUN")
    assert re.search(r"apt-get install [^&;]*\bgit\b", runs), "the image must install git"
    entrypoints = [a for k, a in instructions if k == "ENTRYPOINT"]
    assert all(json.loads(e) == [] for e in entrypoints), "an ENTRYPOINT would take over GitLab's script:"
    users = [a for k, a in final if k == "USER"]
    assert users, "the image must run as a non-root user"
    user = users[-1].split(":")[0]
    assert user.isdigit() and user != "0", "a numeric non-root user (runners that require non-root check it)"
    # No compiler in any stage: the embedded model's llama.cpp installs as a prebuilt wheel.
    assert not [a for k, a in instructions if k == "RUN" and ("build-essential" in a or "cmake" in a)]
    assert any("pip install" in a and ".${EXTRAS:+[${EXTRAS}]}" in a for k, a in instructions if k == "RUN")


def test_dockerignore_keeps_what_pip_needs_and_nothing_else() -> None:
    for needed in ("pyproject.toml", "README.md", "src/codejury/__init__.py", "src/codejury/py.typed"):
        assert not dockerignore_excludes(needed), needed
    prompts = sorted((ROOT / "src/codejury/reviewers/prompts").glob("*.md"))
    assert prompts
    for prompt in prompts:
        assert not dockerignore_excludes(prompt.relative_to(ROOT).as_posix())
    for unwanted in (
        ".git/config",
        ".venv/bin/python",
        "tests/test_cli.py",
        "benchmarks/run.py",
        ".env",
        "src/codejury.egg-info/PKG-INFO",
        "src/codejury/__pycache__/cli.cpython-311.pyc",
        "src/codejury/stray.pyc",
        ".mypy_cache/x",
    ):
        assert dockerignore_excludes(unwanted), unwanted


# --- the README -------------------------------------------------------------------------------------


def test_readme_has_the_setup_sections_after_the_forge_sections() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    headings = re.findall(r"(?m)^## (.+)$", readme)
    gitlab, github = headings.index("Set it up in GitLab CI"), headings.index("Set it up in GitHub Actions")
    assert headings.index("Merge requests on GitLab") < gitlab < github
    if "Pull requests on GitHub" in headings:
        assert headings.index("Pull requests on GitHub") < gitlab
