"""The reviewed head commit's tree in a CI job's checkout, whatever the job checked out.

A CI job rarely has the pull request's head checked out: GitHub Actions' ``pull_request`` runs
check out ``refs/pull/N/merge`` (``HEAD`` is a merge commit whose second parent is the head),
GitLab's merged-results and merge-train pipelines check out a merge of the source branch into
the target, clones are shallow, and a job may have changed files in its working tree. None of
that matters here: the head commit is looked up in the checkout's object store by its id (the
forge says which), and only when it is not there is it fetched from ``origin``, that one commit
(``--depth=1`` in a shallow clone), with the credentials the job's checkout already has. A
checkout that kept none (GitHub Actions' ``persist-credentials: false``) fetches it again from the
configured forge with the review's token, as the service does (``checkout.fetch``: an HTTP header
in git's environment, never in a URL, argv or ``.git/config``). A job with no repository at all
(GitLab's ``GIT_STRATEGY: none``) fetches into the repository cache (``checkout.head``).

``open_head_side`` then writes the changed files of that commit to a temporary directory (the
analyzers read files) and gives the reviewers' tools the whole commit through git's object
store (``HeadTree``), exactly as a review of a local branch does. What cannot be had (no
checkout, not a git repository, a commit that cannot be fetched) is one line in
``HeadSide.missing``, and the review goes on diff-only saying so; git's own error output is
never shown, since a remote URL in it may carry a job token.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codejury.change.git import Git
from codejury.change.head_export import Blob, export_blobs
from codejury.change.head_tree import HeadTree
from codejury.checkout import fetch
from codejury.checkout.fetch import MAX_FETCH_BYTES, Remote, auth_env, watched_fetch
from codejury.errors import SourceError

_COMMIT_ID = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_REGULAR_MODES = frozenset({"100644", "100755"})
_PATHS_PER_CALL = 200


@dataclass
class HeadSide:
    """The head commit's changed files on disk (``root``) and the commit itself (``head``), or why not."""

    root: Path | None = None
    head: HeadTree | None = None
    left_out: dict[str, str] = field(default_factory=dict)
    missing: str | None = None
    """One line saying why there is no head-side tree (the review is diff-only), or None."""
    unread: str | None = None
    """One line saying which changed files could not be read at all, and why (the review may not approve)."""
    fetched: bool = False
    """Whether the head commit had to be fetched (it was not in the checkout)."""
    by_choice: bool = False
    """No head tree because the operator turned the repository cache off: the review is diff-only, and the forge's
    API is not asked for the changed files either."""
    _tmp: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    def close(self) -> None:
        """Remove the written files."""
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def open_head_side(
    directory: str | None,
    head_sha: str,
    paths: Sequence[str],
    *,
    fetch_timeout_s: float | None = None,
    remote: Remote | None = None,
) -> HeadSide:
    """The tree of ``head_sha`` from the checkout in ``directory``, fetching that commit when it is absent:
    from ``origin`` with the checkout's credentials, else from ``remote`` with its token.

    ``paths`` are the changed files (their head-side content is written for the analyzers). Never
    raises for a missing or unusable checkout: ``HeadSide.missing`` says what went wrong."""
    if not _COMMIT_ID.match(head_sha):
        return HeadSide(missing="the forge named no head commit")
    git = checkout_git(directory)
    if isinstance(git, str):
        return HeadSide(missing=git)
    fetched = False
    if git.resolve(head_sha) is None:
        timeout_s = fetch.FETCH_TIMEOUT_S if fetch_timeout_s is None else fetch_timeout_s
        problem = _fetch(git, head_sha, timeout_s, remote)
        if problem is not None or git.resolve(head_sha) is None:
            why = problem or "origin did not send it"
            return HeadSide(
                missing=f"the head commit {head_sha[:12]} is not in the checkout and could not be fetched ({why})"
            )
        fetched = True
    return head_side_of(git, head_sha, paths, fetched=fetched)


def checkout_git(directory: str | None) -> Git | str:
    """The git repository of the checkout in ``directory`` (its top level), or why there is none, in one line."""
    if not directory:
        return "no checkout of the repository in this job"
    if not Path(directory).is_dir():
        return f"the checkout {directory} does not exist"
    git = Git(Path(directory))
    try:
        top = git.result("rev-parse", "--show-toplevel")
    except SourceError as exc:
        return f"the checkout {directory} cannot be read ({exc})"
    if top.returncode != 0:
        return f"the checkout {directory} is not a git repository"
    return Git(Path(top.stdout.decode("utf-8", errors="replace").strip()))


def head_side_of(git: Git, head_sha: str, paths: Sequence[str], *, fetched: bool = False) -> HeadSide:
    """``head_sha``, which ``git``'s repository holds: its changed files written out, the commit for the tools."""
    tmp = tempfile.TemporaryDirectory(prefix="codejury-head-")
    try:
        root = Path(tmp.name) / "head"
        left_out = export_blobs(git, _blobs(git, head_sha, paths), root)
    except (OSError, SourceError) as exc:
        tmp.cleanup()
        return HeadSide(missing=f"the head commit's files could not be written ({exc})")
    return HeadSide(root, HeadTree(git, head_sha, left_out), left_out, fetched=fetched, _tmp=tmp)


def _fetch(git: Git, commit: str, timeout_s: float, remote: Remote | None) -> str | None:
    """Fetch ``commit`` (only that commit in a shallow clone) from ``origin``, else from ``remote`` with its token;
    None when git succeeded."""
    shallow = git.result("rev-parse", "--is-shallow-repository").stdout.strip() == b"true"
    args = ["--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head"]
    if shallow:
        args.append("--depth=1")
    started = time.monotonic()
    done = watched_fetch(git, [*args, "origin", commit], git.env, timeout_s=timeout_s, max_bytes=MAX_FETCH_BYTES)
    if done.problem is None or remote is None or done.over_cap:
        return done.problem
    # The checkout kept no credentials (persist-credentials: false): the review's token, as a header.
    left = timeout_s - (time.monotonic() - started)
    if left <= 1:
        return done.problem
    env = {**git.env, **auth_env(remote, git.env)}
    again = watched_fetch(git, [*args, remote.url, commit], env, timeout_s=left, max_bytes=MAX_FETCH_BYTES)
    return again.problem


def _blobs(git: Git, commit: str, paths: Sequence[str]) -> list[Blob]:
    """The regular files among ``paths`` in ``commit`` (a tree listing: no file content is read)."""
    env = {**git.env, "GIT_LITERAL_PATHSPECS": "1"}
    blobs: list[Blob] = []
    wanted = sorted(set(paths))
    for start in range(0, len(wanted), _PATHS_PER_CALL):
        chunk = wanted[start : start + _PATHS_PER_CALL]
        out = git.run("ls-tree", "-z", "--full-tree", commit, "--", *chunk, env=env, what="the changed files' list")
        for entry in out.split(b"\0"):
            info, _, name = entry.partition(b"\t")
            mode, kind, sha = (info.decode("ascii", errors="replace").split(" ") + ["", "", ""])[:3]
            if name and kind == "blob" and mode in _REGULAR_MODES:
                blobs.append(Blob(mode, sha, name.decode("utf-8", errors="replace")))
    return blobs
