"""The example workflows, the install instructions, the Dockerfile and the README's order."""

from __future__ import annotations

import json
import re

from tests.ci_packaging.helpers import (
    EXPRESSION,
    GITHUB_EXAMPLE,
    PINNED_USES,
    README,
    ROOT,
    dockerfile_instructions,
    dockerignore_excludes,
    final_stage,
    load_action,
    load_workflow,
)

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
    # Every other snippet of the README too (the SARIF upload's among them).
    for line in _third_party_uses(readme):
        assert PINNED_USES.search(line), f"README: not pinned to a commit with its version: {line}"


def test_install_instructions_work_without_pypi() -> None:
    """codejury is not on PyPI: every install line names a clone (`-e .`, the fakes' `packages/codejury-testing`),
    the git repository or a release's wheel file."""
    texts = {
        p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in [README, *(ROOT / "docs").rglob("*.md")]
    }
    for name, text in texts.items():
        for line in text.splitlines():
            for spec in re.findall(r"pip install (?:-[-\w]+ )*('[^']*'|\S+)", line):
                spec = spec.strip("'").rstrip("`).,;")
                if "codejury" in spec:
                    wheel = re.fullmatch(r"\./codejury-[^/]+\.whl(\[[\w,]+\])?", spec)
                    in_clone = re.fullmatch(r"(\./)?packages/codejury-testing", spec)  # the fakes, from a clone
                    assert "@ git+https://" in spec or wheel or in_clone, f"{name}: {line.strip()}"
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
