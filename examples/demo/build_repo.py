"""Build the demo repository: base/ committed on main, change/ committed on a feature branch.

Usage: python build_repo.py DEST   (DEST must not exist or be empty)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENV = {
    "GIT_AUTHOR_NAME": "Dana Developer",
    "GIT_AUTHOR_EMAIL": "dana@example.com",
    "GIT_COMMITTER_NAME": "Dana Developer",
    "GIT_COMMITTER_EMAIL": "dana@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": str(HERE),
    "PATH": "/usr/bin:/bin:/usr/local/bin",
}


def git(dest: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=dest, env=ENV, check=True, stdout=subprocess.DEVNULL)


def build(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise SystemExit(f"{dest} is not empty")
    shutil.copytree(HERE / "base", dest, dirs_exist_ok=True)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "Initial shop service")
    git(dest, "checkout", "-q", "-b", "feature/reports-search-payments")
    shutil.copytree(HERE / "change", dest, dirs_exist_ok=True)
    git(dest, "add", "-A")
    git(
        dest,
        "commit",
        "-q",
        "-m",
        "Add order report, product search and card payments\n\n"
        "Adds a per-order customer report, a product search endpoint helper and\n"
        "card charging through the payment provider. Simplifies order_total.",
    )
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(build(Path(sys.argv[1])))
