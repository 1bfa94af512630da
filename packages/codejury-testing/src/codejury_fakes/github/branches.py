"""The fake GitHub's branch, file and pull-request creation endpoints (what ``codejury learn --propose`` calls).

Each refuses what GitHub refuses: a token without push access a 403 (a workflow token without ``contents: write``,
or ``pull-requests: write`` for a pull request); a reference that exists already, a sha the repository does not
hold or a name not under ``refs/`` a 422; an existing file written without its blob ``sha`` a 422 and with a stale
one a 409; a missing branch a 404; a second open pull request from the same branch, or one without commits, a 422.
Branch ``main`` exists from the start with an empty tree until ``set_branch`` gives it files.
"""

from __future__ import annotations

import base64
from typing import Any

from codejury_fakes.github.records import NOT_ACCESSIBLE, Call, Refusal, Reply, unprocessable
from codejury_fakes.github.rest import RestRoutes, blob_sha

DEFAULT_BRANCH = "main"
_PUSHERS = ("write", "maintain", "admin")


class BranchRoutes(RestRoutes):
    """Branches (``git/refs``), files (``contents`` PUT) and new pull requests, beside the other REST routes."""

    @property
    def _branches(self) -> dict[tuple[str, str], str]:
        """(repository, branch) -> head commit; made on first use."""
        heads: dict[tuple[str, str], str] = self.__dict__.setdefault("_branch_heads", {})
        return heads

    def branch_head(self, repo: str, name: str) -> str | None:
        """The head commit of branch ``name`` of ``repo`` (``main`` exists from the start)."""
        with self._lock:
            branches = self._branches
            if name == DEFAULT_BRANCH and (repo, name) not in branches:
                sha = self._new_sha()
                self._contents[sha] = {}
                self._repos[repo].commits.add(sha)
                self._repos[repo].parents[sha] = None
                branches[(repo, name)] = sha
            return branches.get((repo, name))

    def set_branch(self, name: str, files: dict[str, str], repo: str | None = None) -> str:
        """Branch ``name`` at a new commit whose tree is ``files``; returns its sha."""
        with self._lock:
            repo = repo or self.default_repo
            sha = self._new_sha()
            self._contents[sha] = dict(files)
            self._repos[repo].commits.add(sha)
            self._repos[repo].parents[sha] = None
            self._branches[(repo, name)] = sha
            return sha

    def branch_files(self, name: str, repo: str | None = None) -> dict[str, str] | None:
        head = self.branch_head(repo or self.default_repo, name)
        return None if head is None else dict(self._contents[head])

    def _get_contents(self, call: Call) -> Reply:
        """As the REST route answers, with ``ref`` also a branch's name (GitHub takes either)."""
        ref = call.query.get("ref") or ""
        head = self.branch_head(call.args["repo"], ref) if ref else None
        if head is not None:
            call.query["ref"] = head
        return super()._get_contents(call)

    def _push_access(self, call: Call, scope: str) -> None:
        assert call.token is not None
        if call.token.kind != "pat":
            if not call.token.may_write(scope):
                raise Refusal(403, NOT_ACCESSIBLE)
        elif self._repos[call.args["repo"]].permissions.get(call.login, "none") not in _PUSHERS:
            raise Refusal(403, "Permission to the repository denied.")

    def _get_branch_ref(self, call: Call) -> Reply:
        sha = self.branch_head(call.args["repo"], call.args["branch"])
        if sha is None:
            raise Refusal(404, "Not Found")
        return Reply(200, {"ref": f"refs/heads/{call.args['branch']}", "object": {"sha": sha, "type": "commit"}})

    def _post_ref(self, call: Call) -> Reply:
        self._push_access(call, "contents")
        repo, ref, sha = call.args["repo"], call.field("ref"), call.field("sha")
        if not isinstance(ref, str) or not ref.startswith("refs/") or ref.count("/") < 2:
            raise unprocessable("ref must be fully qualified and start with 'refs'")
        if not isinstance(sha, str) or sha not in self._repos[repo].commits:
            raise unprocessable("Object does not exist")
        name = ref.removeprefix("refs/heads/")
        if self.branch_head(repo, name) is not None:
            raise unprocessable("Reference already exists")
        self._branches[(repo, name)] = sha
        return Reply(201, {"ref": ref, "object": {"sha": sha, "type": "commit"}})

    def _put_contents(self, call: Call) -> Reply:
        self._push_access(call, "contents")
        repo, path = call.args["repo"], (call.args.get("path") or "").strip("/")
        message, content, branch = call.field("message"), call.field("content"), call.field("branch")
        if not isinstance(message, str) or not message or not isinstance(content, str):
            raise unprocessable("message and content are required")
        branch = branch if isinstance(branch, str) and branch else DEFAULT_BRANCH
        head = self.branch_head(repo, branch)
        if head is None:
            raise Refusal(404, f"Branch {branch} not found")
        tree = dict(self._contents[head])
        given = call.field("sha")
        if path in tree and not given:
            raise unprocessable('Invalid request.\n\n"sha" wasn\'t supplied.')
        if path in tree and given != blob_sha(tree[path]):
            raise Refusal(409, f"{path} does not match {given}")
        tree[path] = base64.b64decode(content).decode()
        sha = self._new_sha()
        self._contents[sha] = tree
        self._repos[repo].commits.add(sha)
        self._repos[repo].parents[sha] = head
        self._branches[(repo, branch)] = sha
        return Reply(201, {"content": {"path": path, "sha": blob_sha(tree[path])}, "commit": {"sha": sha}})

    def _post_pull(self, call: Call) -> Reply:
        self._push_access(call, "pull-requests")
        repo = call.args["repo"]
        title, head_ref, base_ref = call.field("title"), call.field("head"), call.field("base")
        if not all(isinstance(v, str) and v for v in (title, head_ref, base_ref)):
            raise unprocessable("title, head and base are required")
        assert isinstance(head_ref, str) and isinstance(base_ref, str) and isinstance(title, str)
        head, base = self.branch_head(repo, head_ref), self.branch_head(repo, base_ref)
        if head is None or base is None:
            raise unprocessable("head or base is invalid")
        if any(p.repo == repo and p.head_ref == head_ref for p in self._pulls.values()):
            raise unprocessable(f"A pull request already exists for {repo.split('/')[0]}:{head_ref}.")
        old, new = self._contents[base], self._contents[head]
        files: dict[str, tuple[str | None, str | None]] = {
            p: (old.get(p), new.get(p)) for p in sorted(set(old) | set(new)) if old.get(p) != new.get(p)
        }
        if not files:
            raise unprocessable(f"No commits between {base_ref} and {head_ref}")
        body = call.field("body")
        number = self.add_pr(
            author=call.login, files=files, title=title, body=body if isinstance(body, str) else "",
            head_sha=head, base_sha=base, head_ref=head_ref, base_ref=base_ref, repo=repo, base_files=old,
        )  # fmt: skip
        out: dict[str, Any] = self._pull_json(self._pulls[(repo, number)])
        return Reply(201, out)
