"""Measure the repository cache that reviews with no checkout (``--url``, the service) read the head commit from.

Usage: python benchmarks/repo_cache.py [--files N] [--pushes N] [--smoke]

Generates a repository of N source files (default 10,000, about 4 KB each, as benchmarks/index.py
does) and a branch of pushes on top of it, each changing 20 files; the fake GitLab serves it over
git's smart HTTP protocol on loopback, with the bot's token as the password. Then prints:

- the first fetch of the first push's head commit into an empty cache (seconds, MB on disk);
- an update fetch of the next push into that cache (seconds, MB it added, MB in all);
- the cache hit rate over a sequence of reviews: every push reviewed when it lands, then again
  three times (a re-review command, a redelivered webhook, a review of an older push still open);
  a hit is a review whose head commit the cache already held (no request to the forge).

Targets on 2 cores: first fetch ≤ 30 s, update ≤ 5 s, the update adding ≤ 5 % of the first
fetch's size; exit status 1 when one is missed. Every review must read its head commit (a
review left diff-only sets the exit status at any size). ``--smoke``: 200 files, 3 pushes;
targets printed, not enforced.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from codejury_fakes.gitlab import FakeGitLab  # noqa: E402
from index import change, generate  # noqa: E402

from codejury.checkout.cache import Remote, RepoCache  # noqa: E402

CHANGED = 20


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}
    done = subprocess.run(["git", *args], cwd=cwd, env={**env, "PATH": "/usr/bin:/bin:/usr/local/bin"},
                          capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout.strip()


def _size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


def _repository(root: Path, files: int, pushes: int) -> tuple[list[str], list[list[str]]]:
    """The repository at ``root``: a base commit and ``pushes`` commits on top; (head shas, changed paths)."""
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    paths = generate(root, files)
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "base")
    heads, changed = [], []
    for n in range(pushes):
        change(paths, CHANGED, seed=100 + n)
        _git(root, "commit", "-qam", f"push {n + 1}")
        heads.append(_git(root, "rev-parse", "HEAD"))
        changed.append(_git(root, "diff", "--name-only", "HEAD~1", "HEAD").splitlines())
    return heads, changed


def _review(cache: RepoCache, remote: Remote, sha: str, paths: list[str]) -> tuple[float, bool, bool]:
    """One review's head side: (seconds, whether it was fetched, whether the review got its tree)."""
    t = time.perf_counter()
    side = cache.head_side(remote, sha, paths)
    seconds = time.perf_counter() - t
    try:
        return seconds, side.fetched, side.missing is None and side.root is not None
    finally:
        side.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, help="files in the repository (default 10,000; 200 with --smoke)")
    ap.add_argument("--pushes", type=int, help="pushes reviewed (default 10; 3 with --smoke)")
    ap.add_argument("--smoke", action="store_true", help="smoke size: seconds, targets printed, not enforced")
    args = ap.parse_args()
    files = args.files or (200 if args.smoke else 10_000)
    pushes = max(2, args.pushes or (3 if args.smoke else 10))
    if args.smoke:
        print(f"smoke size: {files} files, {pushes} pushes")
    with tempfile.TemporaryDirectory(prefix="codejury-repo-cache-bench-") as tmp, FakeGitLab() as gl:
        source = Path(tmp) / "source"
        t = time.perf_counter()
        heads, changed = _repository(source, files, pushes)
        print(f"repository: {files:,} files, {_size_mb(source / '.git'):.1f} MB of git objects "
              f"(generated in {time.perf_counter() - t:.1f} s)")  # fmt: skip
        gl.serve_git("acme/widgets", source)
        remote = Remote(f"{gl.url}/acme/widgets.git", "oauth2", FakeGitLab.BOT_TOKEN)
        cache = RepoCache(Path(tmp) / "cache")

        first_s, fetched, ok = _review(cache, remote, heads[0], changed[0])
        first_mb = _size_mb(cache.root)
        print(f"first fetch of a {files:,}-file repository: {first_s:.2f} s, {first_mb:.1f} MB on disk")
        update_s, fetched_update, ok_update = _review(cache, remote, heads[1], changed[1])
        total_mb = _size_mb(cache.root)
        print(f"update fetch ({CHANGED} files changed): {update_s:.2f} s, +{total_mb - first_mb:.2f} MB "
              f"({total_mb:.1f} MB on disk in all)")  # fmt: skip
        read_all = ok and ok_update and fetched and fetched_update

        sequence: list[int] = []  # push indices, in the order their reviews run
        for n in range(pushes):
            sequence += [n, n, n, max(0, n - 1)]  # landed, re-review command, redelivery, an older push
        fresh = RepoCache(Path(tmp) / "cache-sequence")
        hits, seconds = 0, []
        for n in sequence:
            s, was_fetched, got = _review(fresh, remote, heads[n], changed[n])
            seconds.append(s)
            hits += not was_fetched
            read_all = read_all and got
        seconds.sort()
        rate = hits / len(sequence)
        print(f"cache hit rate: {hits}/{len(sequence)} reviews ({rate:.0%}) over {pushes} pushes, "
              f"head side ready in median {seconds[len(seconds) // 2] * 1000:.0f} ms")  # fmt: skip
        requests = [r for r in gl.git.requests if r.status == 200]
        print(f"git requests to the forge: {len(requests)} answered, {len(gl.git.requests) - len(requests)} refused")
    targets = first_s <= 30 and update_s <= 5 and (total_mb - first_mb) <= 0.05 * first_mb
    print("targets (first fetch ≤ 30 s, update ≤ 5 s adding ≤ 5 % of the first):", "met" if targets else "NOT met")
    if not read_all:
        print("a review did not get its head commit's tree", file=sys.stderr)
        return 1
    if args.smoke:
        return 0
    return 0 if targets else 1


if __name__ == "__main__":
    sys.exit(main())
