"""The fake GitLab's endpoints: ``(state, call) -> (status, body[, headers])``, and the table routing to them.

Each endpoint checks what GitLab checks (membership and access level, positions against the
diff, quick actions in bodies) and refuses with GitLab's status and message.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from codejury_fakes.gitlab.records import (
    DEVELOPER,
    GUEST,
    LINE_CODE_ERROR,
    MAX_DESCRIPTION,
    Answer,
    Call,
    FakeUser,
    MergeRequest,
    fake_sha,
    opt_int,
    refuse,
)
from codejury_fakes.gitlab.repository import post_branch, post_commit, post_merge_request
from codejury_fakes.gitlab.state import GitLabState

Endpoint = Callable[[GitLabState, Call], "tuple[int, Any] | Answer"]


def _get_user(gl: GitLabState, call: Call) -> tuple[int, Any]:
    return 200, call.user.json()


def _get_project(gl: GitLabState, call: Call) -> tuple[int, Any]:
    project = gl._project(call, GUEST)
    return 200, {"id": project.id, "path_with_namespace": project.path, "name": project.path.rsplit("/", 1)[-1],
                 "default_branch": "main", "web_url": f"{gl.url}/{project.path}"}  # fmt: skip


def _get_member(gl: GitLabState, call: Call) -> tuple[int, Any]:
    project = gl._project(call, GUEST)
    user = next((u for u in gl._users.values() if u.id == int(call.args["user_id"])), None)
    if user is None or user.id not in project.members:
        raise refuse(404, "404 Not found")
    return 200, {**user.json(), "access_level": project.members[user.id]}


def _get_issue(gl: GitLabState, call: Call) -> tuple[int, Any]:
    project = gl._project(call, GUEST)  # a guest sees the issues of a project it is a member of
    iid = int(call.args["iid"])
    if iid not in project.issues:
        raise refuse(404, "404 Not found")
    title, description = project.issues[iid]
    return 200, {"iid": iid, "project_id": project.id, "title": title, "description": description,
                 "state": "opened", "web_url": f"{gl.url}/{project.path}/-/issues/{iid}"}  # fmt: skip


def _get_mr(gl: GitLabState, call: Call) -> tuple[int, Any]:
    return 200, gl._mr_json(gl._mr(call)[1])


def _put_mr(gl: GitLabState, call: Call) -> tuple[int, Any]:
    """Edit a merge request's description (the fake models no other field): its author or a Developer and above;
    a Reporter gets 403, as GitLab answers. GitLab's 1,048,576-character limit is a 400. Quick actions in it run as
    the user who saves it, as GitLab runs them, and are not stored."""
    project, mr = gl._mr(call)
    if call.user != mr.author and project.members[call.user.id] < DEVELOPER:
        raise refuse(403)
    description = call.params.get("description")
    if description is not None:
        if not isinstance(description, str):
            raise refuse(400, error="description is invalid")
        if len(description) > MAX_DESCRIPTION:
            raise refuse(400, f"description is too long (maximum is {MAX_DESCRIPTION} characters)")
        # GitLab runs the quick actions of a description it saves, as the user who saves it, and stores the rest.
        mr.description = gl._run_quick_actions(mr, call.user, description)[0]
    return 200, gl._mr_json(mr)


def _get_versions(gl: GitLabState, call: Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    return 200, [{"id": v.id, "head_commit_sha": v.head_sha, "base_commit_sha": v.base_sha,
                  "start_commit_sha": v.start_sha, "created_at": v.created_at, "merge_request_id": mr.id,
                  "state": "collected", "real_size": str(len(v.files))} for v in mr.versions]  # fmt: skip


def _get_diffs(gl: GitLabState, call: Call) -> Answer:
    return gl._page(call, [f.json() for f in gl._mr(call)[1].versions[0].files])


def _get_changes(gl: GitLabState, call: Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    return 200, {**gl._mr_json(mr), "changes": [f.json() for f in mr.versions[0].files], "overflow": False}


def _get_notes(gl: GitLabState, call: Call) -> Answer:
    mr = gl._mr(call)[1]
    notes = [n for d in mr.discussions.values() for n in d.notes]
    key = "updated_at" if call.params.get("order_by") == "updated_at" else "created_at"
    notes.sort(key=lambda n: (getattr(n, key), n.id), reverse=call.params.get("sort", "desc") != "asc")
    return gl._page(call, [gl._note_json(mr, n) for n in notes])


def _body(call: Call) -> str:
    body = call.params.get("body")
    if not isinstance(body, str) or not body:
        raise refuse(400, error="body is missing")
    return body


def _commands_only(commands: list[tuple[str, str]]) -> tuple[int, Any]:
    changes = {command: args or True for command, args in commands}
    return 202, {"commands_changes": changes, "summary": [f"Ran /{c}." for c, _ in commands]}


def _post_note(gl: GitLabState, call: Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    text, commands = gl._run_quick_actions(mr, call.user, _body(call))
    if commands and not text:
        return _commands_only(commands)
    return 201, gl._note_json(mr, gl._new_discussion(mr, call.user, text, None, individual=True).notes[0])


def _put_note(gl: GitLabState, call: Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    note = mr.note(int(call.args["note_id"]))
    if note is None or note.system:
        raise refuse(404, "404 Note Not Found")
    if note.author != call.user:
        raise refuse(403)
    text, commands = gl._run_quick_actions(mr, call.user, _body(call))
    if commands and not text:  # GitLab deletes a note edited down to commands only
        mr.discussions[note.discussion_id].notes.remove(note)
        if not mr.discussions[note.discussion_id].notes:
            del mr.discussions[note.discussion_id]
        return _commands_only(commands)
    note.body, note.updated_at = text, gl._now()
    return 200, gl._note_json(mr, note)


def _get_discussions(gl: GitLabState, call: Call) -> Answer:
    mr = gl._mr(call)[1]
    return gl._page(call, [gl._discussion_json(mr, d) for d in mr.discussions.values()])


def _post_discussion(gl: GitLabState, call: Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    body = _body(call)
    # Only a JSON body carries a nested position; form fields like position[new_line] are dropped.
    position = _check_position(mr, call.params.get("position")) if call.json_body else None
    text, commands = gl._run_quick_actions(mr, call.user, body)
    if commands and not text:
        return _commands_only(commands)
    return 201, gl._discussion_json(mr, gl._new_discussion(mr, call.user, text, position, individual=False))


def _put_discussion(gl: GitLabState, call: Call) -> tuple[int, Any]:
    project, mr = gl._mr(call)
    discussion = mr.discussions.get(call.args["discussion_id"])
    if discussion is None:
        raise refuse(404, "404 Discussion Not Found")
    resolved = str(call.params.get("resolved", "")).lower()
    if resolved not in ("true", "false"):
        raise refuse(400, error="resolved is missing")
    if not discussion.resolvable or (project.members[call.user.id] < DEVELOPER and call.user != mr.author):
        raise refuse(403)
    if resolved == "true":
        discussion.resolved_by, discussion.resolved_at = call.user, gl._now()
    else:
        discussion.resolved_by = discussion.resolved_at = None
    return 200, gl._discussion_json(mr, discussion)


def _post_reply(gl: GitLabState, call: Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    discussion = mr.discussions.get(call.args["discussion_id"])
    if discussion is None:
        raise refuse(404, "404 Discussion Not Found")
    text, commands = gl._run_quick_actions(mr, call.user, _body(call))
    if commands and not text:
        return _commands_only(commands)
    return 201, gl._note_json(mr, gl._reply(mr, discussion, call.user, text))


def _approvals_json(gl: GitLabState, mr: MergeRequest, user: FakeUser) -> dict[str, Any]:
    return {"id": mr.id, "iid": mr.iid, "project_id": mr.project_id, "title": mr.title, "state": mr.state,
            "approved": bool(mr.approved_by), "approvals_required": 0, "approvals_left": 0,
            "approved_by": [{"user": u.json()} for u in mr.approved_by],
            "user_has_approved": user in mr.approved_by, "has_approval_rules": False,
            "user_can_approve": user != mr.author and user not in mr.approved_by}  # fmt: skip


def _approve(gl: GitLabState, call: Call) -> tuple[int, Any]:
    project, mr = gl._mr(call)
    head = mr.versions[0].head_sha
    sha = call.params.get("sha")
    if sha and sha != head:
        raise refuse(409, f"SHA does not match HEAD of source branch: {head}")
    if call.user == mr.author or call.user in mr.approved_by or project.members[call.user.id] < DEVELOPER:
        raise refuse(401)
    mr.approved_by.append(call.user)
    gl._system_note(mr, "approved this merge request", call.user)
    return 201, _approvals_json(gl, mr, call.user)


def _unapprove(gl: GitLabState, call: Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    if call.user not in mr.approved_by:
        raise refuse(404, "404 Not found")
    mr.approved_by.remove(call.user)
    gl._system_note(mr, "unapproved this merge request", call.user)
    return 201, _approvals_json(gl, mr, call.user)


def _get_approvals(gl: GitLabState, call: Call) -> tuple[int, Any]:
    return 200, _approvals_json(gl, gl._mr(call)[1], call.user)


def _get_approval_state(gl: GitLabState, call: Call) -> tuple[int, Any]:
    mr = gl._mr(call)[1]
    rule = {"id": 1, "name": "All Members", "rule_type": "any_approver", "approvals_required": 0,
            "approved": bool(mr.approved_by), "approved_by": [u.json() for u in mr.approved_by]}  # fmt: skip
    return 200, {"approval_rules_overwritten": False, "rules": [rule]}


def _commit_tree(gl: GitLabState, call: Call, not_found: str) -> dict[str, str]:
    project = gl._project(call)
    ref = call.params.get("ref")
    if not ref:
        raise refuse(400, error="ref is missing")
    tree = project.commits.get(str(ref))
    if tree is None:
        raise refuse(404, not_found)
    return tree


def _get_file_raw(gl: GitLabState, call: Call) -> Answer:
    tree = _commit_tree(gl, call, "404 Commit Not Found")
    text = tree.get(unquote(call.args["file_path"]))
    if text is None:
        raise refuse(404, "404 File Not Found")
    return 200, text, {}


def _get_tree(gl: GitLabState, call: Call) -> Answer:
    tree = _commit_tree(gl, call, "404 Tree Not Found")
    directory = str(call.params.get("path") or "").strip("/")
    prefix = f"{directory}/" if directory else ""
    entries: dict[str, dict[str, Any]] = {}
    for path in sorted(tree):
        if not path.startswith(prefix):
            continue
        name, _, rest = path[len(prefix) :].partition("/")
        kind = "tree" if rest else "blob"
        entries.setdefault(name, {"id": fake_sha(f"{kind}-{prefix}{name}"), "name": name, "type": kind,
                                  "path": prefix + name, "mode": "040000" if rest else "100644"})  # fmt: skip
    if directory and not entries:
        raise refuse(404, "404 Tree Not Found")
    return gl._page(call, list(entries.values()))


def _get_compare(gl: GitLabState, call: Call) -> tuple[int, Any]:
    project = gl._project(call)
    old_sha, new_sha = str(call.params.get("from") or ""), str(call.params.get("to") or "")
    old, new = project.commits.get(old_sha), project.commits.get(new_sha)
    if old is None or new is None:
        raise refuse(404, "404 Ref Not Found")
    diffs = []
    for path in sorted(set(old) | set(new)):
        if old.get(path) != new.get(path):
            lines = difflib.unified_diff((old.get(path) or "").splitlines(), (new.get(path) or "").splitlines(),
                                         lineterm="", n=3)  # fmt: skip
            diffs.append({"old_path": path, "new_path": path, "a_mode": "100644", "b_mode": "100644",
                          "new_file": path not in old, "deleted_file": path not in new, "renamed_file": False,
                          "diff": "\n".join(list(lines)[2:]) + "\n"})  # fmt: skip
    commit = {"id": new_sha, "short_id": new_sha[:8], "title": "a commit"}
    return 200, {"commit": commit, "commits": [commit] if diffs else [], "diffs": diffs, "compare_timeout": False,
                 "compare_same_ref": old_sha == new_sha}  # fmt: skip


_MR = r"/projects/(?P<project>[^/]+)/merge_requests/(?P<iid>\d+)"
_DISCUSSION = _MR + r"/discussions/(?P<discussion_id>[0-9a-f]+)"
ROUTES: list[tuple[str, re.Pattern[str], Endpoint]] = [
    (method, re.compile(pattern), handler)
    for method, pattern, handler in (
        ("GET", "/user", _get_user),
        ("GET", r"/projects/(?P<project>[^/]+)", _get_project),
        ("GET", r"/projects/(?P<project>[^/]+)/members/all/(?P<user_id>\d+)", _get_member),
        ("GET", r"/projects/(?P<project>[^/]+)/repository/files/(?P<file_path>[^/]+)/raw", _get_file_raw),
        ("GET", r"/projects/(?P<project>[^/]+)/repository/tree", _get_tree),
        ("GET", r"/projects/(?P<project>[^/]+)/repository/compare", _get_compare),
        ("POST", r"/projects/(?P<project>[^/]+)/repository/branches", post_branch),
        ("POST", r"/projects/(?P<project>[^/]+)/repository/commits", post_commit),
        ("POST", r"/projects/(?P<project>[^/]+)/merge_requests", post_merge_request),
        ("GET", r"/projects/(?P<project>[^/]+)/issues/(?P<iid>\d+)", _get_issue),
        ("GET", _MR, _get_mr),
        ("PUT", _MR, _put_mr),
        ("GET", _MR + "/versions", _get_versions),
        ("GET", _MR + "/diffs", _get_diffs),
        ("GET", _MR + "/changes", _get_changes),
        ("GET", _MR + "/notes", _get_notes),
        ("POST", _MR + "/notes", _post_note),
        ("PUT", _MR + r"/notes/(?P<note_id>\d+)", _put_note),
        ("GET", _MR + "/discussions", _get_discussions),
        ("POST", _MR + "/discussions", _post_discussion),
        ("PUT", _DISCUSSION, _put_discussion),
        ("POST", _DISCUSSION + "/notes", _post_reply),
        ("POST", _MR + "/approve", _approve),
        ("POST", _MR + "/unapprove", _unapprove),
        ("GET", _MR + "/approvals", _get_approvals),
        ("GET", _MR + "/approval_state", _get_approval_state),
    )
]


# -- positions, diffs and quick actions ----------------------------------------------------------
def _check_position(mr: MergeRequest, position: Any) -> dict[str, Any] | None:
    """The position GitLab would store, or the 400 it would answer."""
    if position is None:
        return None
    if not isinstance(position, dict):
        raise refuse(400, error="position is invalid")
    for key in ("base_sha", "start_sha", "head_sha", "position_type"):
        if not position.get(key):
            raise refuse(400, error=f"position[{key}] is missing")
    if position["position_type"] != "text":
        raise refuse(400, error="position[position_type] does not have a valid value")
    version = mr.versions[0]
    paths = {position.get("new_path"), position.get("old_path")} - {None}
    diff_file = next((f for f in version.files if f.new_path in paths or f.old_path in paths), None)
    old_line, new_line = opt_int(position.get("old_line")), opt_int(position.get("new_line"))
    if (
        any(position[k] != v for k, v in version.refs().items())
        or diff_file is None
        or (old_line, new_line) not in diff_file.lines
    ):
        raise refuse(400, LINE_CODE_ERROR)
    stored = {k: position.get(k) for k in ("base_sha", "start_sha", "head_sha", "old_path", "new_path")}
    stored.update(position_type="text", old_line=old_line, new_line=new_line)
    line_range = position.get("line_range")
    if line_range is not None:
        end_code = diff_file.lines[(old_line, new_line)]
        try:
            start, end = line_range["start"]["line_code"], line_range["end"]["line_code"]
            types = {line_range["start"].get("type"), line_range["end"].get("type")}
        except (KeyError, TypeError):
            raise refuse(400, error="position[line_range] is invalid") from None
        order = diff_file.order
        if end != end_code or start not in order or order[start] > order[end] or not types <= {"new", "old", None}:
            raise refuse(400, '400 Bad request - Note {:line_range=>["must be a valid line range"]}')
        stored["line_range"] = line_range
    return stored
