"""Class 10: one unreadable object the change does not touch never fails the whole review.

Real repositories lose objects: a loose object deleted, a pack entry corrupted, a partial clone
whose promisor remote is gone. The review reads the changed files up front (``git diff``) and
the rest of the commit only when a tool asks; a file it cannot read looks missing to the tools,
is named in one warning and in the review's notes, and the review runs. A repository of many
files is not read in full: with every object outside the change gone, the review does not notice.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from codejury_fakes.provider_server import FakeProviderServer, ToolCallReply

from codejury.cli import cli
from tests.hostile.conftest import Run, run_codejury
from tests.timing import FOREVER, limit

WALL_S = 40.0


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "A",
        "GIT_COMMITTER_EMAIL": "a@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    done = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args], cwd=repo, env=env, check=True, capture_output=True
    )
    return done.stdout.decode()


def make_repo(path: Path) -> Path:
    """main: app.py and lib/words.txt (a table the change never touches); feature changes app.py."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "lib").mkdir()
    (path / "app.py").write_text("def f():\n    return 1\n")
    (path / "lib" / "words.txt").write_text("".join(f"word{i} {i * 7919 % 104729}\n" for i in range(40_000)))
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    git(path, "checkout", "-q", "-b", "feature")
    (path / "app.py").write_text("def f():\n    return 2\n")
    git(path, "commit", "-q", "-am", "change f")
    return path


def damage_loose(repo: Path) -> None:
    sha = git(repo, "rev-parse", "feature:lib/words.txt").strip()
    (repo / ".git" / "objects" / sha[:2] / sha[2:]).unlink()


def damage_pack(repo: Path) -> None:
    git(repo, "repack", "-a", "-d", "-q")
    sha = git(repo, "rev-parse", "feature:lib/words.txt").strip()
    (idx,) = (repo / ".git" / "objects" / "pack").glob("*.idx")
    for row in git(repo, "verify-pack", "-v", str(idx)).splitlines():
        fields = row.split()
        if fields and fields[0] == sha:
            size_in_pack, offset = int(fields[3]), int(fields[4])
            break
    pack = idx.with_suffix(".pack")
    pack.chmod(0o644)
    with pack.open("r+b") as fh:  # scramble the middle of the compressed entry: its header still reads
        fh.seek(offset + size_in_pack // 2)
        fh.write(b"\xff" * 64)
    result = subprocess.run(["git", "cat-file", "-p", sha], cwd=repo, capture_output=True)
    assert result.returncode != 0  # git itself cannot read it


def partial_clone_without_its_remote(tmp: Path) -> Path:
    origin = make_repo(tmp / "origin")
    git(origin, "config", "uploadpack.allowFilter", "true")
    clone = tmp / "clone"
    git(tmp, "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{origin}", str(clone))
    for side in ("origin/main", "origin/feature"):  # the changed file's blobs are here; the rest is not
        git(clone, "cat-file", "-p", f"{side}:app.py")
    shutil.rmtree(origin)
    return clone


def plan(repo: Path, *args: str) -> Run:
    return run_codejury(["review", "--base", "main", "--dry-run", "--format", "json", *args], cwd=repo)


def assert_planned_without_reading_it(run: Run) -> None:
    assert run.rc == 0, run.stderr
    assert "Traceback" not in run.stderr and "cat-file failed" not in run.stderr
    assert "left out" not in run.stderr  # the plan never reads a file outside the change
    assert [r["files"] for r in json.loads(run.stdout)["reviewers"]][0] == ["app.py"]


@pytest.mark.parametrize("damage", [damage_loose, damage_pack])
def test_a_lost_object_outside_the_change(tmp_path: Path, damage: object) -> None:
    repo = make_repo(tmp_path / "repo")
    damage(repo)  # type: ignore[operator]
    run = plan(repo)
    assert_planned_without_reading_it(run)
    run.assert_bounded(WALL_S)


def test_a_partial_clone_whose_promisor_remote_is_gone(tmp_path: Path) -> None:
    clone = partial_clone_without_its_remote(tmp_path)
    run = run_codejury(
        ["review", "--base", "origin/main", "--head", "origin/feature", "--dry-run", "--format", "json"], cwd=clone
    )
    assert_planned_without_reading_it(run)
    run.assert_bounded(WALL_S)


def write_config(tmp_path: Path, provider: FakeProviderServer) -> Path:
    config = tmp_path / "codejury.toml"
    config.write_text(
        f'[providers.gw]\nbase_url = "{provider.openai_base_url}"\napi_key_env = "GW_KEY"\n'
        '[models]\ntop = "gw:big"\nstandard = "gw:mid"\nlight = "gw:mid"\n'
    )
    return config


def review(repo: Path, config: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[dict[str, Any], str]:
    monkeypatch.chdir(repo)
    result = CliRunner(env={"GW_KEY": "k"}).invoke(
        cli, ["review", "--config", str(config), "--format", "json", *args], catch_exceptions=False
    )
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def damaged_clone(tmp_path: Path) -> tuple[Path, tuple[str, ...], str]:
    return (
        partial_clone_without_its_remote(tmp_path),
        ("--base", "origin/main", "--head", "origin/feature"),
        ("not in this partial clone"),
    )


def damaged_repo(damage: Callable[[Path], None]) -> Callable[[Path], tuple[Path, tuple[str, ...], str]]:
    def make(tmp_path: Path) -> tuple[Path, tuple[str, ...], str]:
        repo = make_repo(tmp_path / "repo")
        damage(repo)
        return repo, ("--base", "main"), "unreadable git object"

    return make


@pytest.mark.parametrize(
    "damaged", [damaged_repo(damage_loose), damaged_repo(damage_pack), damaged_clone], ids=["loose", "pack", "partial"]
)
def test_the_review_runs_and_the_tools_see_the_lost_file_as_missing(
    tmp_path: Path,
    provider: FakeProviderServer,
    monkeypatch: pytest.MonkeyPatch,
    damaged: Callable[[Path], tuple[Path, tuple[str, ...], str]],
) -> None:
    repo, args, reason = damaged(tmp_path)
    provider.script(
        "mid",
        [
            ToolCallReply(
                [
                    ("read_file", {"path": "lib/words.txt", "start_line": 1, "end_line": 5}),
                    ("grep", {"pattern": "word7 "}),
                ]
            ),
            ToolCallReply([("final_result", {"findings": []})]),
        ],
    )
    provider.script("big", [ToolCallReply([("final_result", {"decisions": []})])])
    result, stderr = review(repo, write_config(tmp_path, provider), monkeypatch, *args)
    assert result["verdict"].startswith("approved")
    assert f"lib/words.txt ({reason})" in stderr
    assert [n for n in result["notes"] if "left out" in n] == [
        f"1 file of the repository left out, missing to the reviewers' tools: lib/words.txt ({reason})"
    ]
    tool_answers = [json.dumps(r.body) for r in provider.requests if r.model == "mid"]
    assert any(f"no such file: lib/words.txt ({reason})" in body for body in tool_answers)
    assert any("no matches for 'word7 '" in body for body in tool_answers)


def test_a_repository_of_many_files_is_read_only_where_the_tools_look(
    tmp_path: Path, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3,000 files and every blob outside the change deleted: a review that reads one of them notices one."""
    repo = tmp_path / "big"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for d in range(60):
        (repo / f"pkg{d:02}").mkdir()
        for f in range(50):
            (repo / f"pkg{d:02}" / f"mod{f:02}.py").write_text(f"VALUE = {d * 100 + f}\n")
    (repo / "app.py").write_text("def f():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "app.py").write_text("def f():\n    return 2\n")
    git(repo, "commit", "-q", "-am", "change f")
    kept = {git(repo, "rev-parse", f"{rev}:app.py").strip() for rev in ("main", "feature")}
    blobs = [line.split()[2] for line in git(repo, "ls-tree", "-r", "feature").splitlines()]
    for sha in set(blobs) - kept:
        (repo / ".git" / "objects" / sha[:2] / sha[2:]).unlink()
    provider.script(
        "mid",
        [
            ToolCallReply([("list_files", {"directory": "pkg07"}), ("read_file", {"path": "pkg07/mod03.py"})]),
            ToolCallReply([("final_result", {"findings": []})]),
        ],
    )
    provider.script("big", [ToolCallReply([("final_result", {"decisions": []})])])
    started = time.monotonic()
    result, stderr = review(repo, write_config(tmp_path, provider), monkeypatch, "--base", "main")
    wall = time.monotonic() - started
    assert result["verdict"].startswith("approved")
    assert [n for n in result["notes"] if "left out" in n] == [
        "1 file of the repository left out, missing to the reviewers' tools: pkg07/mod03.py (unreadable git object)"
    ]  # the 2,999 others were never asked for
    assert "pkg07/mod49.py" in json.dumps([r.body for r in provider.requests])  # listed from the trees
    assert wall < limit(WALL_S, hung_s=FOREVER)
