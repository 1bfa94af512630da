"""The forge as a publisher of the pipeline's publish stage: the review posted on the merge request.

``ForgePublisher`` wraps an open forge adapter and what it read before the review (the bot's
earlier comments and threads): a finished review becomes the summary comment, inline threads and
approval state; a review that failed becomes the failure note (and withdraws an earlier approval).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass

from codejury.change.types import FileChange
from codejury.findings import Plan, Review
from codejury.forges.description import IN_DESCRIPTION, earlier_walkthrough_notice, walkthrough_block
from codejury.forges.plan import Forge, PreviousState
from codejury.record.events import EventLog


@dataclass(eq=False)
class ForgePublisher:
    """Posts the review on the merge request (``--publish``)."""

    forge: Forge
    previous: PreviousState
    files: Sequence[FileChange]
    _: KW_ONLY
    fail_on: str
    approve: bool
    max_inline: int
    events: EventLog
    say: Callable[[str], None]
    describe_in: str = "comment"
    """Where the walkthrough goes: the summary comment, or the description between codejury's markers."""

    async def publish(self, result: Review | Plan) -> None:
        if not isinstance(result, Review):
            return  # a dry run posts nothing
        forge = self.forge
        review, notices = await self._place_walkthrough(result)
        plan = await forge.publish_review(
            review,
            self.files,
            self.previous,
            fail_on=self.fail_on,
            approve=self.approve,
            max_inline=self.max_inline,
            notices=notices,
        )
        self.events.emit(
            "published",
            forge=forge.forge_name,
            posted=len(forge.posted),
            approval=plan.approval,
            break_glass_by=list(forge.break_glass_by),
            earlier=self._earlier(plan.state.findings),
        )
        if not forge.read_only:
            done = ", ".join(forge.posted) if forge.posted else "nothing new to post"
            self.say(f"published on {forge.web_url}: {done}")

    async def _place_walkthrough(self, review: Review) -> tuple[Review, tuple[str, ...]]:
        """With ``describe_in = "description"``: the walkthrough written in the description, and the review whose
        summary carries one line pointing there; where the token may not edit the description, the review as it is
        (the walkthrough in the summary) and a line saying why. Where this review's walkthrough does not replace a
        block an earlier push left in the description (no walkthrough this time, ``describe_in = "comment"``, a
        refusal), a line naming the commit that block describes."""
        forge = self.forge
        earlier = earlier_walkthrough_notice(forge.described_commit, forge.head_sha)
        stale = (earlier,) if earlier else ()
        if self.describe_in != "description" or review.walkthrough is None or forge.read_only:
            return review, stale
        refused = await forge.place_walkthrough(walkthrough_block(review.walkthrough, forge.head_sha))
        if refused is None:
            return review.model_copy(update={"walkthrough": None}), (IN_DESCRIPTION,)
        self.say(f"warning: the walkthrough stays in the summary comment: {refused}")
        return review, (f"The walkthrough is in this comment, not in the description: {refused}.", *stale)

    def _earlier(self, now: Mapping[str, str]) -> dict[str, str]:
        """What became of each finding the last review published: fingerprint → open, fixed or dismissed."""
        before = self.previous.state.findings if self.previous.state else {}
        return {fp: now.get(fp, status) for fp, status in before.items()}

    async def publish_failure(self, reason: str) -> None:
        forge = self.forge
        await forge.publish_failure(self.previous, f"no reviewer succeeded ({reason})", forge.head_sha)
        if not forge.read_only:
            self.say(f"posted the failure note on {forge.web_url}")
