"""Where codejury fetches a document that carries no credential: ``remote_config`` and ``instructions_url``.

Such a request is sent with no forge token, provider key or cookie: only the URL the setting
holds (which may carry its own token, so messages never echo it). The rules:

- the URL is ``https``, or ``http`` to a loopback host (``127.0.0.0/8``, ``::1``,
  ``localhost``: a local file server or a test); user info (``user@host``) is refused;
- a redirect is followed only while it stays on the URL's origin (scheme, host and port), at
  most ``max_redirects`` times: a server that redirects elsewhere gets nothing more, so a
  document server cannot send codejury to another host, nor downgrade it to plain ``http``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import httpx2

from codejury.errors import CodejuryError
from codejury.forges.hosts import origin

LOOPBACK_NAMES = frozenset({"localhost"})


def url_refusal(url: str) -> str | None:
    """Why ``url`` may not be fetched (one line, without the URL), or None."""
    try:
        scheme, host, _ = origin(url)
    except ValueError as exc:
        return str(exc)
    if scheme == "http" and not is_loopback(host):
        return "plain http is only for a loopback host: use https"
    return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (as ``urlsplit`` gives it) is this machine."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@asynccontextmanager
async def stream_same_origin(
    client: httpx2.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    *,
    max_redirects: int,
    error: type[CodejuryError],
) -> AsyncIterator[httpx2.Response]:
    """GET ``url`` with ``client`` (which must not follow redirects itself), following redirects on
    its origin only; ``error`` for a redirect elsewhere, ``httpx2.TooManyRedirects`` past the limit."""
    home = origin(url)
    current = httpx2.URL(url)
    for _ in range(max_redirects + 1):
        async with client.stream("GET", current, headers=dict(headers)) as response:
            if not response.has_redirect_location:
                yield response
                return
            target = current.join(response.headers["location"])
        try:
            elsewhere = origin(str(target)) != home
        except ValueError:
            elsewhere = True
        if elsewhere:
            raise error("redirected to another host; only redirects on the URL's own host are followed")
        current = target
    raise httpx2.TooManyRedirects(f"more than {max_redirects} redirects")
