"""The fake GitHub's state: building the world, faults, inspection, and the helpers its handlers share.

``GitHubState`` holds everything; ``rest`` and ``graphql`` add the handlers that read and
change it, and ``FakeGitHub`` (``server``) serves them over HTTP.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
import time
from collections.abc import Collection, Mapping
from typing import Any

from codejury_fakes.github.records import (
    ACTIONS_LOGIN,
    ACTIONS_USER_ID,
    DEFAULT_ACTIONS_PERMISSIONS,
    NOT_ACCESSIBLE,
    Call,
    CheckRun,
    Fault,
    IssueComment,
    Permission,
    Pull,
    RecordedRequest,
    Refusal,
    Repo,
    Review,
    ReviewComment,
    Side,
    Thread,
    Token,
    TokenKind,
    User,
    comment_error,
    pull_file,
)


class GitHubState:
    """The world of the fake GitHub and how it changes: the public methods build and inspect it,
    the private helpers are what the REST and GraphQL handlers (``rest``, ``graphql``) use, with
    the lock held."""

    def __init__(self, api_url: str, repo: str = "octo/app", *, latency_s: float = 0.0) -> None:
        self.api_url = api_url
        """Where the fake is served (``http://127.0.0.1:PORT``): pagination links start here."""
        self._lock = threading.RLock()
        self._next_id = 1000
        self._clock = 0
        self.default_repo = repo
        self.latency_s = latency_s
        self._users: dict[str, User] = {}
        self._tokens: dict[str, Token] = {}
        self._repos: dict[str, Repo] = {}
        self._pulls: dict[tuple[str, int], Pull] = {}
        self._issue_comments: dict[int, IssueComment] = {}
        self._comments: dict[int, ReviewComment] = {}
        self._reviews: dict[int, Review] = {}
        self._threads: dict[str, Thread] = {}
        self._check_runs: dict[int, CheckRun] = {}
        self._faults: list[Fault] = []
        self._requests: list[RecordedRequest] = []
        self._contents: dict[str, dict[str, str]] = {}  # commit sha -> path -> text
        self._refused_lines: set[tuple[str, int]] = set()
        self._users[ACTIONS_LOGIN] = User(ACTIONS_LOGIN, ACTIONS_USER_ID, bot=True)
        self.add_repo(repo)

    @property
    def graphql_url(self) -> str:
        return self.api_url + "/graphql"

    # -- building state -----------------------------------------------------------------------------
    def add_repo(self, full_name: str, *, actions_can_approve: bool = False) -> Repo:
        """Add a repository; its owner (the part before ``/``) becomes a user with admin permission."""
        with self._lock:
            repo = Repo(full_name, self._new_id(), actions_can_approve)
            self._repos[full_name] = repo
            owner = full_name.split("/", 1)[0]
            self.add_user(owner, permission="admin", repo=full_name)
            return repo

    def repo(self, full_name: str | None = None) -> Repo:
        """The live repository record (set ``actions_can_approve`` on it)."""
        return self._repos[full_name or self.default_repo]

    def add_user(
        self, login: str, *, permission: Permission = "write", repo: str | None = None, bot: bool = False
    ) -> int:
        """Add (or re-permission) a user; return its id."""
        with self._lock:
            user = self._users.get(login) or User(login, self._new_id(), bot)
            self._users[login] = user
            self._repos[repo or self.default_repo].permissions[login] = permission
            return user.id

    def add_token(
        self, token: str, *, user: str | None = None, kind: TokenKind = "pat", permissions: dict[str, str] | None = None
    ) -> None:
        """Register a credential.

        ``actions``: the workflow GITHUB_TOKEN of ``github-actions[bot]``; ``permissions`` are
        merged over pull-requests/issues/checks write, contents read. ``fork``: the read-only
        token of a workflow run from a fork. ``pat``: a personal token of ``user``.
        """
        with self._lock:
            if kind == "pat":
                if user is None or user not in self._users:
                    raise ValueError("a personal token needs a known user")
                self._tokens[token] = Token(user, kind, {})
            elif kind == "actions":
                self._tokens[token] = Token(ACTIONS_LOGIN, kind, {**DEFAULT_ACTIONS_PERMISSIONS, **(permissions or {})})
            else:
                self._tokens[token] = Token(ACTIONS_LOGIN, kind, dict.fromkeys(DEFAULT_ACTIONS_PERMISSIONS, "read"))

    def add_pr(
        self,
        *,
        author: str,
        files: Mapping[str, tuple[str | None, str | None]],
        number: int | None = None,
        title: str = "A change",
        body: str = "",
        head_sha: str | None = None,
        base_sha: str | None = None,
        head_ref: str = "feature",
        base_ref: str = "main",
        repo: str | None = None,
        base_files: Mapping[str, str] | None = None,
        head_repo: str | None = None,
        patch_left_out: Collection[str] = (),
        renamed: Mapping[str, str] | None = None,
        labels: Collection[str] = (),
    ) -> int:
        """Open a pull request; ``files`` maps a path to (base text, head text), None for absent; ``labels``: its
        labels' names.

        ``patch_left_out``: files GitHub lists without a patch (as it does for a file the change's own
        ``.gitattributes`` marks ``binary`` or ``-diff``). ``renamed``: a path of ``files`` -> where it was on
        the base side (its base text is there); listed as renamed, without a patch when its text is unchanged,
        as GitHub lists a pure rename.

        ``base_files``: more files on the base commit (config, AGENTS.md), served by the contents
        API with the base side of ``files``. ``head_repo``: the fork the head lives in.
        """
        with self._lock:
            repo_name = repo or self.default_repo
            self._known(author)
            number = number or 1 + max((n for r, n in self._pulls if r == repo_name), default=0)
            if (repo_name, number) in self._pulls:
                raise ValueError(f"pull request {repo_name}#{number} exists already")
            head, base = head_sha or self._new_sha(), base_sha or self._new_sha()
            built = {path: pull_file(path, old, new) for path, (old, new) in files.items()}
            for path in patch_left_out:
                built[path].patch_left_out = True
            moved = dict(renamed or {})
            for path, source in moved.items():
                built[path].status, built[path].previous_filename = "renamed", source
                built[path].patch_left_out = built[path].old_text == built[path].new_text
            pull = Pull(repo_name, number, self._new_id(), title, body, author, head, base, head_ref, base_ref, built)
            pull.head_repo = head_repo
            pull.labels = list(labels)
            pull.versions[head] = built
            tree = dict(self._contents.get(base, {})) | dict(base_files or {})
            tree |= {moved.get(path, path): old for path, (old, _) in files.items() if old is not None}
            self._contents[base] = tree
            self._contents[head] = {p: t for p, t in tree.items() if p not in files and p not in moved.values()} | {
                path: new for path, (_, new) in files.items() if new is not None
            }
            self._pulls[(repo_name, number)] = pull
            self._repos[repo_name].commits |= {head, base}
            self._repos[repo_name].parents.setdefault(base, None)
            self._repos[repo_name].parents[head] = base
            return number

    def push(
        self, number: int, files: Mapping[str, tuple[str | None, str | None] | None], *, head_sha: str | None = None,
        repo: str | None = None, force: bool = False,
    ) -> str:  # fmt: skip
        """Push a new head: ``files`` replaces those paths (None drops one); threads may become outdated.

        The new head's parent is the old head; ``force``: a force-push whose new head descends
        from the base commit only (a rebase), so the old head is no longer its ancestor.
        """
        with self._lock:
            pull = self._pull(repo, number)
            merged = dict(pull.files)
            base_tree = self._contents.get(pull.base_sha, {})
            tree = dict(self._contents.get(pull.head_sha, base_tree))
            for path, texts in files.items():
                if texts is None:
                    merged.pop(path, None)
                    tree.pop(path, None)
                    if path in base_tree:
                        tree[path] = base_tree[path]
                else:
                    merged[path] = pull_file(path, *texts)
                    tree.pop(path, None)
                    if texts[1] is not None:
                        tree[path] = texts[1]
            parent = pull.base_sha if force else pull.head_sha
            pull.files, pull.head_sha = merged, head_sha or self._new_sha()
            pull.versions[pull.head_sha] = merged
            self._contents[pull.head_sha] = tree
            self._repos[pull.repo].commits.add(pull.head_sha)
            self._repos[pull.repo].parents[pull.head_sha] = parent
            for thread in self._threads_of(pull):
                self._check_outdated(pull, thread)
            return pull.head_sha

    def add_issue(self, number: int, title: str, body: str, *, repo: str | None = None) -> None:
        """An open issue of ``repo`` (the default one), served by the issues API."""
        with self._lock:
            self._repos[repo or self.default_repo].issues[number] = (title, body)

    def set_body(self, number: int, body: str, *, repo: str | None = None) -> None:
        """The pull request's description, as its author edits it on the page."""
        with self._lock:
            self._pull(repo, number).body = body

    def set_labels(self, number: int, labels: Collection[str], *, repo: str | None = None) -> None:
        """The pull request's labels, as a person with triage access sets them."""
        with self._lock:
            self._pull(repo, number).labels = list(labels)

    def add_issue_comment(self, number: int, body: str, *, user: str, repo: str | None = None) -> int:
        """A human's comment on the pull request's conversation."""
        with self._lock:
            return self._create_issue_comment(self._pull(repo, number), body, self._known(user)).id

    def add_review_comment(
        self, number: int, path: str, line: int, body: str, *, user: str, side: Side = "RIGHT",
        start_line: int | None = None, repo: str | None = None,
    ) -> int:  # fmt: skip
        """A human's inline comment (in a one-comment COMMENTED review); return the comment id."""
        with self._lock:
            pull = self._pull(repo, number)
            draft = {"path": path, "line": line, "side": side, "start_line": start_line, "body": body}
            error = comment_error(pull.files, draft)
            if error:
                raise ValueError(error)
            review = self._create_review(pull, self._known(user), "COMMENTED", "", pull.head_sha)
            return self._create_thread(pull, review, draft).comments[0].id

    def add_reply(self, number: int, comment_id: int, body: str, *, user: str, repo: str | None = None) -> int:
        """A human's reply in the thread of ``comment_id``; return the new comment id."""
        with self._lock:
            return self._reply(self._pull(repo, number), comment_id, body, self._known(user)).id

    def add_review(
        self, number: int, *, user: str, state: str = "APPROVED", body: str = "", repo: str | None = None
    ) -> int:
        """A human's review without inline comments (e.g. an approval); return its id."""
        with self._lock:
            pull = self._pull(repo, number)
            return self._create_review(pull, self._known(user), state, body, pull.head_sha).id

    def refuse_comments_on(self, path: str, line: int) -> None:
        """Refuse (422, off the diff) review comments ending on ``line`` although the patch shows it."""
        with self._lock:
            self._refused_lines.add((path, line))

    def set_contents(self, ref: str, files: Mapping[str, str | None]) -> None:
        """Set (None: remove) files of commit ``ref`` as the contents API serves them."""
        with self._lock:
            tree = self._contents.setdefault(ref, {})
            for path, text in files.items():
                if text is None:
                    tree.pop(path, None)
                else:
                    tree[path] = text

    def drop_commit(self, sha: str, repo: str | None = None) -> None:
        """Forget commit ``sha`` (unreachable after a force-push, then garbage-collected): compare and
        contents answer 404 for it."""
        with self._lock:
            self.repo(repo).commits.discard(sha)
            self._contents.pop(sha, None)

    def resolve_thread(self, thread_id: str, *, user: str, resolved: bool = True) -> None:
        """A human resolves (or unresolves) a thread."""
        with self._lock:
            thread = self._threads[thread_id]
            thread.is_resolved, thread.resolved_by = resolved, self._known(user) if resolved else None

    def fail_next(
        self, n: int = 1, status: int = 429, *, retry_after: float | None = None, reset_after: float | None = None,
        method: str | None = None, path: str | None = None, processed: bool = False,
    ) -> None:  # fmt: skip
        """Answer the next ``n`` matching requests with ``status`` instead of serving them.

        429: rate limited; 403: a secondary rate limit (with ``reset_after``: the primary one,
        ``x-ratelimit-remaining: 0``); 5xx: a server error (502 as an HTML page, as GitHub does).
        ``retry_after`` sets Retry-After; ``reset_after`` sets x-ratelimit-reset that many seconds
        ahead. ``path`` matches as a substring. ``processed``: the request takes effect anyway.
        """
        with self._lock:
            self._faults.append(Fault(n, status, retry_after, reset_after, method, path, processed))

    def drop_next(
        self, n: int = 1, *, method: str | None = None, path: str | None = None, processed: bool = False
    ) -> None:
        """Close the connection of the next ``n`` matching requests without any answer.

        With ``processed`` the request takes effect first: the client cannot know it did.
        """
        self.fail_next(n, 0, method=method, path=path, processed=processed)

    # -- inspecting state ---------------------------------------------------------------------------
    def pull(self, number: int, repo: str | None = None) -> Pull:
        with self._lock:
            return copy.deepcopy(self._pull(repo, number))

    def issue_comments(self, number: int, repo: str | None = None) -> list[IssueComment]:
        with self._lock:
            pull = self._pull(repo, number)
            return [copy.copy(c) for c in self._issue_comments.values() if c.pull_id == pull.id]

    def reviews(self, number: int, repo: str | None = None) -> list[Review]:
        with self._lock:
            pull = self._pull(repo, number)
            return [copy.copy(r) for r in self._reviews.values() if r.pull_id == pull.id]

    def review_comments(self, number: int, repo: str | None = None) -> list[ReviewComment]:
        with self._lock:
            pull = self._pull(repo, number)
            return [copy.copy(c) for c in self._comments.values() if c.pull_id == pull.id]

    def threads(self, number: int, repo: str | None = None) -> list[Thread]:
        with self._lock:
            return copy.deepcopy(self._threads_of(self._pull(repo, number)))

    def check_runs(self, repo: str | None = None) -> list[CheckRun]:
        with self._lock:
            return [copy.deepcopy(c) for c in self._check_runs.values() if c.head_sha in self.repo(repo).commits]

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in the order they were answered."""
        with self._lock:
            return list(self._requests)

    @property
    def api_calls(self) -> int:
        """How many requests reached the server (faults and drops included)."""
        with self._lock:
            return len(self._requests)

    def calls(self, method: str | None = None, path: str | None = None) -> list[RecordedRequest]:
        """The recorded requests with this method and a path containing ``path``."""
        return [r for r in self.requests if (method in (None, r.method)) and (path is None or path in r.path)]

    # -- helpers on state ---------------------------------------------------------------------------
    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _new_sha(self) -> str:
        return f"{self._new_id():040x}"

    def _now(self) -> str:
        self._clock += 1
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_795_000_000 + self._clock))

    def _known(self, login: str) -> str:
        if login not in self._users:
            raise ValueError(f"unknown user {login!r}: add_user first")
        return login

    def _pull(self, repo: str | None, number: int) -> Pull:
        pull = self._pulls.get((repo or self.default_repo, number))
        if pull is None:
            raise Refusal(404, "Not Found")
        return pull

    def _threads_of(self, pull: Pull) -> list[Thread]:
        return [t for t in self._threads.values() if t.pull_id == pull.id]

    def _check_outdated(self, pull: Pull, thread: Thread) -> None:
        """A thread is outdated once its line leaves the head's diff or its text changes."""
        file = pull.files.get(thread.path)
        line = thread.comments[0].original_line
        if (
            file is None
            or file.hunk_of(thread.side, line) is None
            or file.text_at(thread.side, line) != thread.anchor_text
        ):
            thread.is_outdated, thread.line = True, None
            for comment in thread.comments:
                comment.line = None

    def _create_issue_comment(self, pull: Pull, body: str, user: str) -> IssueComment:
        now = self._now()
        comment = IssueComment(self._new_id(), pull.id, body, user, now, now)
        self._issue_comments[comment.id] = comment
        return comment

    def _create_review(self, pull: Pull, user: str, state: str, body: str, commit_id: str) -> Review:
        review = Review(self._new_id(), pull.id, state, body, commit_id, user, self._now())
        self._reviews[review.id] = review
        return review

    def _create_thread(self, pull: Pull, review: Review, draft: dict[str, Any]) -> Thread:
        side: Side = draft.get("side") or "RIGHT"
        line = int(draft["line"])
        files = pull.versions.get(review.commit_id, pull.files)
        anchor = files[draft["path"]].text_at(side, line)
        comment_id = self._new_id()
        thread = Thread(f"PRRT_{comment_id}", pull.id, draft["path"], line, side, anchor, [])
        start = draft.get("start_line")
        thread.comments.append(
            ReviewComment(
                comment_id, pull.id, thread.id, review.id, thread.path, line, line, side,
                int(start) if start else None, (draft.get("start_side") or side) if start else None,
                None, str(draft.get("body") or ""), review.user, review.commit_id, self._now(),
            )
        )  # fmt: skip
        self._comments[comment_id] = thread.comments[0]
        self._threads[thread.id] = thread
        if review.commit_id != pull.head_sha:
            self._check_outdated(pull, thread)
        return thread

    def _reply(self, pull: Pull, comment_id: int, body: str, user: str) -> ReviewComment:
        """Reply in a thread; like GitHub, the reply comes in a new COMMENTED review of its own."""
        parent = self._comments.get(comment_id)
        if parent is None or parent.pull_id != pull.id:
            raise Refusal(404, "Not Found")
        thread = self._threads[parent.thread_id]
        root = thread.comments[0]
        review = self._create_review(pull, user, "COMMENTED", "", pull.head_sha)
        reply = dataclasses.replace(
            root, id=self._new_id(), review_id=review.id, in_reply_to_id=root.id, body=body, user=user,
            commit_id=pull.head_sha, created_at=self._now(),
        )  # fmt: skip
        thread.comments.append(reply)
        self._comments[reply.id] = reply
        return reply

    # -- permissions ------------------------------------------------------------------------------
    def _need_write(self, call: Call, *scopes: str) -> None:
        """Workflow tokens need one of ``scopes`` at write; people need read access to the repository."""
        assert call.token is not None
        if call.token.kind == "pat":
            if self._repos[call.args["repo"]].permissions.get(call.login, "none") == "none":
                raise Refusal(403, "Must have push access to this repository.")
        elif not any(call.token.may_write(scope) for scope in scopes):
            raise Refusal(403, NOT_ACCESSIBLE)

    def _can_resolve(self, token: Token, pull: Pull) -> bool:
        if token.kind != "pat":
            return token.may_write("pull-requests") and token.may_write("contents")
        return token.user == pull.author or self._repos[pull.repo].permissions.get(token.user) in ("write", "admin")
