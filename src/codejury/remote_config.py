"""Remote routing: a JSON document fetched at start-up that re-routes models during an outage.

Shape (every key optional)::

    {"reviewers": {"security": "anthropic:claude-sonnet-4-6", "coordinator": "openai:gpt-5"},
     "disabled_providers": ["openai"], "disabled_models": ["anthropic:claude-opus-4-6"],
     "failback": {"anthropic:claude-opus-4-6": "anthropic:claude-opus-4-5"},
     "kill_switch": true, "reason": "provider incident"}

``kill_switch`` is ``true`` (every review) or a list of repositories (``group/project``, or with its
host as the review names it: ``gitlab.example.com/group/project``); a review it covers calls no model
and is published as not reviewed, with ``reason``.

It is fetched during ``post_configure`` within ``FETCH_TIMEOUT_S`` (the whole fetch, not each
read: a server that drips bytes is cut off too), and its body is capped at ``MAX_BYTES`` while it
arrives. The URL is ``https`` (``http`` only to a loopback host), redirects are followed only on
its own host, and the request carries no token (``codejury.document_urls``). Whatever goes wrong
(a setting that is not such a URL, an invalid URL, no answer, a redirect loop or a redirect to
another host, an error status, an endless or oversized body, a body that is not JSON, nested
too deeply, or not a routing object), the review goes on with the local configuration and one
warning line says why.

``disabled_models`` lists ``provider:model`` strings (the provider's case does not matter, the
model's does): such a model is skipped along its failback chain, as a model whose circuit is open is.

While the models are called, ``watch_routing`` keeps the document current: before each model
request ``RoutingWatch.sync`` re-reads it (so no request goes out on a document older than the
request), and every ``REFRESH_INTERVAL_S`` it is re-read anyway (so a kill switch also stops a request
still waiting on a provider). A re-read is a conditional GET on one kept-alive connection, sending the
last ``ETag`` as ``If-None-Match`` (an unchanged document costs a 304), with the same bounds as the
first fetch; requests that wait at the same time share one re-read that started after they arrived.
Each outcome is a ``routing_refresh`` event (``read`` the first time, then ``unchanged``, ``changed``
or ``failed``). A failed re-read keeps the last good document, is one warning line until a re-read
succeeds again and one note in the review; for ``REFRESH_INTERVAL_S`` after a failure the requests
do not wait on the document (only the interval re-reads it), so a server that does not answer
costs each request nothing. A changed document is handed to the caller: the review stops calling a
provider or a model it disables, and a kill switch that now covers the review stops its model calls
(``codejury.pipeline``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import httpx2

from codejury.bounded_io import human_size, read_async
from codejury.contexts import PostConfigureContext
from codejury.document_urls import stream_same_origin, url_refusal
from codejury.errors import RoutingError
from codejury.resilience import model_key
from codejury.tls import tls_context

__all__ = [
    "FETCH_TIMEOUT_S",
    "MAX_BYTES",
    "REFRESH_INTERVAL_S",
    "Routing",
    "RoutingError",
    "RoutingWatch",
    "fetch_routing",
    "parse_routing",
    "watch_routing",
]

FETCH_TIMEOUT_S = 5.0
REFRESH_INTERVAL_S = 2.0
"""How often a running review re-reads the routing document."""
MAX_BYTES = 256 * 1024
KNOWN_KEYS = frozenset({"reviewers", "disabled_providers", "disabled_models", "failback", "kill_switch", "reason"})
MAX_REASON_CHARS = 300
MAX_REDIRECTS = 5
_CONTINUING = "continuing with local config"


@dataclass(frozen=True)
class Routing:
    """What a routing document asks for."""

    reviewer_models: Mapping[str, str] = field(default_factory=dict)
    disabled_providers: frozenset[str] = frozenset()
    disabled_models: frozenset[str] = frozenset()
    """``provider:model`` strings, the provider in lower case (``model_key``)."""
    failback: Mapping[str, str | None] = field(default_factory=dict)
    kill_switch: bool | frozenset[str] = False
    """True: every review is stopped; a set: the reviews of these repositories."""
    reason: str = ""

    def stops(self, repository: str) -> bool:
        """Whether the kill switch covers ``repository`` (a listed name matches it whole, or its end after a '/')."""
        if isinstance(self.kill_switch, bool):
            return self.kill_switch
        name = repository.strip("/").lower()
        return any(name == listed or name.endswith("/" + listed) for listed in self.kill_switch)

    def apply(self, ctx: PostConfigureContext) -> None:
        repository = ctx.change.meta.repository if ctx.change is not None else ""
        if self.stops(repository):
            ctx.stop_review(f"the kill switch is on ({self.reason})" if self.reason else "the kill switch is on")
        for reviewer, spec in self.reviewer_models.items():
            ctx.override_model(reviewer, spec)
        for provider in self.disabled_providers:
            ctx.disable_provider(provider)
        for model, next_model in self.failback.items():
            ctx.set_failback(model, next_model)


def parse_routing(data: Any) -> Routing:
    """Validate a decoded routing document."""
    if not isinstance(data, dict):
        raise RoutingError("the document must be a JSON object")
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise RoutingError(f"unknown key(s): {', '.join(unknown)}")
    reviewers = data.get("reviewers", {})
    if not isinstance(reviewers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and ":" in v for k, v in reviewers.items()
    ):
        raise RoutingError("'reviewers' must map reviewer names to 'provider:model' strings")
    disabled = data.get("disabled_providers", [])
    if not isinstance(disabled, list) or not all(isinstance(p, str) and p for p in disabled):
        raise RoutingError("'disabled_providers' must be a list of provider names")
    models = data.get("disabled_models", [])
    if not isinstance(models, list) or not all(isinstance(m, str) and _is_model(m) for m in models):
        raise RoutingError("'disabled_models' must be a list of 'provider:model' strings")
    failback = data.get("failback", {})
    if not isinstance(failback, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in failback.items()
    ):
        raise RoutingError("'failback' must map model strings to a model string or null")
    return Routing(
        reviewer_models=dict(reviewers),
        disabled_providers=frozenset(disabled),
        disabled_models=frozenset(model_key(m) for m in models),
        failback=dict(failback),
        kill_switch=_kill_switch(data.get("kill_switch", False)),
        reason=_reason(data.get("reason", "")),
    )


def _is_model(spec: str) -> bool:
    provider, sep, model = spec.partition(":")
    return bool(sep and provider.strip() and model.strip())


def _kill_switch(value: Any) -> bool | frozenset[str]:
    if isinstance(value, bool):
        return value
    if isinstance(value, list) and all(isinstance(r, str) and r.strip("/ ") for r in value):
        return frozenset(r.strip().strip("/").lower() for r in value)
    raise RoutingError("'kill_switch' must be true, false or a list of repositories")


def _reason(value: Any) -> str:
    if not isinstance(value, str):
        raise RoutingError("'reason' must be a string")
    text = " ".join(value.split())  # one line, whatever the document holds
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


async def fetch_routing(url: object, *, warn: Callable[[str], None], timeout_s: float | None = None) -> Routing | None:
    """Fetch and validate the routing document; on any failure warn once and return None."""
    waited = timeout_s or FETCH_TIMEOUT_S
    try:
        checked = _checked_url(url)
        async with asyncio.timeout(waited):
            body = await _fetch(checked, waited)
        return parse_routing(_decode(body))
    except (TimeoutError, httpx2.TimeoutException):
        warn(f"remote config unavailable (no answer within {waited:g}s); {_CONTINUING}")
    except httpx2.TooManyRedirects:
        warn(f"remote config unavailable (more than {MAX_REDIRECTS} redirects); {_CONTINUING}")
    except (httpx2.HTTPError, OSError) as exc:
        warn(f"remote config unavailable ({type(exc).__name__}); {_CONTINUING}")
    except RoutingError as exc:
        warn(f"remote config ignored ({_one_line(exc)}); {_CONTINUING}")
    except Exception as exc:  # noqa: BLE001 - the promise is "never fatal"; anything else still costs one line
        warn(f"remote config unavailable (unexpected {type(exc).__name__}); {_CONTINUING}")
    return None


def _checked_url(url: object) -> str:
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise RoutingError(f"remote_config must be an http(s) URL, got {_shown(url)}")
    try:
        parsed = httpx2.URL(url)
    except (httpx2.InvalidURL, ValueError, TypeError) as exc:
        raise RoutingError(f"invalid URL: {_one_line(exc)}") from exc
    if not parsed.host:
        raise RoutingError("invalid URL: no host")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise RoutingError(f"invalid URL: port {parsed.port} is out of range")
    refused = url_refusal(url)
    if refused is not None:
        raise RoutingError(f"remote_config refused: {refused}")
    return url


async def _fetch(url: str, timeout_s: float) -> bytes:
    body, _ = await _fetch_tagged(url, timeout_s, None)
    assert body is not None  # without an ETag to send, the server has nothing to answer 304 to
    return body


async def _fetch_tagged(
    url: str, timeout_s: float, etag: str | None, client: httpx2.AsyncClient | None = None
) -> tuple[bytes | None, str | None]:
    """The document and its ``ETag``; ``(None, etag)`` when the server answers 304 to ``If-None-Match``.
    ``client``: a kept-alive client to send it with (else one for this fetch only)."""
    if client is None:
        async with _client(timeout_s) as own:
            return await _fetch_tagged(url, timeout_s, etag, own)
    headers = {"accept": "application/json", "accept-encoding": "identity"}
    if etag is not None:
        headers["if-none-match"] = etag
    async with stream_same_origin(client, url, headers, max_redirects=MAX_REDIRECTS, error=RoutingError) as response:
        if response.status_code == 304 and etag is not None:
            return None, etag
        if response.status_code != 200:
            raise RoutingError(f"HTTP {response.status_code}")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and len(declared) < 20 and int(declared) > MAX_BYTES:
            raise RoutingError(f"the document is {int(declared):,} bytes, over the {human_size(MAX_BYTES)} limit")
        body = await read_async(response.aiter_bytes(), MAX_BYTES, "the document", RoutingError)
        tag = response.headers.get("etag", "")
        return body, (tag if 0 < len(tag) <= 200 and tag.isascii() else None)


def _client(timeout_s: float) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(timeout=timeout_s, follow_redirects=False, verify=tls_context())


EventSink = Callable[..., None]


class RoutingWatch:
    """The routing document as a running review last read it: re-read on ``refresh()`` or ``sync()``, with
    ``If-None-Match``, on one kept-alive connection (``aclose()`` when done)."""

    def __init__(
        self,
        url: str,
        *,
        warn: Callable[[str], None],
        on_event: EventSink,
        timeout_s: float = FETCH_TIMEOUT_S,
        on_change: Callable[[Routing], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.warn = warn
        self.on_event = on_event
        self.timeout_s = timeout_s
        self.on_change = on_change
        """Handed each document that differs from the last one read (by ``sync``)."""
        self.routing: Routing | None = None
        """The last good document (None until one was read)."""
        self.etag: str | None = None
        self.failures = 0
        """Re-reads that failed (the last good document was kept)."""
        self.first_failure: str | None = None
        """Why the first of them failed (one line)."""
        self._failing = False
        self._failed_at = 0.0
        self._clock = clock
        self._client: httpx2.AsyncClient | None = None
        self._reading: asyncio.Task[None] | None = None
        self._started = 0
        """How many shared re-reads ``sync`` started; ``_reading`` is number ``_started``."""
        self._begun = 0
        """The number of the last shared re-read that began to run (its GET goes out after that)."""

    async def refresh(self) -> Routing | None:
        """Re-read the document: the new ``Routing`` when it changed, else None (unchanged, or a failure,
        which keeps the last good document)."""
        try:
            checked = _checked_url(self.url)
            if self._client is None:
                self._client = _client(self.timeout_s)
            async with asyncio.timeout(self.timeout_s):
                body, etag = await _fetch_tagged(checked, self.timeout_s, self.etag, self._client)
            routing = None if body is None else parse_routing(_decode(body))
        except Exception as exc:  # noqa: BLE001 - a refresh never fails the review: the last good document stays
            why = _refresh_error(exc, self.timeout_s)
            self.on_event("routing_refresh", outcome="failed", error=why)
            if not self._failing:
                self.warn(f"remote config refresh failed ({why}); keeping the last document read")
            self._failing, self._failed_at = True, self._clock()
            self.failures += 1
            self.first_failure = self.first_failure or why
            return None
        self._failing = False
        self.etag = etag
        if routing is None or routing == self.routing:
            self.on_event("routing_refresh", outcome="unchanged", not_modified=body is None)
            return None
        first, self.routing = self.routing is None, routing
        self.on_event(
            "routing_refresh",
            outcome="read" if first else "changed",
            disabled_providers=sorted(routing.disabled_providers),
            disabled_models=sorted(routing.disabled_models),
            kill_switch=routing.kill_switch if isinstance(routing.kill_switch, bool) else sorted(routing.kill_switch),
        )
        return routing

    async def sync(self, *, retry: bool = False) -> None:
        """Return once a re-read that started after this call has ended, and a changed document went to
        ``on_change``. Calls that wait at the same time share one re-read; a call that arrives while one
        is under way waits for it and shares the next. For ``REFRESH_INTERVAL_S`` after a failed re-read
        it returns at once (the last good document stands), unless ``retry``."""
        if not retry and self._failing and self._clock() - self._failed_at < REFRESH_INTERVAL_S:
            return
        arrived = self._begun  # a re-read that had not begun when this call arrived reads what is there now
        while True:
            if self._reading is None or self._reading.done():
                self._started += 1
                self._reading = asyncio.create_task(self._read(), name="routing-sync")
            reading, number = self._reading, self._started
            # shield: a caller that is cancelled (its agent timed out) leaves the shared re-read running
            await asyncio.shield(reading)
            if number > arrived:
                return  # that re-read began after this call arrived

    async def _read(self) -> None:
        self._begun = self._started
        changed = await self.refresh()
        if changed is not None and self.on_change is not None:
            self.on_change(changed)

    async def aclose(self) -> None:
        """Stop a re-read under way and close the connection."""
        if self._reading is not None and not self._reading.done():
            self._reading.cancel()
            with suppress(asyncio.CancelledError):
                await self._reading
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def note(self) -> str | None:
        """One line for the review when a re-read failed during it; None when none did."""
        if not self.failures:
            return None
        times = "once" if self.failures == 1 else f"{self.failures} times"
        return (
            f"the routing document could not be re-read during the review ({self.first_failure}; {times}): "
            "the last document read was used"
        )


def _refresh_error(exc: BaseException, waited: float) -> str:
    if isinstance(exc, TimeoutError | httpx2.TimeoutException):
        return f"no answer within {waited:g}s"
    if isinstance(exc, httpx2.TooManyRedirects):
        return f"more than {MAX_REDIRECTS} redirects"
    if isinstance(exc, RoutingError):
        return _one_line(exc)
    return type(exc).__name__


@asynccontextmanager
async def watch_routing(
    watch: RoutingWatch, apply: Callable[[Routing], None], *, interval_s: float | None = None
) -> AsyncIterator[RoutingWatch]:
    """Keep the document current while the block runs: ``watch.sync`` (which the block awaits before each
    model request) and a re-read every ``interval_s`` (``REFRESH_INTERVAL_S``) hand each document that
    differs from the last one read to ``apply`` (the first read too: it may differ from the one read at
    start-up)."""
    every = interval_s if interval_s is not None else REFRESH_INTERVAL_S
    watch.on_change = apply

    async def loop() -> None:
        while True:
            await asyncio.sleep(every)
            await watch.sync(retry=True)  # a failing server is retried here; requests wait on it again once it answers

    task = asyncio.create_task(loop(), name="routing-refresh")
    try:
        yield watch
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
        await watch.aclose()


def _decode(body: bytes) -> Any:
    try:
        return json.loads(body)
    except RecursionError as exc:
        raise RoutingError("the document is nested too deeply") from exc
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
        raise RoutingError(f"not JSON: {_one_line(exc)}") from exc


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _shown(value: object) -> str:
    """What the setting holds, without echoing a URL (it may carry a token)."""
    if not isinstance(value, str):
        return f"a {type(value).__name__}"
    scheme, sep, _ = value.partition(":")
    return f"a {scheme[:12]!r} URL" if sep and scheme.isalpha() else "a string that is not a URL"
