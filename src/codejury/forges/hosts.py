"""The forge instances codejury sends its tokens to: from configuration, never from a URL it is given.

A merge request or pull request URL (``--url``, a webhook's ``object_attributes.url`` or
``pull_request.html_url``, a comment event's) only says *which* change to review. The API it is
read through, and so where the forge's token goes, is the configured instance of that forge:

- GitLab: ``CODEJURY_GITLAB_URL`` (the instance's web URL, ``https://gitlab.example.com``; its
  API is ``…/api/v4``), else in a GitLab CI job the runner's ``CI_SERVER_URL`` (API
  ``CI_API_V4_URL``), else ``https://gitlab.com``;
- GitHub: ``CODEJURY_GITHUB_URL`` (web) and ``CODEJURY_GITHUB_API_URL`` (REST), either one
  giving the other (``https://HOST`` and ``https://HOST/api/v3``; github.com and
  api.github.com), else in GitHub Actions the runner's ``GITHUB_SERVER_URL``, ``GITHUB_API_URL``
  and ``GITHUB_GRAPHQL_URL``, else github.com.

A URL is on an instance when its scheme is the instance's (``http`` only where the configured
URL is ``http``, as a loopback test forge is), its host and port are exactly the instance's
(compared lower-cased with the default port made explicit: no suffix or substring matching) and
its path lies below the instance's. A URL with user info (``user@host``), a backslash,
whitespace or a control character, or a host that is not plain ASCII is refused as written.
Messages name the scheme and host, never the whole URL (it may carry credentials).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from codejury.errors import ConfigError, InputError

GITLAB_URL_ENV = "CODEJURY_GITLAB_URL"
GITHUB_URL_ENV = "CODEJURY_GITHUB_URL"
GITHUB_API_URL_ENV = "CODEJURY_GITHUB_API_URL"
GITLAB_DOTCOM = "https://gitlab.com"
GITHUB_DOTCOM = "https://github.com"
GITHUB_DOTCOM_API = "https://api.github.com"
_GHE_API = "/api/v3"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNSAFE = re.compile(r"[\\\s\x00-\x1f\x7f]")

Origin = tuple[str, str, int]
"""``(scheme, host, port)``, lower-cased, the port always given."""


def origin(url: str) -> Origin:
    """The origin of an http(s) URL; ``ValueError`` (one line) for one whose host cannot be taken as written."""
    if _UNSAFE.search(url):
        raise ValueError("the URL holds a backslash, whitespace or a control character")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError("not an http(s) URL")
    if "@" in parts.netloc:
        raise ValueError("the URL carries user info (user@host)")
    if not parts.netloc.isascii() or "%" in parts.netloc:
        raise ValueError("the URL's host is not plain ASCII")
    if not parts.hostname:
        raise ValueError("the URL names no host")
    try:
        port = parts.port
    except ValueError:
        raise ValueError("the URL's port is not a number from 1 to 65535") from None
    return scheme, parts.hostname, port or _DEFAULT_PORTS[scheme]


def shown(where: Origin) -> str:
    """``https://host`` (with the port when it is not the scheme's own)."""
    scheme, host, port = where
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" if port == _DEFAULT_PORTS[scheme] else f"{scheme}://{host}:{port}"


@dataclass(frozen=True)
class ForgeInstance:
    """One forge's configured instance: where its web pages are and where its API (and token) go."""

    name: str
    """``GitLab`` or ``GitHub``, in messages."""
    web_url: str
    api_url: str
    graphql_url: str
    """GitHub's GraphQL endpoint ("" for GitLab)."""
    setting: str
    """The variable that points codejury at another instance of this forge (named in refusals)."""
    web_aliases: tuple[str, ...] = ()
    """Other origins serving the same pages (``https://www.github.com``)."""

    def path_of(self, url: str) -> str:
        """The path of ``url`` below this instance's web URL; ``InputError`` (one line) when it is not on it."""
        try:
            found = origin(url)
        except ValueError as exc:
            raise InputError(f"a {self.name} URL is refused: {exc}") from None
        if found not in {origin(u) for u in (self.web_url, *self.web_aliases)}:
            raise InputError(
                f"{shown(found)} is not the configured {self.name} ({self.web_url}) and codejury sends its "
                f"{self.name} token only there: set {self.setting} to use another {self.name}"
            )
        path = urlsplit(url).path
        prefix = urlsplit(self.web_url).path.rstrip("/")
        if prefix and path != prefix and not path.startswith(prefix + "/"):
            raise InputError(f"the URL is not below the configured {self.name} {self.web_url}")
        return path[len(prefix) :]

    def page(self, url: str, shape: re.Pattern[str], noun: str, expected: str) -> re.Match[str]:
        """``shape`` matched on the path of ``url`` below this instance (a ``noun`` page, ``expected`` in
        messages); ``InputError`` for another shape or host."""
        if not has_page_shape(url, shape):
            raise InputError(f"not a {noun} URL: {url!r} (expected {expected})")
        match = shape.match(self.path_of(url.strip()).strip("/"))
        if match is None:
            raise InputError(f"not a {noun} URL below {self.web_url} (expected {expected})")
        return match


def has_page_shape(url: str, shape: re.Pattern[str]) -> bool:
    """Whether ``url`` is an http(s) URL whose path has ``shape`` (on any host: nothing is sent yet)."""
    parts = urlsplit(url.strip())
    return parts.scheme in ("http", "https") and bool(parts.netloc) and bool(shape.match(parts.path.strip("/")))


@dataclass(frozen=True)
class ForgeHosts:
    """The configured instance of each forge (``forge_hosts``)."""

    gitlab: ForgeInstance
    github: ForgeInstance

    def of(self, forge: str) -> ForgeInstance:
        """The instance of ``forge`` (``gitlab`` or ``github``)."""
        return self.gitlab if forge == "gitlab" else self.github


def forge_hosts(env: Mapping[str, str]) -> ForgeHosts:
    """Both forges' instances from ``env``; ``ConfigError`` for a setting that is not an http(s) base URL."""
    return ForgeHosts(gitlab_instance(env), github_instance(env))


def gitlab_instance(env: Mapping[str, str]) -> ForgeInstance:
    """``CODEJURY_GITLAB_URL``, else the GitLab CI job's own instance, else gitlab.com."""
    configured = env.get(GITLAB_URL_ENV, "").strip()
    if configured:
        web = _base_url(configured, GITLAB_URL_ENV)
        return ForgeInstance("GitLab", web, web + "/api/v4", "", GITLAB_URL_ENV)
    server = env.get("CI_SERVER_URL", "").strip()
    if server:
        web = _base_url(server, "CI_SERVER_URL")
        api = env.get("CI_API_V4_URL", "").strip()
        api = _base_url(api, "CI_API_V4_URL") if api else web + "/api/v4"
        return ForgeInstance("GitLab", web, api, "", GITLAB_URL_ENV)
    return ForgeInstance("GitLab", GITLAB_DOTCOM, GITLAB_DOTCOM + "/api/v4", "", GITLAB_URL_ENV)


def github_instance(env: Mapping[str, str]) -> ForgeInstance:
    """``CODEJURY_GITHUB_URL`` / ``CODEJURY_GITHUB_API_URL``, else the Actions run's own GitHub, else github.com."""
    web = env.get(GITHUB_URL_ENV, "").strip()
    api = env.get(GITHUB_API_URL_ENV, "").strip()
    if web or api:
        web = _base_url(web, GITHUB_URL_ENV) if web else _web_of(_base_url(api, GITHUB_API_URL_ENV))
        api = _base_url(api, GITHUB_API_URL_ENV) if api else _api_of(web)
        return _github(web, api, _graphql_of(api))
    server = env.get("GITHUB_SERVER_URL", "").strip()
    if server:
        web = _base_url(server, "GITHUB_SERVER_URL")
        api = env.get("GITHUB_API_URL", "").strip()
        api = _base_url(api, "GITHUB_API_URL") if api else _api_of(web)
        graphql = env.get("GITHUB_GRAPHQL_URL", "").strip()
        return _github(web, api, _base_url(graphql, "GITHUB_GRAPHQL_URL") if graphql else _graphql_of(api))
    return _github(GITHUB_DOTCOM, GITHUB_DOTCOM_API, GITHUB_DOTCOM_API + "/graphql")


def _github(web: str, api: str, graphql: str) -> ForgeInstance:
    aliases = ("https://www.github.com",) if origin(web) == origin(GITHUB_DOTCOM) else ()
    return ForgeInstance("GitHub", web, api, graphql, GITHUB_URL_ENV, aliases)


def _base_url(value: str, setting: str) -> str:
    """``value`` as a base URL (no trailing slash); ``ConfigError`` naming ``setting`` otherwise."""
    try:
        origin(value)
    except ValueError as exc:
        raise ConfigError(f"{setting} must be the http(s) URL of the forge: {exc}") from None
    parts = urlsplit(value)
    if parts.query or parts.fragment:
        raise ConfigError(f"{setting} must be the http(s) URL of the forge, without a query or fragment")
    return value.rstrip("/")


def _web_of(api: str) -> str:
    if origin(api) == origin(GITHUB_DOTCOM_API):
        return GITHUB_DOTCOM
    return api[: -len(_GHE_API)] if api.endswith(_GHE_API) else shown(origin(api))


def _api_of(web: str) -> str:
    return GITHUB_DOTCOM_API if origin(web) == origin(GITHUB_DOTCOM) else web + _GHE_API


def _graphql_of(api: str) -> str:
    if api.endswith(_GHE_API):
        return api[: -len(_GHE_API)] + "/api/graphql"
    return api + "/graphql"
