"""Forges as plugins: how the CLI finds the merge request to review, from a URL or the CI run.

Each forge registers a ``ForgeKind`` through the ``codejury_register_forges`` hook (GitLab and
GitHub by the built-in plugin, any other forge the same way). ``forge_opener`` asks each kind,
in registration order: a ``--url`` goes to the kind whose URL shape it has, and one that no
kind claims is an ``InputError`` naming every shape expected; without a URL, the first kind
that recognises its own CI run wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from codejury.errors import ConfigError, InputError
from codejury.forges.plan import Forge

Env = Mapping[str, str]
Warn = Callable[[str], None]
Opener = Callable[[], Forge]
"""Makes the adapter (and its HTTP client) when the review starts; use the result with ``async with``."""
Target = TypeVar("Target")


@dataclass(frozen=True)
class ForgeKind:
    """One forge, as the CLI sees it before any request is sent."""

    url_noun: str
    """What its URLs point at, in messages: "GitHub pull request"."""
    url_shape: str
    """Its URL pattern, in messages: "https://HOST/OWNER/REPO/pull/N"."""
    ci_run: str
    """The CI run it reviews without a URL, in messages: "a GitHub pull request workflow (pull_request)"."""
    claims_url: Callable[[str], bool]
    """Whether a URL has this forge's shape (nothing is checked with the forge itself)."""
    from_url: Callable[[str, Env, Warn], Opener]
    """The opener for a URL it claims; raises ``InputError`` (e.g. no token)."""
    from_ci: Callable[[Env, Warn], Opener | None]
    """The opener for the CI run described by ``env``, or None when this is not one of its runs."""


def forge_kind(
    adapter: Callable[..., Forge],
    *,
    url_noun: str,
    url_shape: str,
    ci_run: str,
    claims_url: Callable[[str], bool],
    target_from_url: Callable[[str, Env], Target],
    target_from_env: Callable[[Env], Target | None],
) -> ForgeKind:
    """The ``ForgeKind`` of a forge whose openers make ``adapter(target, env=env, warn=warn)`` for the
    target a URL names (``target_from_url``) or the CI run describes (``target_from_env``)."""

    def from_url(url: str, env: Env, warn: Warn) -> Opener:
        return partial(adapter, target_from_url(url, env), env=env, warn=warn)

    def from_ci(env: Env, warn: Warn) -> Opener | None:
        target = target_from_env(env)
        return None if target is None else partial(adapter, target, env=env, warn=warn)

    return ForgeKind(url_noun, url_shape, ci_run, claims_url, from_url, from_ci)


def forge_opener(registered: Mapping[str, object], url: str | None, env: Env, warn: Warn) -> Opener:
    """The opener for ``url`` (``--url``; "" counts as given) or, when it is None, for this CI run.

    ``registered`` is what the ``codejury_register_forges`` hook collected: anything there that is
    not a ``ForgeKind`` is a plugin's mistake (``ConfigError``)."""
    kinds: dict[str, ForgeKind] = {}
    for name, kind in registered.items():
        if not isinstance(kind, ForgeKind):
            raise ConfigError(f"the forge {name!r} registered by a plugin is not a ForgeKind: {type(kind).__name__}")
        kinds[name] = kind
    if url is not None:
        for kind in kinds.values():
            if url.strip() and kind.claims_url(url):
                return kind.from_url(url, env, warn)
        expected = " or ".join(f"a {k.url_noun} URL ({k.url_shape})" for k in kinds.values())
        raise InputError(f"--url {url!r} is not {expected or 'the URL of a forge codejury knows'}")
    for kind in kinds.values():
        opener = kind.from_ci(env, warn)
        if opener is not None:
            return opener
    ways = ["--url URL", *(k.ci_run for k in kinds.values())]
    listed = ", ".join(ways[:-1]) + " or " + ways[-1] if len(ways) > 1 else ways[0]
    raise InputError(f"--publish needs {listed}")
