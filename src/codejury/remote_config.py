"""Remote routing: a JSON document fetched at start-up that re-routes models during an outage.

Shape (every key optional)::

    {"reviewers": {"security": "anthropic:claude-sonnet-4-6", "coordinator": "openai:gpt-5"},
     "disabled_providers": ["openai"],
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
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2

from codejury.bounded_io import human_size, read_async
from codejury.contexts import PostConfigureContext
from codejury.document_urls import stream_same_origin, url_refusal
from codejury.errors import RoutingError

__all__ = ["FETCH_TIMEOUT_S", "MAX_BYTES", "Routing", "RoutingError", "fetch_routing", "parse_routing"]

FETCH_TIMEOUT_S = 5.0
MAX_BYTES = 256 * 1024
KNOWN_KEYS = frozenset({"reviewers", "disabled_providers", "failback", "kill_switch", "reason"})
MAX_REASON_CHARS = 300
MAX_REDIRECTS = 5
_CONTINUING = "continuing with local config"


@dataclass(frozen=True)
class Routing:
    """What a routing document asks for."""

    reviewer_models: Mapping[str, str] = field(default_factory=dict)
    disabled_providers: frozenset[str] = frozenset()
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
    failback = data.get("failback", {})
    if not isinstance(failback, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in failback.items()
    ):
        raise RoutingError("'failback' must map model strings to a model string or null")
    return Routing(
        reviewer_models=dict(reviewers),
        disabled_providers=frozenset(disabled),
        failback=dict(failback),
        kill_switch=_kill_switch(data.get("kill_switch", False)),
        reason=_reason(data.get("reason", "")),
    )


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
    headers = {"accept": "application/json", "accept-encoding": "identity"}
    async with (
        httpx2.AsyncClient(timeout=timeout_s, follow_redirects=False) as client,
        stream_same_origin(client, url, headers, max_redirects=MAX_REDIRECTS, error=RoutingError) as response,
    ):
        if response.status_code != 200:
            raise RoutingError(f"HTTP {response.status_code}")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and len(declared) < 20 and int(declared) > MAX_BYTES:
            raise RoutingError(f"the document is {int(declared):,} bytes, over the {human_size(MAX_BYTES)} limit")
        return await read_async(response.aiter_bytes(), MAX_BYTES, "the document", RoutingError)


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
