"""A release resolves: one version source, and every reference that names a version (the install line, the
action's tag and its `version` input, the component's ref and image, the changelog) names that one; the
tagged pipelines check the tag against it; zizmor passes on the repository's own workflows and refuses an
action that is not pinned by commit."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

import codejury
from tests.ci_packaging.helpers import ACTION, COMPONENT, GITHUB_EXAMPLE, PROJECT_CI, README, ROOT, project_version

CHANGELOG = ROOT / "CHANGELOG.md"
RELEASE_WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
ZIZMOR_CONFIG = ROOT / ".github" / "zizmor.yml"
REFERENCES = {
    "install line": re.compile(r"git\+https://github\.com/codejury/codejury@([^\s'\"`)]+)"),
    "action tag": re.compile(r"uses:\s*codejury/codejury@([^\s'\"`)#]+)"),
    "component ref": re.compile(r"/codejury/review@([^\s'\"`)]+)"),
    "image": re.compile(r"registry\.gitlab\.com/codejury/codejury:([^\s'\"`)]+)"),
}
PLACEHOLDER = re.compile(r"v?X\.Y\.Z(-local)?|<[^>]+>.*|v?\$\w+")
"""What a template or the release guide writes in place of a version (``X.Y.Z``, ``<version>``, a variable)."""


def documents() -> dict[str, str]:
    """Every text users copy a versioned reference from."""
    paths = [README, ACTION, COMPONENT, PROJECT_CI, *(ROOT / "docs").rglob("*.md"), *(ROOT / "docs").rglob("*.yml")]
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in paths}


def test_the_version_has_one_source() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "codejury.__version__"}
    assert codejury.__version__ == project_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", project_version())


def test_every_versioned_reference_names_the_version() -> None:
    version = project_version()
    wanted = {
        "install line": {f"v{version}"},
        "action tag": {f"v{version}"},
        "component ref": {version},
        "image": {version, f"{version}-local"},
    }
    seen: dict[str, int] = dict.fromkeys(REFERENCES, 0)
    wrong = []
    for name, text in documents().items():
        for kind, pattern in REFERENCES.items():
            for found in pattern.finditer(text):
                seen[kind] += 1
                if found.group(1) not in wanted[kind] and not PLACEHOLDER.fullmatch(found.group(1)):
                    line = text.count("\n", 0, found.start()) + 1
                    wrong.append(f"{name}:{line}: {kind} {found.group(0)} (the version is {version})")
    assert wrong == []
    assert all(seen.values()), seen  # each kind is documented somewhere: the check is not vacuous
    readme = README.read_text(encoding="utf-8")
    assert f"pip install 'codejury[local] @ git+https://github.com/codejury/codejury@v{version}'" in readme


def test_the_action_installs_its_own_ref_and_documents_the_version() -> None:
    action = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    version_input = action["inputs"]["version"]
    # Empty: the action installs the code of its own ref, so `uses: codejury/codejury@vX.Y.Z` is release X.Y.Z.
    assert version_input["default"] == ""
    assert f"(e.g. {project_version()})" in " ".join(version_input["description"].split())
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert f"`{project_version()}`: the tag `v{project_version()}` of github.com/codejury/codejury" in readme


def test_the_component_ref_and_its_default_image_are_the_version() -> None:
    header = next(yaml.safe_load_all(COMPONENT.read_text(encoding="utf-8")))
    assert header["spec"]["inputs"]["image"]["default"] == f"registry.gitlab.com/codejury/codejury:{project_version()}"
    example = (ROOT / "docs" / "ci" / "gitlab-ci.yml").read_text(encoding="utf-8")
    assert f"/codejury/review@{project_version()}" in example


def test_the_changelog_has_an_entry_for_the_version() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.M)
    assert headings[0] == ("Unreleased", "")
    assert (project_version(), headings[1][1]) == headings[1] and headings[1][1], "a dated entry for the version"
    assert "keepachangelog.com" in text
    assert f"[{project_version()}]: https://github.com/codejury/codejury/releases/tag/v{project_version()}" in text


def _notes(script: str, tmp_path: Path, tag: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "src" / "codejury").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "src" / "codejury" / "__init__.py", tmp_path / "src" / "codejury" / "__init__.py")
    shutil.copy(CHANGELOG, tmp_path / "CHANGELOG.md")
    env = {"PATH": "/usr/bin:/bin", "TAG": tag, "RUNNER_TEMP": str(tmp_path), "GITHUB_ENV": str(tmp_path / "env")}
    return subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)


def test_the_github_release_checks_the_tag_and_takes_the_changelog_entry_as_notes(tmp_path: Path) -> None:
    workflow = yaml.safe_load(RELEASE_WORKFLOW.read_text(encoding="utf-8"))
    trigger = workflow[True]  # YAML 1.1 reads the key `on` as the boolean true
    assert trigger == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}} and workflow["permissions"] == {}
    job = workflow["jobs"]["release"]
    assert job["permissions"] == {"contents": "write"}
    check = next(s for s in job["steps"] if s.get("name", "").startswith("Check the tag"))
    done = _notes(check["run"], tmp_path, f"v{project_version()}")
    assert done.returncode == 0, done.stdout + done.stderr
    notes = (tmp_path / "notes.md").read_text(encoding="utf-8")
    assert "The first release" in notes and "## [" not in notes and "releases/tag" not in notes
    assert (tmp_path / "env").read_text() == f"VERSION={project_version()}\n"
    refused = _notes(check["run"], tmp_path, "v99.0.0")
    assert refused.returncode == 1 and "tag v99.0.0 is not" in refused.stdout


def test_the_gitlab_catalog_release_follows_the_image_and_takes_the_changelog_entry(tmp_path: Path) -> None:
    ci = yaml.safe_load(PROJECT_CI.read_text(encoding="utf-8"))
    assert ci["stages"] == ["build", "release"]
    job = ci["catalog"]
    assert job["needs"] == ["image"] and job["rules"] == ci["image"]["rules"]
    assert job["release"]["tag_name"] == "$CI_COMMIT_TAG" and job["release"]["description"] == "./release-notes.md"
    shutil.copy(CHANGELOG, tmp_path / "CHANGELOG.md")
    env = {"PATH": "/usr/bin:/bin", "CI_COMMIT_TAG": project_version()}
    done = subprocess.run(["sh", "-e", "-c", job["script"][0]], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    notes = (tmp_path / "release-notes.md").read_text(encoding="utf-8")
    assert "The first release" in notes and "## [" not in notes
    env["CI_COMMIT_TAG"] = "99.0.0"
    missing = subprocess.run(
        ["sh", "-e", "-c", job["script"][0]], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert missing.returncode == 1 and "no notes for 99.0.0" in missing.stderr


def _zizmor(*paths: Path) -> subprocess.CompletedProcess[str]:
    program = Path(sys.executable).with_name("zizmor")
    command = [str(program), "--offline", "--quiet", "--config", str(ZIZMOR_CONFIG), *map(str, paths)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_zizmor_passes_on_the_repositorys_workflows_and_refuses_an_unpinned_action(tmp_path: Path) -> None:
    clean = _zizmor(ROOT / ".github" / "workflows", ACTION, GITHUB_EXAMPLE)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    unpinned = tmp_path / "release.yml"
    text = RELEASE_WORKFLOW.read_text(encoding="utf-8")
    unpinned.write_text(re.sub(r"actions/setup-python@[0-9a-f]{40} # v[\d.]+", "actions/setup-python@v6", text))
    refused = _zizmor(unpinned)
    assert refused.returncode != 0 and "unpinned-uses" in refused.stdout
