"""A throwaway checkout of an eval case: the repository at its head, the base ref beside it.

A git bundle or a local repository is cloned (never reviewed in place), a URL is cloned with
``--filter=blob:none``, and a ``tree`` case's ``base/`` and ``head/`` directories are committed
as branches ``main`` and ``feature`` of a new repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from codejury.errors import InputError
from codejury.eval.dataset import EvalCase

GIT_ENV = {
    "GIT_AUTHOR_NAME": "codejury eval",
    "GIT_AUTHOR_EMAIL": "eval@codejury.invalid",
    "GIT_COMMITTER_NAME": "codejury eval",
    "GIT_COMMITTER_EMAIL": "eval@codejury.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd)}
    try:
        subprocess.run(
            ["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
            cwd=cwd,
            check=True,
            capture_output=True,
            env=env,
            timeout=600,
        )
    except subprocess.CalledProcessError as exc:
        detail = exc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InputError(f"git {args[0]} failed: {detail[-1] if detail else exc}") from exc
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"git {args[0]} failed: {exc}") from exc


def checkout(case: EvalCase, dest: Path) -> tuple[Path, str, str]:
    """Make ``dest`` a checkout of ``case`` at its head; returns (repository, base ref, head ref)."""
    if case.tree is not None:
        message = "\n\n".join(t for t in (case.title or "change", case.description) if t)
        return _from_tree(Path(case.tree), dest, message)
    assert case.repo is not None and case.base and case.head
    source = case.repo
    if not case.repo_is_url and not Path(source).exists():
        raise InputError(f"case {case.id}: repository {source} does not exist")
    clone = ["clone", "-q", "--no-hardlinks"] if not case.repo_is_url else ["clone", "-q", "--filter=blob:none"]
    _git(dest.parent, *clone, "-b", case.head, source, str(dest))
    if case.base != case.head:
        _git(dest, "branch", "-f", case.base, f"origin/{case.base}")
    return dest, case.base, case.head


def _from_tree(tree: Path, dest: Path, message: str) -> tuple[Path, str, str]:
    """The change is one commit whose ``message`` (the case's title and description) the reviewers read."""
    base, head = tree / "base", tree / "head"
    if not base.is_dir() or not head.is_dir():
        raise InputError(f"{tree} needs base/ and head/ directories")
    dest.mkdir(parents=True)
    _git(dest, "init", "-q")
    _copy_tree(base, dest)
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "--allow-empty", "-m", "base")
    _git(dest, "checkout", "-q", "-b", "feature")
    for child in dest.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    _copy_tree(head, dest)
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "--allow-empty", "-m", message)
    return dest, "main", "feature"


def _copy_tree(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, dirs_exist_ok=True, symlinks=True)
