"""Publishing benchmark (part of ``make bench``): API calls and wall time against the fake forges.

Every API call to the fake GitLab and the fake GitHub costs ``--latency`` seconds (50 ms by
default), as a real forge over the network would. Two scenarios on each forge, each measured
from reading the merge (pull) request to the last published byte (no model: the review is
given; the same review on both forges):

1. first review of a merge request, 20 findings on diff lines → 20 inline threads, summary,
   approval state;
2. re-review of a merge request with 50 earlier threads after a push that rewrote the lines of
   10 of them: 10 threads resolved with a note, 40 kept, nothing posted twice.

On GitHub the "inline threads" are the bot's review threads (all posted in one review), and the
run also reads which files changed since the last reviewed commit (the compare API) and sets
the ``codejury`` check run, as ``codejury review --publish`` does in a workflow.

Publishing should grow with the number of findings and threads only, and run independent calls
concurrently where the API allows. Usage: python benchmarks/publish.py [--latency S] [--smoke]
(``--smoke``: 5 ms per call, a first review of 5 findings, a re-review of 10 threads with 2 fixed.)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PATH = "app/service.py"
LINES = 400


@dataclass(frozen=True)
class Sizes:
    """Findings of each first review; earlier threads of the re-review, and how many of them a push fixed."""

    first: tuple[int, ...] = (5, 20, 40)
    earlier: int = 50
    fixed: int = 10


SMOKE = Sizes(first=(5,), earlier=10, fixed=2)


def texts(changed: set[int], suffix: str) -> tuple[str, str]:
    """A 400-line file before and after a change of the given lines (1-based)."""
    old = [f"value_{n} = compute({n})\n" for n in range(1, LINES + 1)]
    new = [f"value_{n} = compute({n}, {suffix})\n" if n in changed else line for n, line in enumerate(old, 1)]
    return "".join(old), "".join(new)


def review_with(lines: list[int]) -> Any:
    from codejury.findings import Finding, Review

    findings = [
        Finding(
            id=f"f{n}",
            reviewer="code_quality",
            category=f"check-{n}",
            severity="warning" if n % 3 == 0 else "suggestion",
            path=PATH,
            start_line=n,
            end_line=n,
            title=f"Problem {chr(65 + n % 26)}{chr(65 + n // 26 % 26)} in value",
            body="The value is computed without a bound.",
            confidence=0.9,
        )
        for n in lines
    ]
    return Review(verdict="approved_with_comments", tier="lite", summary="Some suggestions.", findings=findings)


async def publish_once(gl: Any, review: Any, max_inline: int) -> tuple[int, float, list[str]]:
    """Read the MR and the bot's state, plan, publish: (API calls, wall seconds, what was posted)."""
    from codejury.forges.gitlab import GitLabMergeRequest, GitLabTarget
    from codejury.forges.plan import PlanOptions, PublishPlan
    from codejury.forges.publish import plan_publish

    before = gl.api_calls
    started = time.perf_counter()
    target = GitLabTarget(gl.api_url, 1, 7, gl.BOT_TOKEN)
    async with GitLabMergeRequest(target) as mr:
        change = await mr.load_change()
        previous = await mr.load_previous()
        options = PlanOptions(head_sha=mr.head_sha, max_inline=max_inline, line_url=mr.line_url)
        plan = plan_publish(review, change.files, previous, options)

        def replan(refused: frozenset[str], notices: tuple[str, ...]) -> PublishPlan:
            return plan_publish(review, change.files, previous, replace(options, refused=refused, notices=notices))

        posted = await mr.publish(plan, replan)
    return gl.api_calls - before, time.perf_counter() - started, posted


def inline_threads(gl: Any) -> int:
    return sum(1 for d in gl.discussions(1, 7) if d["notes"][0].get("position"))


async def gitlab(latency: float, sizes: Sizes) -> None:
    from codejury_fakes.gitlab import FakeGitLab

    # 1. First review, 20 findings (and 5 and 40, to show what the cost grows with).
    for count in sizes.first:
        lines = list(range(5, 5 * count + 5, 5))
        with FakeGitLab(latency_s=latency) as gl:
            gl.add_mr(1, 7, files={PATH: texts(set(lines), "limit")})
            calls, wall, _ = await publish_once(gl, review_with(lines), max_inline=count)
            threads = inline_threads(gl)
            print(f"gitlab first review, {count} findings: {calls} API calls, {wall:.2f} s ({threads} inline threads)")

    # 2. Re-review: 50 earlier threads, a push rewrote the lines of 10 of them.
    lines = list(range(5, 5 * sizes.earlier + 5, 5))
    fixed = set(lines[: sizes.fixed])
    with FakeGitLab(latency_s=0.0) as gl:
        gl.add_mr(1, 7, files={PATH: texts(set(lines), "limit")})
        await publish_once(gl, review_with(lines), max_inline=sizes.earlier)
        old, new = texts(set(lines), "limit")
        _, fixed_text = texts(set(lines) - fixed, "limit")
        fixed_text = "".join(
            f"value_{n} = compute({n}, checked)\n" if n in fixed else line
            for n, line in enumerate(fixed_text.splitlines(keepends=True), 1)
        )
        gl.push(1, 7, files={PATH: (old, fixed_text)})
        gl.latency_s = latency
        calls, wall, posted = await publish_once(gl, review_with(lines[sizes.fixed :]), max_inline=sizes.earlier)
        resolved = sum(1 for d in gl.discussions(1, 7) if d["notes"][0].get("position") and d["notes"][0]["resolved"])
        print(
            f"gitlab re-review, {sizes.earlier} earlier threads, {sizes.fixed} fixed: {calls} API calls, {wall:.2f} s "
            f"({inline_threads(gl)} inline threads, {resolved} resolved, {len(posted)} actions)"
        )


GITHUB_REPO = "octo/app"
GITHUB_TOKEN = "ghs_bench_actions_token"


async def publish_github_once(gh: Any, review: Any, max_inline: int) -> tuple[int, float, list[str]]:
    """The same on GitHub, as a workflow's GITHUB_TOKEN runs it: (API calls, wall seconds, what was posted)."""
    from codejury.forges.github import GitHubPullRequest, GitHubTarget
    from codejury.forges.github.api import ACTIONS_BOT_LOGIN

    before = gh.api_calls
    started = time.perf_counter()
    target = GitHubTarget(gh.api_url, gh.graphql_url, GITHUB_REPO, 7, GITHUB_TOKEN, bot_login=ACTIONS_BOT_LOGIN)
    async with GitHubPullRequest(target) as pr:
        change = await pr.load_change()
        previous = await pr.load_previous()
        await pr.publish_review(review, change.files, previous, fail_on="never", approve=True, max_inline=max_inline)
        posted = list(pr.posted)
    return gh.api_calls - before, time.perf_counter() - started, posted


def github_fake(latency: float, files: dict[str, tuple[str, str]]) -> Any:
    from codejury_fakes.github import FakeGitHub

    gh = FakeGitHub(GITHUB_REPO, latency_s=latency)
    gh.add_user("alice")
    gh.add_token(GITHUB_TOKEN, kind="actions", permissions={"contents": "write"})  # may resolve threads
    gh.repo().actions_can_approve = True
    gh.add_pr(number=7, author="alice", files=files)
    return gh


def bot_threads(gh: Any) -> list[Any]:
    from codejury_fakes.github import ACTIONS_LOGIN

    return [t for t in gh.threads(7) if t.comments[0].user == ACTIONS_LOGIN]


async def github(latency: float, sizes: Sizes) -> None:
    # 1. First review, 20 findings (and 5 and 40, to show what the cost grows with).
    for count in sizes.first:
        lines = list(range(5, 5 * count + 5, 5))
        with github_fake(latency, {PATH: texts(set(lines), "limit")}) as gh:
            calls, wall, _ = await publish_github_once(gh, review_with(lines), max_inline=count)
            threads = len(bot_threads(gh))
            print(f"github first review, {count} findings: {calls} API calls, {wall:.2f} s ({threads} inline threads)")

    # 2. Re-review: 50 earlier threads, a push rewrote the lines of 10 of them.
    lines = list(range(5, 5 * sizes.earlier + 5, 5))
    fixed = set(lines[: sizes.fixed])
    with github_fake(0.0, {PATH: texts(set(lines), "limit")}) as gh:
        await publish_github_once(gh, review_with(lines), max_inline=sizes.earlier)
        old, _ = texts(set(lines), "limit")
        _, fixed_text = texts(set(lines) - fixed, "limit")
        fixed_text = "".join(
            f"value_{n} = compute({n}, checked)\n" if n in fixed else line
            for n, line in enumerate(fixed_text.splitlines(keepends=True), 1)
        )
        gh.push(7, {PATH: (old, fixed_text)})
        gh.latency_s = latency
        calls, wall, posted = await publish_github_once(gh, review_with(lines[sizes.fixed :]), max_inline=sizes.earlier)
        after = bot_threads(gh)
        resolved = sum(1 for t in after if t.is_resolved)
        print(
            f"github re-review, {sizes.earlier} earlier threads, {sizes.fixed} fixed: {calls} API calls, {wall:.2f} s "
            f"({len(after)} inline threads, {resolved} resolved, {len(posted)} actions)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, help="seconds added to every API call (default 0.05)")
    parser.add_argument("--smoke", action="store_true", help="smoke size: seconds, targets printed, not enforced")
    args = parser.parse_args()
    latency = args.latency if args.latency is not None else 0.005 if args.smoke else 0.05
    sizes = SMOKE if args.smoke else Sizes()
    if args.smoke:
        print("smoke size: a first review of 5 findings, a re-review of 10 threads with 2 fixed")
    print(f"latency per API call: {latency * 1000:.0f} ms")
    # Reading a merge request fetches its head commit, as a review does: into this run's folder, not the user's
    # repository cache.
    with tempfile.TemporaryDirectory() as folder:
        os.environ["CODEJURY_REPO_CACHE"] = str(Path(folder) / "repos")
        asyncio.run(gitlab(latency, sizes))
        asyncio.run(github(latency, sizes))


if __name__ == "__main__":
    main()
