"""Fixtures of the CI packaging tests: a stub and a scripted ``codejury`` on PATH, and a checkout."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from tests.ci_packaging.helpers import (
    ROOT,
    SCRIPTED_CODEJURY,
    STUB,
    git,
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
