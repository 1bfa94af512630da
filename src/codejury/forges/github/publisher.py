"""Publishing a review on a pull request, and the failure note when there is none.

``PullRequestPublisher.publish`` posts ONE review carrying every new inline comment and the
approval event (APPROVE / REQUEST_CHANGES / COMMENT), each line checked against the patch first;
a 422 for a line off the diff moves the refused comments to the summary and retries once; a
refused approval (Actions not allowed to approve, self-approval) is one warning and the review is
re-posted as a comment. Then it withdraws a stale approval (dismissal), resolves fixed and
dismissed threads (a reply first; only a reply when the token may not resolve; batched, a GraphQL
request per ten threads), edits or creates the summary and sets the ``codejury`` check run. Every
step skips what is already there, so a re-run on the same head posts nothing and a run that died
halfway is completed by the next without duplicates. A token that cannot write (a fork's
``pull_request`` run) posts nothing: the review goes to the job summary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from codejury.forges.description import placed
from codejury.forges.errors import ForgeAuthError, ForgeError
from codejury.forges.github.api import THREADS_PER_REQUEST, DraftComment, GitHubRefused, ReviewEvent, ThreadUpdate
from codejury.forges.github.api import Review as GitHubReview
from codejury.forges.github.checks import CHECK_NAME, check_report, failed_report
from codejury.forges.github.pull import PullRequestState, ReviewState
from codejury.forges.plan import InlineComment, PreviousState, PublishPlan, Replan
from codejury.forges.plan import ThreadUpdate as ThreadChange
from codejury.forges.safety import checked, inline_code, safe_line
from codejury.forges.summary import failure_note
from codejury.render.markdown import VERDICT_HEADLINES, render_review_markdown

MAX_BODY = 65_536
"""The longest description GitHub stores (a longer one is a 422)."""


def _is_not_accessible(exc: ForgeError) -> bool:
    return isinstance(exc, ForgeAuthError) and exc.status == 403 and "not accessible by integration" in str(exc)


def _approval_refused(exc: GitHubRefused) -> bool:
    text = " ".join([str(exc), *exc.errors]).lower()
    return "approve" in text or "your own pull request" in text or "request changes" in text


def _off_diff(exc: GitHubRefused) -> bool:
    text = " ".join([str(exc), *exc.errors]).lower()
    return "diff" in text or "could not be resolved" in text or "line" in text


class PullRequestPublisher:
    """Publishes on ``pull`` what its reader found there (previous review, threads, commentable lines)."""

    def __init__(self, pull: PullRequestState) -> None:
        self.pull = pull
        self._warned: set[str] = set()
        self._refused_event = False

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.pull.warn(message)

    async def publish(self, plan: PublishPlan, replan: Replan) -> list[str]:
        """The review (inline + event), dismissals, resolutions, the summary, the check run."""
        if self.pull.read_only:
            return self._keep_local(self._local_markdown(plan.summary))
        try:
            return await self._publish(plan, replan)
        except ForgeError as exc:
            if self.pull.target.in_ci and not self.pull.posted and _is_not_accessible(exc):
                self.pull.read_only = (
                    f"the token cannot write here ({exc.status}: a fork's pull_request token is read-only)"
                )
                return self._keep_local(self._local_markdown(plan.summary))
            raise

    async def _publish(self, plan: PublishPlan, replan: Replan) -> list[str]:
        refused: set[str] = set()
        notices: list[str] = []
        await self._post_review(plan, refused, notices)
        await self._withdraw(plan)
        await self._settle(plan)
        if refused or notices:
            plan = replan(frozenset(refused), tuple(notices))
        await self._summary(plan.summary, plan.summary_changed, notices)
        await self._check_run(plan)
        return list(self.pull.posted)

    def _desired(self, plan: PublishPlan) -> ReviewState | None:
        outcome = self.pull.outcome
        if outcome is not None and not outcome.approve:
            return self.pull.review_state()  # comments only: leave the bot's approval state as it is
        if plan.approval == "approve" or (plan.approval == "none" and self.pull.previous.bot_approved):
            return "APPROVED"
        review = outcome.review if outcome else None
        if (
            review is not None
            and review.verdict == "requested_changes"
            and review.judged
            and not review.break_glass
            and any(r.status == "ok" for r in review.reviewers)
        ):
            return "CHANGES_REQUESTED"
        return None

    async def _post_review(self, plan: PublishPlan, refused: set[str], notices: list[str]) -> None:
        pull = self.pull
        desired = self._desired(plan)
        event: ReviewEvent = "COMMENT"
        if desired is not None and desired != self.pull.review_state():
            event = "APPROVE" if desired == "APPROVED" else "REQUEST_CHANGES"
        comments: list[InlineComment] = []
        for comment in plan.inline:
            if self._allows(comment):
                comments.append(comment)
            else:
                refused.add(comment.fingerprint)
        for attempt in range(3):
            if not comments and event == "COMMENT":
                return
            drafts = [
                DraftComment(c.finding.path, c.end_line, c.body, start_line=c.start_line if c.start_line < c.end_line
                             else None)
                for c in comments
            ]  # fmt: skip
            try:
                await pull.api.create_review(
                    pull.target.repo, pull.target.number, commit_id=pull.head_sha, body=self._review_body(plan, event),
                    event=event, comments=drafts,
                )  # fmt: skip
            except GitHubRefused as exc:
                if exc.status != 422 or attempt == 2:
                    raise
                if event != "COMMENT" and _approval_refused(exc):
                    what = "approve" if event == "APPROVE" else "request changes on"
                    reason = safe_line(
                        exc.errors[0] if exc.errors else re.sub(r"^GitHub refused \S+ \S+: ", "", str(exc))
                    )
                    self.pull.warn(
                        f"warning: GitHub refused to let codejury {what} this pull request ({reason}); the review "
                        "is posted as a comment. A workflow GITHUB_TOKEN may approve only when the repository allows "
                        "GitHub Actions to approve pull requests; nobody may approve their own pull request."
                    )
                    notices.append(f"codejury could not {what} this pull request: GitHub refused ({reason}).")
                    self._refused_event = True
                    event = "COMMENT"
                    continue
                if comments and _off_diff(exc):
                    offenders = await self._offenders(comments)
                    refused.update(offenders)
                    comments = [c for c in comments if c.fingerprint not in offenders]
                    self.pull.warn(
                        f"warning: GitHub refused {len(offenders)} inline comment(s) as outside the diff: "
                        "moved to the summary"
                    )
                    continue
                raise
            self._record_review(event, len(comments))
            return

    def _record_review(self, event: ReviewEvent, count: int) -> None:
        if count:
            self.pull.posted.append(f"review with {count} inline comment(s)")
        if event == "APPROVE":
            self.pull.posted.append("approval")
            self.pull.active.append(GitHubReview(0, "APPROVED", "", self.pull.head_sha, self.pull.me))
        elif event == "REQUEST_CHANGES":
            self.pull.posted.append("changes requested")
            self.pull.active.append(GitHubReview(0, "CHANGES_REQUESTED", "", self.pull.head_sha, self.pull.me))

    def _allows(self, comment: InlineComment) -> bool:
        lines = self.pull.commentable.get(comment.finding.path)
        start = comment.start_line if comment.start_line < comment.end_line else None
        return lines is not None and lines.allows(comment.end_line, start_line=start)

    async def _offenders(self, comments: Sequence[InlineComment]) -> set[str]:
        """The comments GitHub refused: those off the diff as GitHub shows it now, else all (it does not say)."""
        fresh = {
            f.path: f.commentable_lines()
            for f in await self.pull.api.pull_files(self.pull.target.repo, self.pull.target.number)
        }
        self.pull.commentable = fresh
        offenders = {c.fingerprint for c in comments if not self._allows(c)}
        return offenders or {c.fingerprint for c in comments}

    def _review_body(self, plan: PublishPlan, event: ReviewEvent) -> str:
        verdict = plan.state.verdict
        headline = VERDICT_HEADLINES.get(verdict, verdict) if verdict else "review"
        lead = {"APPROVE": "Approved", "REQUEST_CHANGES": "Changes requested", "COMMENT": "Comments"}[event]
        commit = inline_code(self.pull.head_sha[:12])
        text = (
            f"**codejury** · {lead} · verdict: {safe_line(headline)} · commit {commit}\n\n"
            "The summary comment on this pull request has the whole review."
        )
        return checked(text)

    async def _withdraw(self, plan: PublishPlan) -> None:
        """Dismiss the bot's reviews that no longer say what the verdict says (an approval, a block)."""
        if self.pull.outcome is not None and not self.pull.outcome.approve:
            return
        desired = self._desired(plan)
        if not self._refused_event and desired == self.pull.review_state():
            return
        stale = [r for r in self.pull.active if r.id and r.state != desired]
        for review in stale:
            await self._dismiss(review)

    async def _dismiss(self, review: GitHubReview) -> None:
        message = f"Withdrawn by codejury: the review of {self.pull.head_sha[:12]} does not stand by it any more."
        try:
            await self.pull.api.dismiss_review(self.pull.target.repo, self.pull.target.number, review.id, message)
        except (ForgeAuthError, GitHubRefused) as exc:
            self._warn_once("dismiss", f"warning: could not withdraw codejury's earlier review: {exc}")
            return
        self.pull.active = [r for r in self.pull.active if r.id != review.id]
        self.pull.posted.append("approval withdrawn" if review.state == "APPROVED" else "change request withdrawn")

    async def _settle(self, plan: PublishPlan) -> None:
        """Reply (once) in each fixed, dismissed or answered thread and resolve the first two, a GraphQL
        request per ``THREADS_PER_REQUEST`` threads; a token that may not resolve: replies only, one warning."""
        for first in range(0, len(plan.resolve), THREADS_PER_REQUEST):
            await self._settle_some(plan.resolve[first : first + THREADS_PER_REQUEST])

    async def _settle_some(self, some: Sequence[ThreadChange]) -> None:
        previous = {t.id: t for t in self.pull.previous.threads}
        updates = []
        for update in some:
            thread = previous.get(update.thread_id)
            reply = update.note if thread is None or not thread.bot_said(update.note) else None
            known = self.pull.threads.get(update.thread_id)
            resolve = update.resolve and (known is None or known.viewer_can_resolve) and "resolve" not in self._warned
            if update.resolve and not resolve:
                self._cannot_resolve()
            updates.append(ThreadUpdate(update.thread_id, reply, resolve))
        failure: ForgeError | None = None
        for change, outcome in zip(some, await self.pull.api.settle_threads(updates), strict=True):
            if outcome.replied:
                self.pull.posted.append(f"reply in a thread ({change.reason})")
            if outcome.resolved:
                self.pull.posted.append(f"resolved a thread ({change.reason})")
            elif isinstance(outcome.resolve_error, ForgeAuthError):
                self._cannot_resolve()
            elif outcome.resolve_error is not None:
                failure = failure or outcome.resolve_error
            failure = failure or outcome.reply_error
        if failure is not None:
            raise failure

    def _cannot_resolve(self) -> None:
        self._warn_once(
            "resolve",
            "warning: the token may not resolve review threads (a workflow GITHUB_TOKEN needs `contents: write` "
            "besides `pull-requests: write`): replied in them instead",
        )

    async def _summary(self, body: str, changed: bool, notices: Sequence[str]) -> None:
        repo, number, previous = self.pull.target.repo, self.pull.target.number, self.pull.previous
        unchanged = not changed and all(n in (previous.summary_body or "") for n in notices)
        if previous.summary_id is not None and not unchanged and body != previous.summary_body:
            await self.pull.api.edit_issue_comment(repo, int(previous.summary_id), body)
            self.pull.posted.append("summary comment (edited)")
        elif previous.summary_id is None:
            await self.pull.api.create_issue_comment(repo, number, body)
            self.pull.posted.append("summary comment")

    # -- the walkthrough in the description -----------------------------------------------------------
    async def place_walkthrough(self, block: str) -> str | None:
        """``block`` in the pull request's description (``forges.description``), the body read right before it is
        written; None when it is there, else why the token may not write it (the caller keeps it in the summary)."""
        repo, number = self.pull.target.repo, self.pull.target.number
        current = (await self.pull.api.pull_request(repo, number)).body

        async def write(body: str) -> None:
            await self.pull.api.update_pull_body(repo, number, body)

        return await placed(
            block, current, write, self.pull.posted, forge="GitHub", limit=MAX_BODY,
            hint="a workflow token needs `pull-requests: write`",
        )  # fmt: skip

    # -- the check run -----------------------------------------------------------------------------
    async def _check_run(self, plan: PublishPlan | None, *, failed: str | None = None) -> None:
        if failed is not None:
            conclusion, title, summary, annotations = failed_report(failed)
        elif self.pull.outcome is None or plan is None:
            return
        else:
            conclusion, title, summary, annotations = check_report(self.pull.outcome, plan, self.pull.head_sha)
        try:
            wanted = ("completed", conclusion, title, summary)
            for run in await self.pull.api.check_runs_for(self.pull.target.repo, self.pull.head_sha, CHECK_NAME):
                if (run.status, run.conclusion, run.title, run.summary) == wanted:
                    return
            await self.pull.api.create_check_run(
                self.pull.target.repo, name=CHECK_NAME, head_sha=self.pull.head_sha, title=title, summary=summary,
                conclusion=conclusion, annotations=annotations,
            )  # fmt: skip
        except (ForgeAuthError, GitHubRefused) as exc:
            self._warn_once(
                "checks",
                f"warning: no check run: GitHub refused it ({exc.status}); a workflow token needs `checks: write`, "
                "and a personal token cannot create check runs",
            )
            return
        self.pull.posted.append(f"check run ({conclusion})")

    # -- failure and read-only runs ----------------------------------------------------------------
    async def publish_failure(self, previous: PreviousState, message: str, head_sha: str) -> list[str]:
        """The short failure note in place of the summary, no approval, and a "not reviewed" check run."""
        body, _ = failure_note(previous, message, head_sha or self.pull.head_sha)
        if self.pull.read_only:
            return self._keep_local(body)
        try:
            for review in [r for r in self.pull.active if r.state == "APPROVED"]:
                await self._dismiss(review)
            await self._summary(body, True, ())
            await self._check_run(None, failed=message)
        except ForgeError as exc:
            if self.pull.target.in_ci and not self.pull.posted and _is_not_accessible(exc):
                self.pull.read_only = f"the token cannot write here ({exc.status})"
                return self._keep_local(body)
            raise
        return list(self.pull.posted)

    def _local_markdown(self, summary: str) -> str:
        return render_review_markdown(self.pull.outcome.review) if self.pull.outcome else summary

    def _keep_local(self, markdown: str) -> list[str]:
        """Post nothing: the review goes to the job summary (the job log has it already)."""
        where = "the job log"
        path = self.pull.env.get("GITHUB_STEP_SUMMARY")
        if path:
            try:
                with open(path, "a", encoding="utf-8") as out:
                    out.write(markdown if markdown.endswith("\n") else markdown + "\n")
                where = "the job log and the job summary"
            except OSError as exc:
                self.pull.warn(f"warning: cannot write the job summary {path}: {exc}")
        self.pull.warn(f"nothing was posted on GitHub: {self.pull.read_only}; the review is in {where}")
        return []
