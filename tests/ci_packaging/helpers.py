"""Shared by the CI packaging tests: the documents they read, a stub and a scripted ``codejury``, and a shell
that runs a job's script the way a runner does."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from codejury.cli import cli

ROOT = Path(__file__).resolve().parents[2]
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
    """The one version source, ``codejury.__version__`` as src/codejury/__init__.py writes it."""
    found = re.search(r'^__version__ = "([^"]+)"$', (ROOT / "src" / "codejury" / "__init__.py").read_text(), re.M)
    assert found, "src/codejury/__init__.py sets no __version__"
    return found.group(1)


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


def clean_environ() -> dict[str, str]:
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
    full_env = {**clean_environ(), **GIT_ENV, "HOME": str(cwd), **env}
    return subprocess.run([shell, "-c", script], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=60)


def write_test_reports(checkout: Path) -> str:
    """Two reports a glob matches and one named by its path, in the checkout; the ``tests`` input naming them
    (spaces and newlines), plus a pattern that matches no file."""
    (checkout / "reports").mkdir()
    for name in ("unit.xml", "api.xml", "notes.txt"):
        (checkout / "reports" / name).write_text("<testsuites/>\n", encoding="utf-8")
    (checkout / "junit.xml").write_text("<testsuites/>\n", encoding="utf-8")
    return "reports/*.xml\n  junit.xml coverage/*.xml\n"


NO_MATCH_LINE = "codejury: no test report matches coverage/*.xml: reviewing without it"


def assert_each_report_given(record: Path, stderr: str) -> None:
    """What the stub codejury received from ``write_test_reports``' input: one --tests per existing report, in
    order, nothing for the pattern that matches no file, and the one line that says so."""
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert seen["params"]["tests"] == ["reports/api.xml", "reports/unit.xml", "junit.xml"]
    assert seen["argv"].count("--tests") == 3
    assert "coverage/*.xml" not in seen["argv"], "a pattern that matches nothing is no argument"
    assert stderr.splitlines() == [NO_MATCH_LINE]


OLD = "".join(f"line {n}\n" for n in range(1, 31))
NEW = OLD.replace("line 5\n", "line five\n").replace("line 15\n", "line fifteen\n")


def scripted_findings() -> str:
    from codejury.testing.scripted import finding

    return json.dumps(
        [
            finding("app.py", 5, "Unchecked input", severity="warning", category="validation"),
            finding("app.py", 15, "Name is unclear", severity="suggestion", category="naming"),
        ]
    )
