"""The review service's ASGI application (Starlette): webhooks, ingest, metrics and health.

Routes:

- ``POST /webhooks/github``, ``POST /webhooks/gitlab``: mounted only for a forge whose secret is
  set (``CODEJURY_GITHUB_WEBHOOK_SECRET``, ``CODEJURY_GITLAB_WEBHOOK_TOKEN``); the order is body
  cap (413), authentication (401, nothing kept), JSON (400 ``bad_payload``, also for arrays and
  objects nested deeper than 64 levels, refused before parsing), skip rules (202 with the reason),
  a merge request URL off the configured forge (403 ``foreign_host``, one log line, nothing kept),
  replay (200 ``duplicate``: the delivery header was seen, or the event its authenticated payload
  names, ``deliveries.event_identity``, whatever header it came with), then the job is queued (202
  ``queued`` or ``coalesced``); no review ever runs inside the request, so the answer comes in
  milliseconds;
- ``POST /api/ingest``: a ``ReviewRecord`` from a CI job's recorder (``Authorization: Bearer``
  ``CODEJURY_INGEST_TOKEN``, constant-time; 404 when no token is configured), written to the store;
- ``GET /metrics`` (Prometheus: the reviews and job failures of this process, deliveries by outcome, the
  queue's depth and oldest waiting job, read on each scrape within a bound, and build info),
  ``GET /healthz`` (the process answers), ``GET /readyz`` (the queue and the store answer: 503
  with the reasons otherwise);
- ``GET /dashboard`` and ``GET /dashboard/reviews/{uid}``: the ``codejury dashboard`` page of the
  service's store, and each review in full. Only for a request with ``CODEJURY_DASHBOARD_TOKEN``
  (``Authorization: Bearer``, or HTTP Basic with the token as password, which a browser prompts
  for), or with the header an authentication proxy sets (``CODEJURY_DASHBOARD_USER_HEADER``), or
  for anyone with ``CODEJURY_DASHBOARD_PUBLIC``; otherwise 401 before the store is read. Every
  answer carries the pages' Content-Security-Policy (plus ``frame-ancestors 'none'``),
  ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer`` and ``Cache-Control: no-store``.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

from prometheus_client import Counter
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from codejury.dashboard import CONTENT_SECURITY_POLICY
from codejury.errors import CodejuryError, InputError
from codejury.forges.hosts import ForgeHosts, forge_hosts
from codejury.record.model import ReviewRecord
from codejury.record.schema import StoreError
from codejury.record.store import Store
from codejury.service.dashboard_env import DASHBOARD_PUBLIC_ENV, DASHBOARD_TOKEN_ENV, DASHBOARD_USER_HEADER_ENV
from codejury.service.deliveries import Deliveries, event_identity
from codejury.service.intake import Intake, intake_for
from codejury.service.webhooks import (
    GITHUB_SECRET_ENV,
    GITLAB_TOKEN_ENV,
    ReviewRequest,
    Skipped,
    github_request,
    github_signature_valid,
    gitlab_request,
    gitlab_token_valid,
    parse_json,
    refused_url,
)
from codejury.telemetry.metrics import ReviewMetrics, render_metrics
from codejury.telemetry.service_metrics import QueueDepth, QueueMetrics

MAX_WEBHOOK_BYTES = 1_000_000
"""GitHub caps payloads at 25 MB, but a pull-request event is a few tens of kB: a megabyte is plenty."""
MAX_INGEST_BYTES = 5_000_000
DASHBOARD_PATH = "/dashboard"
DASHBOARD_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY + "; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
"""On every dashboard answer: the pages' own policy (and no framing, which only a header can forbid)."""


class ReviewQueue(Protocol):
    async def submit(self, request: ReviewRequest) -> str: ...

    async def ready(self) -> bool: ...

    async def depth(self) -> QueueDepth: ...


class _TooLarge(CodejuryError):
    """Raised inside the request handler only, when a body passes its cap (answered 413)."""


@dataclass
class ServiceState:
    """What the routes need: the queue, the deliveries seen, the secrets and the store."""

    queue: ReviewQueue
    deliveries: Deliveries
    store: Store | None = None
    github_secret: str = field(default="", repr=False)
    gitlab_token: str = field(default="", repr=False)
    ingest_token: str = field(default="", repr=False)
    dashboard_token: str = field(default="", repr=False)
    """Opens the dashboard: ``Authorization: Bearer TOKEN``, or HTTP Basic with it as the password."""
    dashboard_user_header: str = ""
    """A header the authentication proxy in front sets (``X-Auth-Request-User``): present, the dashboard opens."""
    dashboard_public: bool = False
    """The dashboard opens to anyone who reaches the service."""
    metrics: ReviewMetrics = field(default_factory=ReviewMetrics)
    max_webhook_bytes: int = MAX_WEBHOOK_BYTES
    max_ingest_bytes: int = MAX_INGEST_BYTES
    say: Callable[[str], None] = lambda line: None
    hosts: ForgeHosts = field(default_factory=lambda: forge_hosts({}))
    """The configured forges: the only hosts a delivery's merge request may be on."""
    intake: Intake | None = None
    """How a delivery is claimed and queued (``service.intake``); default: ``intake_for`` the queue."""
    webhook_outcomes: Counter = field(init=False)
    queue_metrics: QueueMetrics = field(init=False)
    """The queue's depth and oldest waiting job, read on each ``/metrics`` request."""

    def __post_init__(self) -> None:
        self.taking: Intake = self.intake or intake_for(self.deliveries, self.queue)
        self.queue_metrics = QueueMetrics(self.queue.depth)
        self.metrics.registry.register(self.queue_metrics)
        self.webhook_outcomes = Counter(
            "codejury_webhook_deliveries",
            "Webhook deliveries by forge and outcome (queued, coalesced, duplicate, skipped, unauthorized...).",
            ["forge", "outcome"],
            registry=self.metrics.registry,
        )

    def dashboard_note(self) -> str | None:
        """Why the dashboard answers every request 401, or None when it can be opened."""
        if self.store is None or self.dashboard_public or self.dashboard_token or self.dashboard_user_header:
            return None
        return (
            f"/dashboard answers 401: set {DASHBOARD_TOKEN_ENV}, {DASHBOARD_USER_HEADER_ENV} (the header "
            f"your authentication proxy sets) or {DASHBOARD_PUBLIC_ENV}=1"
        )

    def webhook_routes_note(self) -> str | None:
        """Why some webhook routes are off, or None when both forges are configured."""
        if not self.github_secret and not self.gitlab_token:
            return (
                f"webhooks are off: neither {GITHUB_SECRET_ENV} nor {GITLAB_TOKEN_ENV} is set, and a webhook "
                "route without a secret would accept anyone's deliveries"
            )
        if not self.github_secret:
            return f"/webhooks/github is off: {GITHUB_SECRET_ENV} is not set"
        if not self.gitlab_token:
            return f"/webhooks/gitlab is off: {GITLAB_TOKEN_ENV} is not set"
        return None


async def _body(request: Request, cap: int) -> bytes:
    """The request body, refused (``_TooLarge``) as soon as it passes ``cap`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _answer(state: ServiceState, forge: str, outcome: str, status: int, **extra: Any) -> JSONResponse:
    state.webhook_outcomes.labels(forge, outcome).inc()
    return JSONResponse({"outcome": outcome, **extra}, status_code=status)


async def _webhook(
    request: Request,
    state: ServiceState,
    forge: str,
    authentic: Callable[[bytes], bool],
    read: Callable[[str, dict[str, Any], str], ReviewRequest | Skipped],
    event_header: str,
    delivery_header: str,
) -> Response:
    try:
        body = await _body(request, state.max_webhook_bytes)
    except _TooLarge:
        return _answer(state, forge, "too_large", 413, error=f"the body passes {state.max_webhook_bytes} bytes")
    if not authentic(body):
        return _answer(state, forge, "unauthorized", 401, error="the delivery's signature or token does not match")
    delivery = request.headers.get(delivery_header, "").strip()
    try:
        payload = parse_json(body)
        asked = read(request.headers.get(event_header, ""), payload, delivery)
    except ValueError as exc:
        return _answer(state, forge, "bad_payload", 400, error=str(exc).splitlines()[0][:200])
    if isinstance(asked, Skipped):
        return _answer(state, forge, "skipped", 202, reason=asked.reason)
    refused = refused_url(asked, state.hosts)
    if refused is not None:
        state.say(f"{forge} delivery refused: {refused}")
        return _answer(state, forge, "foreign_host", 403, error=refused)
    try:
        outcome = await state.taking.take(forge, delivery, event_identity(asked, payload), asked)
    except Exception as exc:  # nothing was kept: the forge's retry is a new delivery
        state.say(f"{asked.key}: could not queue the review: {type(exc).__name__}")
        return _answer(state, forge, "queue_unavailable", 503, error="the review could not be queued; retry")
    if outcome == "duplicate":
        return _answer(state, forge, "duplicate", 200, key=asked.key)
    return _answer(state, forge, outcome, 202, key=asked.key)


def _routes(state: ServiceState) -> list[BaseRoute]:
    async def github(request: Request) -> Response:
        return await _webhook(
            request,
            state,
            "github",
            lambda body: github_signature_valid(state.github_secret, body, request.headers.get("x-hub-signature-256")),
            github_request,
            "x-github-event",
            "x-github-delivery",
        )

    async def gitlab(request: Request) -> Response:
        return await _webhook(
            request,
            state,
            "gitlab",
            lambda _body: gitlab_token_valid(state.gitlab_token, request.headers.get("x-gitlab-token")),
            gitlab_request,
            "x-gitlab-event",
            "idempotency-key",
        )

    async def ingest(request: Request) -> Response:
        presented = request.headers.get("authorization", "")
        expected = f"Bearer {state.ingest_token}"
        if not hmac.compare_digest(expected.encode(), presented.encode("utf-8", "replace")):
            return JSONResponse({"error": "missing or wrong ingest token"}, status_code=401)
        try:
            body = await _body(request, state.max_ingest_bytes)
        except _TooLarge:
            return JSONResponse({"error": f"the record passes {state.max_ingest_bytes} bytes"}, status_code=413)
        try:
            record = ReviewRecord.model_validate_json(body)
        except ValidationError as exc:
            return JSONResponse({"error": f"not a review record: {exc.error_count()} invalid field(s)"}, 422)
        if state.store is None:
            return JSONResponse({"error": "this service records nothing (record.url is none)"}, 503)
        try:
            stored = await asyncio.to_thread(state.store.write, record)
        except StoreError as exc:
            state.say(f"ingest: {exc}")
            return JSONResponse({"error": "the store is unavailable; retry"}, status_code=503)
        return JSONResponse({"stored": stored, "uid": record.uid})

    async def metrics(request: Request) -> Response:
        await state.queue_metrics.refresh()  # bounded, off the loop: the exposition below only reads it
        body, content_type = render_metrics(state.metrics.registry, request.headers.get("accept", ""))
        return Response(body, media_type=content_type)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        problems: list[str] = []
        if not await state.queue.ready():
            problems.append("the job queue is not ready")
        if state.store is not None and not await asyncio.to_thread(_store_answers, state.store):
            problems.append(f"the store {state.store.shown} does not answer")
        if problems:
            return JSONResponse({"ready": False, "problems": problems}, status_code=503)
        return JSONResponse({"ready": True})

    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    if state.ingest_token:
        routes.append(Route("/api/ingest", ingest, methods=["POST"]))
    if state.github_secret:
        routes.append(Route("/webhooks/github", github, methods=["POST"]))
    if state.gitlab_token:
        routes.append(Route("/webhooks/gitlab", gitlab, methods=["POST"]))
    routes.extend(_dashboard(state))
    return routes


def _store_answers(store: Store) -> bool:
    try:
        store.migrate()
    except StoreError:
        return False
    return True


def _dashboard_allows(state: ServiceState, request: Request) -> bool:
    """Whether ``request`` may see the dashboard: the public setting, the token (constant-time), or the
    authentication proxy's header."""
    if state.dashboard_public:
        return True
    if state.dashboard_token and _presents_token(request.headers.get("authorization", ""), state.dashboard_token):
        return True
    return bool(state.dashboard_user_header and request.headers.get(state.dashboard_user_header, "").strip())


def _presents_token(authorization: str, token: str) -> bool:
    """``Bearer TOKEN``, or ``Basic`` with any user name and ``TOKEN`` as the password (a browser's prompt)."""
    scheme, _, credentials = authorization.strip().partition(" ")
    presented = credentials.strip()
    if scheme.lower() == "basic":
        try:
            presented = base64.b64decode(presented, validate=True).decode("utf-8").partition(":")[2]
        except (ValueError, UnicodeDecodeError):
            return False
    elif scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(token.encode(), presented.encode("utf-8", "replace"))


def _dashboard(state: ServiceState) -> Sequence[BaseRoute]:
    """The dashboard's pages at ``DASHBOARD_PATH`` (the ``codejury dashboard`` page, each review on its own),
    each answered 401 before the store is read unless ``_dashboard_allows`` the request."""
    store = state.store
    if store is None:
        return []

    def link(uid: str) -> str:
        return f"{DASHBOARD_PATH}/reviews/{quote(uid, safe='')}"

    def guarded(page: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            if _dashboard_allows(state, request):
                response = await page(request)
            else:
                challenge = 'Basic realm="codejury dashboard", charset="UTF-8"' if state.dashboard_token else "Bearer"
                response = PlainTextResponse(
                    "the dashboard needs its token or your sign-in proxy", 401, {"WWW-Authenticate": challenge}
                )
            response.headers.update(DASHBOARD_HEADERS)
            return response

        return endpoint

    async def overview(request: Request) -> Response:
        from codejury.dashboard.page import Filters, render_dashboard  # the page's templates load on first use
        from codejury.record.stats import parse_since

        repository = request.query_params.get("repository") or None
        since = request.query_params.get("since") or None
        try:
            bound = parse_since(since)
        except InputError as exc:
            return PlainTextResponse(str(exc).replace("--since", "since", 1), status_code=400)
        filters = Filters(DASHBOARD_PATH, repository=repository, since=since)
        try:
            page = await asyncio.to_thread(
                render_dashboard, store, since=bound, repository=repository, review_link=link, forges=state.hosts,
                filters=filters,
            )  # fmt: skip
        except StoreError as exc:
            return PlainTextResponse(f"the store cannot be read: {exc}", status_code=503)
        return HTMLResponse(page)

    async def review(request: Request) -> Response:
        from codejury.dashboard.page import render_review_page

        try:
            page = await asyncio.to_thread(render_review_page, store, str(request.path_params["uid"]))
        except StoreError as exc:
            return PlainTextResponse(f"the store cannot be read: {exc}", status_code=503)
        if page is None:
            return PlainTextResponse("no such review", status_code=404)
        return HTMLResponse(page)

    return [
        Route(DASHBOARD_PATH, guarded(overview), methods=["GET"]),
        Route(DASHBOARD_PATH + "/reviews/{uid}", guarded(review), methods=["GET"]),
    ]


def create_app(
    state: ServiceState,
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[None]] | None = None,
) -> Starlette:
    """The ASGI app; ``lifespan`` starts and stops what runs beside it (the queue's runners)."""
    return Starlette(routes=_routes(state), lifespan=lifespan)
