"""Where a forge review's head commit comes from: the CI job's checkout, the repository cache, or the forge's API.

``find_head_side`` picks the source: in a CI job, its checkout (``checkout.ci``: fetched into it
when absent, with the token when the checkout kept no credentials); in a job with no repository
(GitLab's ``GIT_STRATEGY: none``), with ``--url`` and in the service, the repository cache
(``checkout.cache``). ``read_through_api`` is the last resort when neither gave the commit: the
changed files alone, read one by one through the forge's API (``checkout.api_files``); what even
that cannot give is ``HeadSide.unread``, and the review may not approve. An operator who turned
the repository cache off (``CODEJURY_REPO_CACHE=off``) chose diff-only reviews: neither is tried.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from codejury.checkout.api_files import ReadFile, read_through_api
from codejury.checkout.cache import CACHE_ENV, repo_cache
from codejury.checkout.ci import HeadSide, checkout_git, open_head_side
from codejury.checkout.fetch import Remote

__all__ = ["ReadFile", "find_head_side", "read_through_api"]


def find_head_side(
    *, in_ci: bool, checkout: str | None, head_sha: str, paths: Sequence[str], remote: Remote | None,
    env: Mapping[str, str],
) -> HeadSide:  # fmt: skip
    """The head commit's tree for the tools and analyzers, or why there is none (one line)."""
    if in_ci:
        found = checkout_git(checkout)
        if not isinstance(found, str) or remote is None:
            return open_head_side(checkout, head_sha, paths, remote=remote)
        # No repository in the job (GIT_STRATEGY: none): fetched as the service fetches it.
    if remote is None:
        return HeadSide(missing="reviewed through the forge's API, with no checkout")
    cache = repo_cache(env)
    if cache is None:
        return HeadSide(
            missing=f"reviewed through the forge's API, with no checkout ({CACHE_ENV} is off)", by_choice=True
        )
    return cache.head_side(remote, head_sha, paths)
