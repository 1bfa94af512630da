"""Remote routing: a JSON document fetched at start-up that re-routes models during an outage.

Shape (every key optional)::

    {"reviewers": {"security": "anthropic:claude-sonnet-4-6", "coordinator": "openai:gpt-5"},
     "disabled_providers": ["openai"],
     "failback": {"anthropic:claude-opus-4-6": "anthropic:claude-opus-4-5"}}

It is fetched during ``post_configure`` with a short timeout. If it cannot be fetched or is
malformed, the review goes on with the local configuration and says so once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2

from codejury.plugins import PostConfigureContext

FETCH_TIMEOUT_S = 5.0
MAX_BYTES = 256 * 1024
KNOWN_KEYS = frozenset({"reviewers", "disabled_providers", "failback"})


class RoutingError(ValueError):
    """The routing document is not what we accept."""


@dataclass(frozen=True)
class Routing:
    """What a routing document asks for."""

    reviewer_models: Mapping[str, str] = field(default_factory=dict)
    disabled_providers: frozenset[str] = frozenset()
    failback: Mapping[str, str | None] = field(default_factory=dict)

    def apply(self, ctx: PostConfigureContext) -> None:
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
    return Routing(reviewer_models=dict(reviewers), disabled_providers=frozenset(disabled), failback=dict(failback))


async def fetch_routing(url: str, *, warn: Callable[[str], None], timeout_s: float | None = None) -> Routing | None:
    """Fetch and validate the routing document; on any failure warn once and return None."""
    if not url.startswith(("http://", "https://")):
        warn("remote config ignored: it must be an http(s) URL; continuing with local config")
        return None
    try:
        async with httpx2.AsyncClient(timeout=timeout_s or FETCH_TIMEOUT_S, follow_redirects=True) as client:
            response = await client.get(url, headers={"accept": "application/json"})
        if response.status_code != 200:
            raise RoutingError(f"HTTP {response.status_code}")
        if len(response.content) > MAX_BYTES:
            raise RoutingError(f"larger than {MAX_BYTES // 1024} KiB")
        routing = parse_routing(json.loads(response.content))
    except httpx2.TimeoutException:
        waited = timeout_s or FETCH_TIMEOUT_S
        warn(f"remote config unavailable (no answer within {waited:g}s); continuing with local config")
        return None
    except httpx2.HTTPError as exc:
        warn(f"remote config unavailable ({type(exc).__name__}); continuing with local config")
        return None
    except (RoutingError, ValueError) as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        warn(f"remote config ignored ({first}); continuing with local config")
        return None
    return routing
