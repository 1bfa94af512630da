"""One queued review: the merge request of a ``ReviewRequest`` reviewed and published.

``JobRunner.run`` reviews through the composition root (``codejury.session``) exactly as
``codejury review --url URL --publish`` does, with the service's model flags, plugins (loaded
once per runner, in its ``Session``) and config file, so a review from a webhook is the review a CI job would post.
What differs is the environment it runs in: a GitHub App installation's token in
``CODEJURY_GITHUB_TOKEN`` when the delivery came from an App, the service's store as
``CODEJURY_RECORD_URL`` unless one is set, and a recorder that counts the review in the
service's ``/metrics``. Jobs run on the runner's ``ReviewLoop`` (a loop in a thread of its own),
never on the loop that answers webhooks.

Before anything is fetched (an App token included), the job's merge request URL is checked
against the configured forges again (``refused_url``): a job queued by an older version, or
written into the PostgreSQL queue by anyone, never sends a token to another host.

Outcomes: ``ForgeUnavailable`` (429, 5xx, network, after the client's own retries) propagates,
so the queue retries the job later with backoff; a review that failed (no reviewer succeeded: the
analyzers' hits are posted as a partial review, or the failure note when there are none) or a
refusal (bad token, a merge request with no changes) ends the job, logged in one line; anything
else is a bug and propagates too. Each job that does not end in a published review is counted by
reason class in ``codejury_review_job_failures_total`` (``codejury.telemetry.service_metrics``), in
the process that ran it; the lines a job writes carry its key (``codejury.service.logs.job_context``).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from codejury.errors import CodejuryError, InternalError, ReviewFailed
from codejury.flags import ServiceReviewFlags, service_flags
from codejury.forges.errors import ForgeUnavailable
from codejury.forges.hosts import forge_hosts
from codejury.service.logs import job_context
from codejury.service.review_loop import ReviewLoop
from codejury.service.webhooks import ReviewRequest, refused_url

if TYPE_CHECKING:
    from codejury.service.github_app import GitHubAppTokens
    from codejury.session import Session
    from codejury.telemetry.metrics import ReviewMetrics
    from codejury.telemetry.service_metrics import FailureReason, JobMetrics

RECORD_URL_ENV = "CODEJURY_RECORD_URL"
GITHUB_TOKEN_ENV = "CODEJURY_GITHUB_TOKEN"
Submit = Callable[[ReviewRequest], Awaitable[str]]


@dataclass(frozen=True)
class ReviewSetup(ServiceReviewFlags):
    """What every review of this service or worker runs with: the ``codejury review`` flags it shares, and its
    store."""

    record_url: str | None = None
    """The service's store, for reviews whose environment names none."""


class JobRunner:
    """Runs queued reviews, one call per job (several may run at once)."""

    def __init__(
        self,
        setup: ReviewSetup,
        env: Mapping[str, str],
        *,
        app_tokens: GitHubAppTokens | None = None,
        metrics: ReviewMetrics | None = None,
        job_metrics: JobMetrics | None = None,
        say: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.setup = setup
        self.env = dict(env)
        self.app_tokens = app_tokens
        self.metrics = metrics
        self.job_metrics = job_metrics
        self.say = say
        self.hosts = forge_hosts(self.env)
        """The configured forges (``ConfigError`` at start-up for a malformed setting)."""
        self.submit: Submit | None = None
        """How a chat job queues a review (``/codejury review``): the service's or worker's queue."""
        self.reviews = ReviewLoop()
        """Where the jobs run: a loop of their own, so the caller's loop stays free to answer webhooks."""
        self._session: Session | None = None

    def session(self) -> Session:
        """The process's session: the service's plugins, loaded by the first job that needs them and kept (a job
        whose plugin module cannot be imported ends with that error, and the next job tries again)."""
        if self._session is None:
            from codejury.session import Session, load_plugins

            self._session = Session(load_plugins(self.setup.plugins), warn=self.say, progress=self.say)
        return self._session

    async def job_env(self, request: ReviewRequest) -> dict[str, str]:
        env = dict(self.env)
        if self.setup.record_url and not env.get(RECORD_URL_ENV, "").strip():
            env[RECORD_URL_ENV] = self.setup.record_url
        if request.forge == "github" and request.installation_id is not None and self.app_tokens is not None:
            env[GITHUB_TOKEN_ENV] = await self.app_tokens.token(request.installation_id)
        return env

    async def run(self, request: ReviewRequest) -> str:
        """Review and publish ``request``'s merge request (or carry out its chat command) on the review
        loop; returns a one-line outcome for the log."""
        refused = refused_url(request, self.hosts)
        if refused is not None:
            self._failed("refused")
            return f"refused, nothing fetched: {refused}"
        try:
            return await self._run_here(request)
        except ForgeUnavailable:
            self._failed("forge_unavailable")
            raise
        except Exception:
            self._failed("error")
            raise

    async def _run_here(self, request: ReviewRequest) -> str:
        home = asyncio.get_running_loop()
        env = await self.job_env(request)  # here: the App's tokens and their locks belong to this loop
        submit = self.submit

        async def submit_home(review: ReviewRequest) -> str:  # the queue's connections belong to this loop
            async def queued() -> str:
                assert submit is not None
                return await submit(review)

            return await ReviewLoop.home(home, queued())

        return await self.reviews.run(lambda: self._run(request, env, None if submit is None else submit_home))

    async def close(self) -> None:
        """Stop the review loop, closing the SDK clients of the models its reviews used (the session's)."""
        await self.reviews.close(None if self._session is None else self._session.close)

    def _failed(self, reason: FailureReason) -> None:
        if self.job_metrics is not None:
            self.job_metrics.failed(reason)

    async def _run(self, request: ReviewRequest, env: dict[str, str], submit: Submit | None) -> str:
        with job_context(request.key):  # on the review loop: its lines carry the job's key too
            return await self._review(request, env, submit)

    async def _review(self, request: ReviewRequest, env: dict[str, str], submit: Submit | None) -> str:
        if request.chat is not None:
            from codejury.service.chat_jobs import run_chat

            try:
                return await run_chat(request, env, self.setup, self.session(), submit, self.say, self.metrics)
            except (ForgeUnavailable, InternalError):
                raise
            except CodejuryError as exc:
                self._failed("not_reviewed")
                return f"chat command not carried out: {exc}"
        from codejury import session

        reviews = self.session()
        recorders: tuple[object, ...] = ()
        if self.metrics is not None:
            from codejury.telemetry.metrics import MetricsRecorder

            recorders = (MetricsRecorder(self.metrics, warn=self.say),)
        with tempfile.TemporaryDirectory(prefix="codejury-job-") as folder:
            flags = session.ReviewFlags(
                **service_flags(self.setup), fmt="json", output=Path(folder) / "review.json", url=request.url,
                publish=True, skip_reviewed_head=not request.forced, forced=request.forced,
            )  # fmt: skip
            try:
                outcome = await reviews.review(env, flags, recorders=recorders)
                # the review's lines go to the service's log, with the job's key
            except ForgeUnavailable:
                raise
            except session.HeadAlreadyReviewed as exc:  # a push's job, queued while this head was being reviewed
                return f"nothing to do: {exc}"
            except ReviewFailed as exc:
                self._failed("review_failed")
                if exc.partial is not None:
                    return f"review failed, partial review posted: {exc}"
                return f"review failed, failure note posted: {exc}"
            except InternalError:
                raise
            except CodejuryError as exc:
                self._failed("not_reviewed")
                return f"not reviewed: {exc}"
        refused = getattr(outcome.result, "refused", None)
        if refused is not None:  # a daily cap or the kill switch: no model called, published as not reviewed
            return f"not reviewed, published as such: {refused}"
        return "reviewed and published" + (" (it blocks the merge)" if outcome.blocks else "")
