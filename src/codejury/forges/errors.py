"""Errors from talking to a forge's API (GitLab, GitHub).

The publisher decides by class: a refused inline comment moves to the summary, an auth
error stops publishing with a hint about the token, an unavailable forge fails the job
after the client's own retries. Messages name the forge, the status and the token's
environment variable, never the token or a request header.

    CodejuryError
    └── ForgeError              a forge API call failed
        ├── ForgeAuthError      401/403: the token is invalid or lacks a right
        ├── ForgeRefused        any other 4xx: the forge understood and said no
        └── ForgeUnavailable    429, 5xx or network errors outlasted the retries
"""

from __future__ import annotations

from codejury.errors import CodejuryError


class ForgeError(CodejuryError):
    """A forge API call failed; ``status`` is the HTTP status, None for network errors."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ForgeAuthError(ForgeError):
    """The forge refused the token (401) or the token's user lacks a right (403)."""


class ForgeRefused(ForgeError):
    """The forge refused the request (a 4xx other than auth), with the forge's own message."""


class ForgeUnavailable(ForgeError):
    """Rate limits, server errors or network errors lasted longer than the retries."""

    exit_code = 4
