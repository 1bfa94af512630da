"""Publishing a review on a merge request, and the failure note when there is none.

``MergeRequestPublisher.publish`` posts inline threads first (4 at a time), resolves the fixed and
dismissed threads, sets the approval, and edits or creates the summary last, so a run that dies
halfway is completed by the next: everything already there is found by its marker and skipped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from codejury.forges.description import placed, runs_quick_actions
from codejury.forges.errors import ForgeRefused
from codejury.forges.gitlab.merge_request import CONCURRENCY, MergeRequestState
from codejury.forges.gitlab.types import position_for
from codejury.forges.plan import PreviousState, PublishPlan, Replan
from codejury.forges.summary import failure_note

MAX_DESCRIPTION = 1_048_576
"""The longest description GitLab stores."""


class MergeRequestPublisher:
    """Publishes on ``pull`` what its reader found there (diff version, changed files, previous review)."""

    def __init__(self, pull: MergeRequestState) -> None:
        self.pull = pull

    async def _bounded(self, jobs: list[Callable[[], Awaitable[None]]]) -> None:
        """Run ``jobs`` at most CONCURRENCY at a time; all run to the end, then the first error is raised."""
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(job: Callable[[], Awaitable[None]]) -> None:
            async with gate:
                await job()

        results = await asyncio.gather(*(one(j) for j in jobs), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def publish(self, plan: PublishPlan, replan: Replan) -> list[str]:
        """Inline threads, then resolutions, then approval, then the summary (see the module docstring)."""
        project, iid = self.pull.target.project, self.pull.target.iid
        refused: set[str] = set()
        notices: list[str] = []

        def post(comment_index: int) -> Callable[[], Awaitable[None]]:
            comment = plan.inline[comment_index]

            async def run() -> None:
                change = self.pull.files.get(comment.finding.path)
                refs = self.pull.refs
                position = position_for(refs, change, comment.start_line, comment.end_line) if change and refs else None
                if position is None:
                    refused.add(comment.fingerprint)
                    return
                try:
                    await self.pull.api.create_discussion(project, iid, comment.body, position)
                except ForgeRefused as exc:
                    if exc.status != 400:
                        raise
                    refused.add(comment.fingerprint)
                    where = f"{comment.finding.path}:{comment.end_line}"
                    self.pull.warn(f"GitLab refused the inline comment on {where}: moved to the summary")
                    return
                self.pull.posted.append(f"inline comment on {comment.finding.path}:{comment.end_line}")

            return run

        await self._bounded([post(i) for i in range(len(plan.inline))])
        threads = {t.id: t for t in self.pull.previous.threads}

        def settle(index: int) -> Callable[[], Awaitable[None]]:
            update = plan.resolve[index]

            async def run() -> None:
                thread = threads.get(update.thread_id)
                if thread is None or not thread.bot_said(update.note):
                    await self.pull.api.reply(project, iid, update.thread_id, update.note)
                if not update.resolve:
                    self.pull.posted.append("answered a reply")
                    return
                await self.pull.api.resolve_discussion(project, iid, update.thread_id)
                self.pull.posted.append(f"resolved a thread ({update.reason})")

            return run

        await self._bounded([settle(i) for i in range(len(plan.resolve))])
        notices += await self._approval(plan)
        if refused or notices:
            plan = replan(frozenset(refused), tuple(notices))
        previous = self.pull.previous
        unchanged = not plan.summary_changed and all(n in (previous.summary_body or "") for n in notices)
        if previous.summary_id is not None and not unchanged and plan.summary != previous.summary_body:
            await self.pull.api.edit_note(project, iid, int(previous.summary_id), plan.summary)
            self.pull.posted.append("summary comment (edited)")
        elif previous.summary_id is None:
            await self.pull.api.create_note(project, iid, plan.summary)
            self.pull.posted.append("summary comment")
        return list(self.pull.posted)

    async def _approval(self, plan: PublishPlan) -> list[str]:
        project, iid = self.pull.target.project, self.pull.target.iid
        if plan.approval == "approve":
            try:
                await self.pull.api.approve(project, iid, sha=self.pull.head_sha or None)
            except ForgeRefused as exc:
                if exc.status not in (401, 409):
                    raise
                self.pull.warn(f"warning: could not approve: {exc}")
                why = "a newer commit was pushed" if exc.status == 409 else "GitLab refused the approval (401)"
                return [f"codejury could not approve this merge request: {why}."]
            self.pull.posted.append("approval")
        elif plan.approval == "unapprove":
            try:
                await self.pull.api.unapprove(project, iid)
            except ForgeRefused as exc:
                if exc.status != 404:
                    raise
            else:
                self.pull.posted.append("approval withdrawn")
        return []

    async def place_walkthrough(self, block: str) -> str | None:
        """``block`` in the merge request's description (``forges.description``), read right before it is written;
        None when it is there, else why the token may not write it (the caller keeps it in the summary)."""
        project, iid = self.pull.target.project, self.pull.target.iid
        current = (await self.pull.api.merge_request(project, iid)).description
        if runs_quick_actions(current):
            return (
                "the description has a line GitLab would run as a quick action (a `/command` at the start of a "
                "line) as codejury's user, so codejury does not save it"
            )

        async def write(description: str) -> None:
            await self.pull.api.update_description(project, iid, description)

        return await placed(
            block, current, write, self.pull.posted, forge="GitLab", limit=MAX_DESCRIPTION,
            hint="it needs the api scope and the Developer role",
        )  # fmt: skip

    async def publish_failure(self, previous: PreviousState, message: str, head_sha: str) -> list[str]:
        """The short failure note in place of the summary; withdraw an earlier approval."""
        project, iid = self.pull.target.project, self.pull.target.iid
        body, _ = failure_note(previous, message, head_sha or self.pull.head_sha)
        if previous.bot_approved:
            try:
                await self.pull.api.unapprove(project, iid)
                self.pull.posted.append("approval withdrawn")
            except ForgeRefused as exc:
                if exc.status != 404:
                    raise
        if previous.summary_id is None:
            await self.pull.api.create_note(project, iid, body)
            self.pull.posted.append("failure note")
        elif previous.summary_body != body:
            await self.pull.api.edit_note(project, iid, int(previous.summary_id), body)
            self.pull.posted.append("failure note (summary edited)")
        return list(self.pull.posted)
