"""A GitHub App's installation tokens: a JWT signed with the App's private key, exchanged per installation.

GitHub's flow: a JWT (RS256, ``iss`` = the App's id, at most 10 minutes long; ``iat`` set 60 s
in the past against clock drift) authenticates ``POST /app/installations/{id}/access_tokens``,
which answers an installation token valid for an hour (``expires_at``). ``GitHubAppTokens``
caches one token per installation and fetches a new one ``REFRESH_MARGIN_S`` before it expires,
so a review never starts with a token about to lapse. Keys and tokens never appear in messages.

Settings (environment): ``CODEJURY_GITHUB_APP_ID``, the private key as PEM text in
``CODEJURY_GITHUB_APP_PRIVATE_KEY`` or a file named by ``CODEJURY_GITHUB_APP_PRIVATE_KEY_FILE``,
and for GitHub Enterprise its API: the configured GitHub's (``CODEJURY_GITHUB_API_URL``, or
``CODEJURY_GITHUB_URL`` + ``/api/v3``; ``codejury.forges.hosts``), the one the reviews use.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx2
import jwt

from codejury.errors import ConfigError
from codejury.forges.errors import ForgeAuthError, ForgeUnavailable
from codejury.forges.hosts import github_instance
from codejury.tls import tls_context

APP_ID_ENV = "CODEJURY_GITHUB_APP_ID"
KEY_ENV = "CODEJURY_GITHUB_APP_PRIVATE_KEY"
KEY_FILE_ENV = "CODEJURY_GITHUB_APP_PRIVATE_KEY_FILE"
DEFAULT_API_URL = "https://api.github.com"
REFRESH_MARGIN_S = 300.0
JWT_LIFETIME_S = 540


@dataclass
class _Token:
    value: str = field(repr=False)
    expires_at: float


class GitHubAppTokens:
    """Installation tokens of one GitHub App, cached and refreshed before they expire."""

    def __init__(
        self,
        app_id: str,
        private_key: str,
        api_url: str = DEFAULT_API_URL,
        *,
        refresh_margin_s: float = REFRESH_MARGIN_S,
        clock: Callable[[], float] = time.time,
        timeout_s: float = 10.0,
    ) -> None:
        self.app_id = app_id
        self._key = private_key
        self.api_url = api_url.rstrip("/")
        self.refresh_margin_s = refresh_margin_s
        self.clock = clock
        self.timeout_s = timeout_s
        self._tokens: dict[int, _Token] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    def app_jwt(self) -> str:
        """The App's own JWT (RS256), valid for nine minutes (from the wall clock: GitHub checks it)."""
        now = int(time.time())
        try:
            return jwt.encode(
                {"iat": now - 60, "exp": now + JWT_LIFETIME_S, "iss": self.app_id}, self._key, algorithm="RS256"
            )
        except (ValueError, TypeError, jwt.PyJWTError) as exc:
            raise ConfigError(f"the GitHub App private key ({KEY_ENV}) is not a usable RSA key in PEM form") from exc

    async def token(self, installation_id: int) -> str:
        """A token for ``installation_id`` valid for at least the refresh margin."""
        lock = self._locks.setdefault(installation_id, asyncio.Lock())
        async with lock:
            cached = self._tokens.get(installation_id)
            if cached is not None and cached.expires_at - self.refresh_margin_s > self.clock():
                return cached.value
            fresh = await self._fetch(installation_id)
            self._tokens[installation_id] = fresh
            return fresh.value

    async def _fetch(self, installation_id: int) -> _Token:
        url = f"{self.api_url}/app/installations/{installation_id}/access_tokens"
        headers = {
            "Authorization": f"Bearer {self.app_jwt()}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        }
        try:
            async with httpx2.AsyncClient(
                timeout=self.timeout_s, follow_redirects=False, verify=tls_context()
            ) as client:
                answer = await client.post(url, headers=headers)
        except httpx2.HTTPError as exc:
            reason = type(exc).__name__
            raise ForgeUnavailable(f"GitHub App token for installation {installation_id}: {reason}") from exc
        where = f"GitHub refused the App's token request for installation {installation_id} (HTTP {answer.status_code})"
        if answer.status_code in (401, 403, 404):
            raise ForgeAuthError(f"{where}: check {APP_ID_ENV} and the private key", status=answer.status_code)
        if answer.status_code == 429 or answer.status_code >= 500:
            raise ForgeUnavailable(where, status=answer.status_code)
        if answer.status_code != 201:
            raise ForgeAuthError(where, status=answer.status_code)
        try:
            data = answer.json()
            value = str(data["token"])
            expires = datetime.fromisoformat(str(data["expires_at"]).replace("Z", "+00:00")).timestamp()
        except (ValueError, KeyError, TypeError) as exc:
            what = f"GitHub's installation token answer is malformed (installation {installation_id})"
            raise ForgeUnavailable(what) from exc
        return _Token(value, expires)


def tokens_from_env(env: Mapping[str, str]) -> GitHubAppTokens | None:
    """The App's token source when ``CODEJURY_GITHUB_APP_ID`` is set; ConfigError when its key is missing."""
    app_id = env.get(APP_ID_ENV, "").strip()
    if not app_id:
        return None
    key = env.get(KEY_ENV, "").strip()
    key_file = env.get(KEY_FILE_ENV, "").strip()
    if not key and key_file:
        try:
            key = Path(key_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{KEY_FILE_ENV}: cannot read the GitHub App private key file {key_file}") from exc
    if not key:
        raise ConfigError(f"{APP_ID_ENV} is set but neither {KEY_ENV} nor {KEY_FILE_ENV} gives the App's private key")
    tokens = GitHubAppTokens(app_id, key, github_instance(env).api_url)
    tokens.app_jwt()  # a key that cannot sign is refused at start-up, not at the first review
    return tokens
