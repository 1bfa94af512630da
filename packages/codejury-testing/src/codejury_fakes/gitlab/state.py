"""The fake GitLab's state and how it changes: building the world, faults, inspection, JSON views.

``GitLabState`` holds everything; ``FakeGitLab`` (``server``) serves it over HTTP and the
endpoints in ``routes`` read and change it through the private helpers here.
"""

from __future__ import annotations

import re
import threading
from datetime import timedelta
from typing import Any
from urllib.parse import unquote, urlencode

from codejury_fakes.gitlab.records import (
    DEVELOPER,
    EPOCH,
    MAINTAINER,
    REPORTER,
    Answer,
    Call,
    Discussion,
    FakeUser,
    Fault,
    FileSpec,
    MergeRequest,
    Note,
    Project,
    QuickAction,
    RecordedRequest,
    Version,
    apply_files,
    diff_files_from,
    extract_commands,
    fake_sha,
    refuse,
    split_diff,
    to_int,
)


class GitLabState:
    """The world of the fake GitLab: users, tokens, projects, merge requests, faults and the request log.

    Building and inspecting it are the public methods; the endpoints (``routes``) use the
    private helpers, with the lock held.
    """

    BOT_TOKEN = "glpat-fake-bot"
    AUTHOR_TOKEN = "glpat-fake-alice"
    MAINTAINER_TOKEN = "glpat-fake-bob"
    REPORTER_TOKEN = "glpat-fake-rita"
    JOB_TOKEN = "glcbt-fake-job"
    BOT = "project_1_bot"

    def __init__(self, url: str, *, latency_s: float = 0.0) -> None:
        self.url = url
        """Where the fake is served (``http://127.0.0.1:PORT``): web URLs and pagination links start here."""
        self.latency_s = latency_s
        self._lock = threading.RLock()
        self._users: dict[str, FakeUser] = {}
        self._tokens: dict[str, tuple[FakeUser, bool]] = {}
        self._read_only_tokens: set[str] = set()
        self._projects: dict[int, Project] = {}
        self._faults: list[Fault] = []
        self._requests: list[RecordedRequest] = []
        self._quick_actions: list[QuickAction] = []
        self._ticks = 0
        self._ids = 1000
        self.add_project(1, "acme/widgets")
        for name, level, bot, token in (
            ("alice", DEVELOPER, False, self.AUTHOR_TOKEN),
            ("bob", MAINTAINER, False, self.MAINTAINER_TOKEN),
            ("rita", REPORTER, False, self.REPORTER_TOKEN),
            (self.BOT, DEVELOPER, True, self.BOT_TOKEN),
        ):
            self.add_user(name, name="codejury" if bot else None, bot=bot, access={1: level})
            self.add_token(token, name)
        self.add_token(self.JOB_TOKEN, "alice", job=True)

    @property
    def api_url(self) -> str:
        return self.url + "/api/v4"

    # -- building the world -------------------------------------------------------------------
    def add_project(self, project_id: int, path: str) -> None:
        with self._lock:
            self._projects[project_id] = Project(project_id, path)

    def add_user(self, username: str, *, name: str | None = None, bot: bool = False,
                 access: dict[int, int] | None = None) -> FakeUser:  # fmt: skip
        """A user, member of each project in ``access`` (project id -> access level)."""
        with self._lock:
            user = FakeUser(len(self._users) + 1, username, name or username.title(), bot)
            self._users[username] = user
            for project_id, level in (access or {}).items():
                self._projects[project_id].members[user.id] = level
            return user

    def set_access(self, project_id: int, username: str, level: int | None) -> None:
        """Change a member's access level (None removes the membership)."""
        with self._lock:
            members = self._projects[project_id].members
            user_id = self._users[username].id
            if level is None:
                members.pop(user_id, None)
            else:
                members[user_id] = level

    def add_token(self, token: str, username: str, *, job: bool = False, scopes: tuple[str, ...] = ("api",)) -> None:
        """A token acting as ``username``; ``job=True`` makes it a read-only CI job token; without the ``api`` scope
        (``scopes=("read_api",)``) every write is refused (403 insufficient_scope), as GitLab does."""
        with self._lock:
            self._tokens[token] = (self._users[username], job)
            if "api" not in scopes:
                self._read_only_tokens.add(token)

    def add_issue(self, project_id: int, iid: int, title: str, description: str) -> None:
        """An open issue of the project, served by the issues API to its members."""
        with self._lock:
            self._projects[project_id].issues[iid] = (title, description)

    def add_mr(self, project_id: int, iid: int, *, files: FileSpec | None = None, diff: str | None = None,
               author: str = "alice", title: str = "Add a feature", description: str = "",
               source_branch: str = "feature", target_branch: str = "main",
               labels: list[str] | None = None,
               base_files: dict[str, str] | None = None,
               head_sha: str | None = None, base_sha: str | None = None) -> dict[str, Any]:  # fmt: skip
        """An open MR whose diff is ``files`` ({path: (old text, new text)}, None = absent) or ``diff``.

        The base commit's tree is ``base_files`` plus the old side of ``files``; the head's is
        that tree with ``files`` applied (a file given by ``diff`` holds its diff text there).
        ``head_sha`` / ``base_sha``: the commits' ids (those of a repository given to ``serve_git``).
        """
        with self._lock:
            base = base_sha or fake_sha(f"base-{project_id}-{iid}")
            version = self._version(base, head_sha or fake_sha(f"head-{project_id}-{iid}-0"), files, diff)
            mr = MergeRequest(self._next_id(), iid, project_id, title, description, self._users[author],
                               source_branch, target_branch, self._now(), [version],
                               labels=list(labels or []))  # fmt: skip
            project = self._projects[project_id]
            project.mrs[iid] = mr
            tree = {**(base_files or {}), **{p: old for p, (old, _) in (files or {}).items() if old is not None}}
            project.commits[base] = tree
            project.commits[version.head_sha] = apply_files(tree, files, version)
            return self._mr_json(mr)

    def set_description(self, project_id: int, iid: int, description: str) -> None:
        """The merge request's description, as its author edits it on the page."""
        with self._lock:
            self._projects[project_id].mrs[iid].description = description

    def set_repo_files(self, project_id: int, sha: str, files: dict[str, str]) -> None:
        """Set the whole tree of commit ``sha`` ({path: text}), as the repository files API reads it."""
        with self._lock:
            self._projects[project_id].commits[sha] = dict(files)

    def drop_commit(self, project_id: int, sha: str) -> None:
        """Forget commit ``sha`` (a force-push that GitLab garbage-collected): compare and files answer 404."""
        with self._lock:
            self._projects[project_id].commits.pop(sha, None)

    def push(self, project_id: int, iid: int, *, files: FileSpec | None = None, diff: str | None = None,
             reset_approvals: bool = True, head_sha: str | None = None) -> dict[str, str]:  # fmt: skip
        """A new head: a new version whose diff (base to new head) is ``files`` or ``diff``; returns its diff_refs.

        ``head_sha``: the new head commit's id (one of a repository given to ``serve_git``)."""
        with self._lock:
            project = self._projects[project_id]
            mr = project.mrs[iid]
            current = mr.versions[0]
            head = head_sha or fake_sha(f"head-{project_id}-{iid}-{len(mr.versions)}")
            mr.versions.insert(0, self._version(current.base_sha, head, files, diff))
            project.commits[head] = apply_files(project.commits.get(current.base_sha, {}), files, mr.versions[0])
            if reset_approvals:
                mr.approved_by.clear()
            self._system_note(mr, f"added 1 commit\n\n* {head[:8]} - new commit")
            return mr.versions[0].refs()

    def collapse(self, project_id: int, iid: int, path: str, *, too_large: bool = False) -> None:
        """GitLab leaves the text of ``path``'s diff out of the MR's newest version, as it does for a diff it
        collapses (``too_large=True``: one it finds too large): ``diff`` "", the flag set, no line codes."""
        with self._lock:
            version = self._projects[project_id].mrs[iid].versions[0]
            diff_file = next(f for f in version.files if path in (f.new_path, f.old_path))
            diff_file.diff, diff_file.collapsed, diff_file.too_large = "", not too_large, too_large
            diff_file.lines.clear()
            diff_file.order.clear()

    def add_note(self, project_id: int, iid: int, body: str, *, author: str = "bob", system: bool = False) -> int:
        """A top-level comment by ``author`` (no quick actions run); returns the note id."""
        with self._lock:
            mr = self._projects[project_id].mrs[iid]
            return self._new_discussion(mr, self._users[author], body, None, individual=True, system=system).notes[0].id

    def add_discussion(self, project_id: int, iid: int, body: str, *, author: str = "bob", path: str | None = None,
                       new_line: int | None = None, old_line: int | None = None,
                       resolved: bool = False) -> str:  # fmt: skip
        """A thread by ``author``, on a diff line when ``path`` is given; returns the discussion id."""
        with self._lock:
            mr = self._projects[project_id].mrs[iid]
            position = None
            if path is not None:
                position = {"position_type": "text", **mr.versions[0].refs(), "old_path": path, "new_path": path,
                            "old_line": old_line, "new_line": new_line}  # fmt: skip
            discussion = self._new_discussion(mr, self._users[author], body, position, individual=False)
            if resolved:
                discussion.resolved_by, discussion.resolved_at = self._users[author], self._now()
            return discussion.id

    def add_reply(self, project_id: int, iid: int, discussion_id: str, body: str, *, author: str = "bob") -> int:
        with self._lock:
            mr = self._projects[project_id].mrs[iid]
            return self._reply(mr, mr.discussions[discussion_id], self._users[author], body).id

    def approve_as(self, project_id: int, iid: int, username: str) -> None:
        with self._lock:
            self._projects[project_id].mrs[iid].approved_by.append(self._users[username])

    # -- fault injection ----------------------------------------------------------------------
    def fail_next(self, n: int = 1, status: int = 503, *, retry_after: float | None = None,
                  method: str | None = None, path: str | None = None) -> None:  # fmt: skip
        """Answer the next ``n`` matching requests with ``status`` (``path``: a regex searched in the path)."""
        with self._lock:
            pattern = re.compile(path) if path else None
            self._faults.append(Fault(n, status, retry_after, method.upper() if method else None, pattern))

    # -- inspection ---------------------------------------------------------------------------
    def user(self, username: str) -> FakeUser:
        with self._lock:
            return self._users[username]

    def mr(self, project_id: int, iid: int) -> dict[str, Any]:
        with self._lock:
            return self._mr_json(self._projects[project_id].mrs[iid])

    def diff_refs(self, project_id: int, iid: int) -> dict[str, str]:
        with self._lock:
            return self._projects[project_id].mrs[iid].versions[0].refs()

    def discussions(self, project_id: int, iid: int) -> list[dict[str, Any]]:
        with self._lock:
            mr = self._projects[project_id].mrs[iid]
            return [self._discussion_json(mr, d) for d in mr.discussions.values()]

    def notes(self, project_id: int, iid: int, *, system: bool = True) -> list[dict[str, Any]]:
        """Every note, oldest first (``system=False`` leaves out GitLab's own notes)."""
        with self._lock:
            mr = self._projects[project_id].mrs[iid]
            notes = sorted((n for d in mr.discussions.values() for n in d.notes), key=lambda n: n.id)
            return [self._note_json(mr, n) for n in notes if system or not n.system]

    def approvals(self, project_id: int, iid: int) -> list[str]:
        with self._lock:
            return [u.username for u in self._projects[project_id].mrs[iid].approved_by]

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def api_calls(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def quick_actions_executed(self) -> list[QuickAction]:
        with self._lock:
            return list(self._quick_actions)

    # -- helpers over state (callers hold the lock) -------------------------------------------
    def _now(self) -> str:
        self._ticks += 1
        return (EPOCH + timedelta(seconds=self._ticks)).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def _version(self, base: str, head: str, files: FileSpec | None, diff: str | None) -> Version:
        if (files is None) == (diff is None):
            raise ValueError("give exactly one of files= or diff=")
        diff_files = diff_files_from(files) if files else split_diff(diff)
        return Version(self._next_id(), base, base, head, self._now(), diff_files)

    def _new_discussion(self, mr: MergeRequest, author: FakeUser, body: str, position: dict[str, Any] | None,
                        *, individual: bool, system: bool = False) -> Discussion:  # fmt: skip
        discussion = Discussion(fake_sha(f"discussion-{self._next_id()}"), individual, not individual and not system)
        mr.discussions[discussion.id] = discussion
        now = self._now()
        discussion.notes.append(Note(self._next_id(), body, author, discussion.id, now, system, position, now))
        return discussion

    def _reply(self, mr: MergeRequest, discussion: Discussion, author: FakeUser, body: str) -> Note:
        if discussion.individual_note:  # replying turns a comment into a thread, as in GitLab
            discussion.individual_note, discussion.resolvable = False, True
        now = self._now()
        note = Note(self._next_id(), body, author, discussion.id, now, updated_at=now)
        discussion.notes.append(note)
        return note

    def _system_note(self, mr: MergeRequest, body: str, author: FakeUser | None = None) -> None:
        self._new_discussion(mr, author or mr.author, body, None, individual=True, system=True)

    def _mr_json(self, mr: MergeRequest) -> dict[str, Any]:
        path = self._projects[mr.project_id].path
        head = mr.versions[0]
        user_notes = sum(1 for d in mr.discussions.values() for n in d.notes if not n.system)
        return {"id": mr.id, "iid": mr.iid, "project_id": mr.project_id, "title": mr.title,
                "description": mr.description, "state": mr.state, "created_at": mr.created_at,
                "updated_at": head.created_at, "target_branch": mr.target_branch, "source_branch": mr.source_branch,
                "source_project_id": mr.project_id, "target_project_id": mr.project_id,
                "author": mr.author.json(), "assignees": [], "reviewers": [], "labels": list(mr.labels),
                "draft": mr.title.startswith("Draft:"), "work_in_progress": mr.title.startswith("Draft:"),
                "merge_status": "can_be_merged", "detailed_merge_status": "mergeable", "sha": head.head_sha,
                "user_notes_count": user_notes, "diff_refs": head.refs(),
                "references": {"short": f"!{mr.iid}", "full": f"{path}!{mr.iid}"},
                "web_url": f"{self.url}/{path}/-/merge_requests/{mr.iid}"}  # fmt: skip

    def _note_json(self, mr: MergeRequest, note: Note) -> dict[str, Any]:
        discussion = mr.discussions[note.discussion_id]
        kind = None if discussion.individual_note else "DiffNote" if note.position else "DiscussionNote"
        resolved = discussion.resolvable and discussion.resolved_by is not None
        out = {"id": note.id, "type": kind, "body": note.body, "attachment": None, "author": note.author.json(),
               "created_at": note.created_at, "updated_at": note.updated_at, "system": note.system,
               "noteable_id": mr.id, "noteable_type": "MergeRequest", "noteable_iid": mr.iid,
               "project_id": mr.project_id, "resolvable": discussion.resolvable, "resolved": resolved,
               "resolved_by": discussion.resolved_by.json() if resolved and discussion.resolved_by else None,
               "resolved_at": discussion.resolved_at if resolved else None, "confidential": False,
               "internal": False}  # fmt: skip
        if note.position is not None:
            out["position"] = dict(note.position)
        return out

    def _discussion_json(self, mr: MergeRequest, discussion: Discussion) -> dict[str, Any]:
        notes = [self._note_json(mr, n) for n in discussion.notes]
        return {"id": discussion.id, "individual_note": discussion.individual_note, "notes": notes}

    def _project(self, call: Call, level: int = REPORTER) -> Project:
        ref = unquote(call.args["project"])
        project = self._projects.get(int(ref)) if ref.isdigit() else next(
            (p for p in self._projects.values() if p.path == ref), None)  # fmt: skip
        if project is None or call.user.id not in project.members:
            raise refuse(404, "404 Project Not Found")
        if project.members[call.user.id] < level:
            raise refuse(403)
        return project

    def _mr(self, call: Call, level: int = REPORTER) -> tuple[Project, MergeRequest]:
        project = self._project(call, level)
        mr = project.mrs.get(int(call.args["iid"]))
        if mr is None:
            raise refuse(404, "404 Not found")
        return project, mr

    def _page(self, call: Call, items: list[Any]) -> Answer:
        """One page of ``items`` with GitLab's pagination headers (20 a page, at most 100)."""
        per_page = to_int(call.params.get("per_page"), 20)
        per_page = 20 if per_page < 1 else min(per_page, 100)
        page = max(1, to_int(call.params.get("page"), 1))
        pages = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        base = {k: str(v) for k, v in call.params.items() if k != "page"}

        def link(n: int) -> str:
            return f"{self.api_url}{call.path}?{urlencode({**base, 'page': n, 'per_page': per_page})}"

        rels = [(page + 1, "next")] if page < pages else []
        rels += [(page - 1, "prev")] if page > 1 else []
        rels += [(1, "first"), (pages, "last")]
        headers = {"X-Page": str(page), "X-Per-Page": str(per_page), "X-Total": str(len(items)),
                   "X-Total-Pages": str(pages), "X-Next-Page": str(page + 1) if page < pages else "",
                   "X-Prev-Page": str(page - 1) if page > 1 else "",
                   "Link": ", ".join(f'<{link(n)}>; rel="{rel}"' for n, rel in rels)}  # fmt: skip
        return 200, chunk, headers

    def _run_quick_actions(self, mr: MergeRequest, user: FakeUser, body: str) -> tuple[str, list[tuple[str, str]]]:
        """Run the quick actions in ``body`` as ``user``; return the text left and the commands run."""
        text, commands = extract_commands(body)
        level = self._projects[mr.project_id].members.get(user.id, 0)
        for command, args in commands:
            self._quick_actions.append(QuickAction(mr.project_id, mr.iid, user.username, command, args))
            if command == "approve" and user not in mr.approved_by and user != mr.author and level >= DEVELOPER:
                mr.approved_by.append(user)
                self._system_note(mr, "approved this merge request", user)
            elif command == "unapprove" and user in mr.approved_by:
                mr.approved_by.remove(user)
            elif command in ("close", "reopen", "merge") and level >= DEVELOPER:
                mr.state = {"close": "closed", "reopen": "opened", "merge": "merged"}[command]
                self._system_note(mr, mr.state, user)
            elif command in ("label", "unlabel"):
                for label in re.findall(r"~(\S+)", args):
                    if command == "label" and label not in mr.labels:
                        mr.labels.append(label)
                    elif command == "unlabel" and label in mr.labels:
                        mr.labels.remove(label)
            elif command == "title" and args:
                mr.title = args
        return text, commands
