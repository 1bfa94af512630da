"""The fake GitHub's REST handlers: each checks what GitHub checks and answers as GitHub does.

A handler is a method ``(call) -> Reply``; it raises ``Refusal`` to answer an error and
change nothing. ``server`` routes requests to them.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from codejury_fakes.github.records import (
    ACTIONS_MAY_NOT_APPROVE,
    MAX_ANNOTATIONS,
    MAX_BODY,
    NOT_ACCESSIBLE,
    OFF_DIFF,
    Call,
    CheckRun,
    IssueComment,
    Pull,
    Refusal,
    Reply,
    Review,
    ReviewComment,
    ancestry,
    check_run_json,
    comment_error,
    compare_files,
    file_json,
    required_text,
    unprocessable,
)
from codejury_fakes.github.state import GitHubState


def blob_sha(text: str) -> str:
    """The git blob id of ``text``, as the contents API names a file's version (``sha``)."""
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class RestRoutes(GitHubState):
    """The REST endpoints codejury uses, over ``GitHubState``."""

    def _get_user(self, call: Call) -> Reply:
        if call.token and call.token.kind != "pat":
            raise Refusal(403, NOT_ACCESSIBLE)
        return Reply(200, self._users[call.login].json())

    def _get_repo(self, call: Call) -> Reply:
        repo = self._repos[call.args["repo"]]
        owner = self._users[repo.full_name.split("/")[0]].json()
        name = repo.full_name.split("/")[1]
        return Reply(200, {"id": repo.id, "name": name, "full_name": repo.full_name, "owner": owner,
                            "private": False, "default_branch": "main"})  # fmt: skip

    def _get_issue(self, call: Call) -> Reply:
        """An issue, or a pull request as GitHub serves it on the issues API (with ``pull_request``); 404 for a
        repository or number it does not know."""
        repo = self._repos.get(call.args["repo"])
        number = int(call.args["n"])
        if repo is None:
            raise Refusal(404, "Not Found")
        html = f"https://github.test/{repo.full_name}/issues/{number}"
        if (repo.full_name, number) in self._pulls:
            pull = self._pulls[(repo.full_name, number)]
            marker = {"url": f"{repo.full_name}/pulls/{number}"}
            return Reply(200, {"number": number, "title": pull.title, "body": pull.body, "html_url": html,
                               "state": "open", "pull_request": marker})  # fmt: skip
        if number not in repo.issues:
            raise Refusal(404, "Not Found")
        title, body = repo.issues[number]
        return Reply(200, {"number": number, "title": title, "body": body, "html_url": html, "state": "open"})

    def _get_pull(self, call: Call) -> Reply:
        return Reply(200, self._pull_json(self._pull(call.args["repo"], int(call.args["n"]))))

    def _patch_pull(self, call: Call) -> Reply:
        """Edit a pull request's description (``body``; the fake models no other field). A workflow token needs
        ``pull-requests: write`` (403 "Resource not accessible by integration", as a fork's read-only token gets);
        a person must be its author or have write access (403); a body over 65,536 characters is a 422."""
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        assert call.token is not None
        if call.token.kind != "pat":
            if not call.token.may_write("pull-requests"):
                raise Refusal(403, NOT_ACCESSIBLE)
        elif call.login != pull.author and self._repos[pull.repo].permissions.get(call.login) not in ("write", "admin"):
            raise Refusal(403, "Must have push access to edit this pull request.")
        body = call.field("body")
        if body is not None:
            if not isinstance(body, str):
                raise unprocessable("body is not a string")
            if len(body) > MAX_BODY:
                raise unprocessable(f"body is too long (maximum is {MAX_BODY} characters)")
            pull.body = body
        return Reply(200, self._pull_json(pull))

    def _pull_json(self, pull: Pull) -> dict[str, Any]:
        repo = {"full_name": pull.repo}
        head_repo = {"full_name": pull.head_repo or pull.repo}
        return {
            "id": pull.id, "node_id": f"PR_{pull.id}", "number": pull.number, "state": "open", "draft": False,
            "title": pull.title, "body": pull.body, "user": self._users[pull.author].json(),
            "head": {"sha": pull.head_sha, "ref": pull.head_ref, "repo": head_repo},
            "base": {"sha": pull.base_sha, "ref": pull.base_ref, "repo": repo},
            "changed_files": len(pull.files), "html_url": f"https://github.test/{pull.repo}/pull/{pull.number}",
            "labels": [{"name": label, "color": "ededed"} for label in pull.labels],
        }  # fmt: skip

    def _list_files(self, call: Call) -> Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        items = [file_json(f) for f in pull.files.values()]
        return self._page(call, items)

    def _get_permission(self, call: Call) -> Reply:
        login = call.args["login"]
        user = self._users.get(login)
        if user is None:
            raise Refusal(404, f"{login} is not a user")
        permission = self._repos[call.args["repo"]].permissions.get(login, "none")
        return Reply(200, {"permission": permission, "role_name": permission, "user": user.json()})

    def _get_contents(self, call: Call) -> Reply:
        """A file (base64, as GitHub sends it; its bytes alone when asked for as ``raw``) or a directory listing at
        ``ref``. A workflow token without ``contents`` access reads nothing (403), as on GitHub."""
        repo = self._repos[call.args["repo"]]
        if call.token and call.token.kind != "pat" and call.token.permissions.get("contents") not in ("read", "write"):
            raise Refusal(403, NOT_ACCESSIBLE)
        ref = call.query.get("ref") or ""
        tree = self._contents.get(ref)
        if tree is None or ref not in repo.commits:
            raise Refusal(404, f"No commit found for the ref {ref}")
        path = (call.args.get("path") or "").strip("/")
        if path in tree and "vnd.github.raw" in call.headers.get("accept", ""):
            return Reply(200, tree[path], {"Content-Type": "application/vnd.github.raw; charset=utf-8"})
        if path in tree:
            data = tree[path].encode()
            encoded = base64.encodebytes(data).decode()  # GitHub wraps the base64 at 60 columns
            return Reply(200, {"type": "file", "encoding": "base64", "path": path, "name": path.rsplit("/", 1)[-1],
                                "size": len(data), "content": encoded, "sha": blob_sha(tree[path])})  # fmt: skip
        prefix = f"{path}/" if path else ""
        names = sorted({p[len(prefix) :].split("/", 1)[0] for p in tree if p.startswith(prefix)})
        if not names:
            raise Refusal(404, "Not Found")
        items = [{"type": "file" if f"{prefix}{n}" in tree else "dir", "path": f"{prefix}{n}", "name": n}
                 for n in names]  # fmt: skip
        return Reply(200, items)

    def _compare(self, call: Call) -> Reply:
        """``base...head``: the commits of ``head`` since the merge base, and the files that differ between
        the merge base and ``head`` (first page only, at most 300, as GitHub does; identical text under a
        new name is a rename). ``per_page``/``page`` page the commits; without them, 250 at most."""
        repo = self._repos[call.args["repo"]]
        base, dots, head = call.args["basehead"].partition("...")
        if not dots or not base or not head:
            raise Refusal(404, "Not Found")  # the fake knows only the three-dot form
        for sha in (base, head):
            if sha not in repo.commits or sha not in self._contents:
                raise Refusal(404, "Not Found")
        base_line, head_line = ancestry(repo, base), ancestry(repo, head)
        merge_base = next((c for c in head_line if c in base_line), None)
        if merge_base is None:
            raise Refusal(404, f"No common ancestor between {base} and {head}.")
        ahead, behind = head_line.index(merge_base), base_line.index(merge_base)
        status = {(False, False): "identical", (True, False): "ahead", (False, True): "behind"}.get(
            (ahead > 0, behind > 0), "diverged"
        )
        commits = [{"sha": c, "commit": {"message": f"commit {c[:7]}"}} for c in reversed(head_line[:ahead])]
        paged = "per_page" in call.query or "page" in call.query
        reply = self._page(call, commits) if paged else Reply(200, commits[:250])
        first_page = not paged or int(call.query.get("page", 1)) <= 1
        files = compare_files(self._contents[merge_base], self._contents[head])[:300] if first_page else []
        reply.body = {
            "status": status, "ahead_by": ahead, "behind_by": behind, "total_commits": ahead,
            "base_commit": {"sha": base}, "merge_base_commit": {"sha": merge_base}, "commits": reply.body,
            "files": files,
        }  # fmt: skip
        return reply

    def _list_check_runs(self, call: Call) -> Reply:
        ref = call.args["ref"]
        name = call.query.get("check_name")
        runs = [r for r in self._check_runs.values() if r.head_sha == ref and (name is None or r.name == name)]
        runs.sort(key=lambda r: -r.id)
        return Reply(200, {"total_count": len(runs), "check_runs": [check_run_json(r) for r in runs]})

    def _list_issue_comments(self, call: Call) -> Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        return self._page(call, [self._issue_comment_json(c) for c in self._issue_comments.values()
                                 if c.pull_id == pull.id])  # fmt: skip

    def _post_issue_comment(self, call: Call) -> Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        self._need_write(call, "issues", "pull-requests")
        body = required_text(call, "body")
        return Reply(201, self._issue_comment_json(self._create_issue_comment(pull, body, call.login)))

    def _patch_issue_comment(self, call: Call) -> Reply:
        comment = self._issue_comments.get(int(call.args["id"]))
        if comment is None:
            raise Refusal(404, "Not Found")
        self._need_write(call, "issues", "pull-requests")
        if comment.user != call.login and self._repos[call.args["repo"]].permissions.get(call.login) != "admin":
            raise Refusal(403, NOT_ACCESSIBLE if call.token and call.token.kind != "pat" else "Forbidden")
        comment.body, comment.updated_at = required_text(call, "body"), self._now()
        return Reply(200, self._issue_comment_json(comment))

    def _issue_comment_json(self, c: IssueComment) -> dict[str, Any]:
        return {"id": c.id, "node_id": f"IC_{c.id}", "body": c.body, "user": self._users[c.user].json(),
                "created_at": c.created_at, "updated_at": c.updated_at}  # fmt: skip

    def _post_review(self, call: Call) -> Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        self._need_write(call, "pull-requests")
        event = call.field("event")
        state = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}.get(event)
        if state is None:
            raise unprocessable(f"event must be APPROVE, REQUEST_CHANGES or COMMENT (got {event!r}; "
                                 "the fake does not model pending reviews)")  # fmt: skip
        commit_id = call.field("commit_id") or pull.head_sha
        files = pull.versions.get(commit_id)
        if files is None:
            raise unprocessable(f"No commit found for SHA: {commit_id}")
        drafts = call.field("comments") or []
        body = call.field("body") or ""
        if not body and (state == "CHANGES_REQUESTED" or (state == "COMMENTED" and not drafts)):
            raise unprocessable("Body can't be blank")
        errors = [error for draft in drafts if (error := comment_error(files, draft))]
        errors += [
            OFF_DIFF for d in drafts if isinstance(d, dict) and (d.get("path"), d.get("line")) in self._refused_lines
        ]
        if errors:
            raise unprocessable(*errors)
        if state != "COMMENTED" and call.login == pull.author:
            verb = "approve" if state == "APPROVED" else "request changes on"
            raise unprocessable(f"Can not {verb} your own pull request")
        by_actions = call.token is not None and call.token.kind != "pat"
        if state == "APPROVED" and by_actions and not self._repos[pull.repo].actions_can_approve:
            raise Refusal(422, ACTIONS_MAY_NOT_APPROVE)
        review = self._create_review(pull, call.login, state, body, commit_id)
        for draft in drafts:
            self._create_thread(pull, review, draft)
        return Reply(200, self._review_json(review))

    def _list_reviews(self, call: Call) -> Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        return self._page(call, [self._review_json(r) for r in self._reviews.values() if r.pull_id == pull.id])

    def _dismiss_review(self, call: Call) -> Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        review = self._reviews.get(int(call.args["id"]))
        if review is None or review.pull_id != pull.id:
            raise Refusal(404, "Not Found")
        self._need_write(call, "pull-requests")
        if call.token and call.token.kind == "pat" and self._repos[pull.repo].permissions.get(call.login) not in (
            "write", "admin",
        ):  # fmt: skip
            raise Refusal(403, "Must have push access to dismiss a review.")
        required_text(call, "message")
        if review.state not in ("APPROVED", "CHANGES_REQUESTED"):
            raise unprocessable("Can not dismiss a commented pull request review")
        review.state = "DISMISSED"
        return Reply(200, self._review_json(review))

    def _review_json(self, r: Review) -> dict[str, Any]:
        return {"id": r.id, "node_id": f"PRR_{r.id}", "state": r.state, "body": r.body, "commit_id": r.commit_id,
                "user": self._users[r.user].json(), "submitted_at": r.submitted_at}  # fmt: skip

    def _list_review_comments(self, call: Call) -> Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        items = [self._comment_json(c) for c in self._comments.values() if c.pull_id == pull.id]
        return self._page(call, items)

    def _post_reply(self, call: Call) -> Reply:
        pull = self._pull(call.args["repo"], int(call.args["n"]))
        self._need_write(call, "pull-requests")
        reply = self._reply(pull, int(call.args["id"]), required_text(call, "body"), call.login)
        return Reply(201, self._comment_json(reply))

    def _comment_json(self, c: ReviewComment) -> dict[str, Any]:
        item = {
            "id": c.id, "node_id": f"PRRC_{c.id}", "pull_request_review_id": c.review_id, "path": c.path,
            "line": c.line, "original_line": c.original_line, "side": c.side, "start_line": c.start_line,
            "start_side": c.start_side, "body": c.body, "user": self._users[c.user].json(),
            "commit_id": c.commit_id, "original_commit_id": c.commit_id, "created_at": c.created_at,
        }  # fmt: skip
        if c.in_reply_to_id is not None:
            item["in_reply_to_id"] = c.in_reply_to_id
        return item

    def _post_check_run(self, call: Call) -> Reply:
        self._need_checks(call)
        name, head_sha = call.field("name"), call.field("head_sha")
        if not name or not head_sha:
            raise unprocessable("name and head_sha are required")
        if head_sha not in self._repos[call.args["repo"]].commits:
            raise unprocessable(f"No commit found for SHA: {head_sha}")
        run = CheckRun(self._new_id(), name, head_sha, "queued", None, "", "", "", [], call.login)
        self._update_run(run, call)
        self._check_runs[run.id] = run
        return Reply(201, check_run_json(run))

    def _patch_check_run(self, call: Call) -> Reply:
        self._need_checks(call)
        run = self._check_runs.get(int(call.args["id"]))
        if run is None or run.head_sha not in self._repos[call.args["repo"]].commits:
            raise Refusal(404, "Not Found")
        self._update_run(run, call)
        return Reply(200, check_run_json(run))

    def _need_checks(self, call: Call) -> None:
        if call.token and call.token.kind == "pat":
            raise Refusal(403, "You must authenticate via a GitHub App.")
        self._need_write(call, "checks")

    def _update_run(self, run: CheckRun, call: Call) -> None:
        """Validate everything first, then apply: annotations are appended, the rest replaced."""
        status = call.field("status") or run.status
        conclusion = call.field("conclusion") or run.conclusion
        if status not in ("queued", "in_progress", "completed"):
            raise unprocessable(f"Invalid status: {status}")
        if status == "completed" and conclusion is None:
            raise unprocessable("conclusion is required when status is completed")
        output = call.field("output")
        annotations: list[dict[str, Any]] = []
        if output is not None:
            if not isinstance(output, dict) or not output.get("title") or not output.get("summary"):
                raise unprocessable("output needs a title and a summary")
            if len(output["summary"]) > 65535:
                raise unprocessable("output.summary is too long (maximum is 65535 characters)")
            annotations = list(output.get("annotations") or [])
            if len(annotations) > MAX_ANNOTATIONS:
                raise Refusal(422, f"Only {MAX_ANNOTATIONS} annotations are allowed per request")
            for item in annotations:
                if not all(item.get(k) for k in ("path", "start_line", "end_line", "annotation_level", "message")):
                    raise unprocessable("an annotation needs path, start_line, end_line, annotation_level, message")
                if item["annotation_level"] not in ("notice", "warning", "failure"):
                    raise unprocessable(f"Invalid annotation_level: {item['annotation_level']}")
            run.title, run.summary, run.text = output["title"], output["summary"], output.get("text") or run.text
        run.status, run.conclusion = status, conclusion
        run.annotations.extend(annotations)
        run.details_url = call.field("details_url") or run.details_url
        run.external_id = call.field("external_id") or run.external_id

    def _page(self, call: Call, items: list[dict[str, Any]]) -> Reply:
        """One page of ``items`` with GitHub's ``Link`` header (per_page defaults to 30, at most 100)."""
        per_page = max(1, min(100, int(call.query.get("per_page", 30))))
        page = max(1, int(call.query.get("page", 1)))
        last = max(1, -(-len(items) // per_page))
        links = []
        for rel, target in (("prev", page - 1), ("next", page + 1), ("first", 1), ("last", last)):
            if 1 <= target <= last and (rel in ("prev", "next") or page != target):
                query = "&".join(f"{k}={v}" for k, v in {**call.query, "per_page": per_page, "page": target}.items())
                links.append(f'<{self.api_url}{call.prefix}{call.path}?{query}>; rel="{rel}"')
        headers = {"link": ", ".join(links)} if links else {}
        return Reply(200, items[(page - 1) * per_page : page * per_page], headers)
