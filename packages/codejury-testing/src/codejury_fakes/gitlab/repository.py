"""The fake GitLab's branch, commit and merge-request creation endpoints (what ``codejury learn --propose`` calls).

Each refuses what GitLab refuses: below Developer a 403; a branch that exists already (``POST .../branches``, or a
commit naming a ``start_branch`` for a branch that exists) a 400; a commit to a missing branch without
``start_branch``, an action on a path that is not there (``update``) or already is (``create``) a 400; a merge
request whose source branch has an open one already a 409, from a branch to itself or from a branch that does not
exist a 422 (or 404). The default branch is ``main``, whose tree is empty until ``set_branch`` gives it files.
"""

from __future__ import annotations

from typing import Any

from codejury_fakes.gitlab.records import DEVELOPER, Call, FileSpec, MergeRequest, Project, fake_sha, refuse
from codejury_fakes.gitlab.state import GitLabState

DEFAULT_BRANCH = "main"


def branch_head(gl: GitLabState, project: Project, name: str) -> str | None:
    """The head commit of branch ``name`` (``main`` exists from the start, with an empty tree)."""
    if name == DEFAULT_BRANCH and name not in project.branches:
        sha = fake_sha(f"main-{project.id}")
        project.commits.setdefault(sha, {})
        project.branches[name] = sha
    return project.branches.get(name)


def _text(call: Call, key: str) -> str:
    value = call.params.get(key)
    return value if isinstance(value, str) else ""


def post_branch(gl: GitLabState, call: Call) -> tuple[int, Any]:
    project = gl._project(call, DEVELOPER)
    name, ref = _text(call, "branch"), _text(call, "ref")
    if not name:
        raise refuse(400, error="branch is missing")
    if not ref:
        raise refuse(400, error="ref is missing")
    if branch_head(gl, project, name) is not None:
        raise refuse(400, "Branch already exists")
    sha = branch_head(gl, project, ref) or (ref if ref in project.commits else None)
    if sha is None:
        raise refuse(400, "Invalid reference name: " + ref)
    project.branches[name] = sha
    return 201, {"name": name, "commit": {"id": sha, "short_id": sha[:8]}, "merged": False, "protected": False}


def post_commit(gl: GitLabState, call: Call) -> tuple[int, Any]:
    project = gl._project(call, DEVELOPER)
    branch, start = _text(call, "branch"), _text(call, "start_branch")
    message, actions = _text(call, "commit_message"), call.params.get("actions")
    if not branch or not message or not isinstance(actions, list) or not actions:
        raise refuse(400, error="branch, commit_message, actions are missing")
    head = branch_head(gl, project, branch)
    if head is not None and start and start != branch:
        raise refuse(400, f"A branch called '{branch}' already exists. Switch to that branch in order to make changes")
    if head is None:
        head = branch_head(gl, project, start) if start else None
        if head is None:
            raise refuse(400, "You can only create or edit files when you are on a branch")
    tree = dict(project.commits[head])
    for action in actions:
        kind = action.get("action") if isinstance(action, dict) else None
        path = action.get("file_path") if isinstance(action, dict) else None
        content = action.get("content", "") if isinstance(action, dict) else ""
        if kind not in ("create", "update") or not isinstance(path, str) or not isinstance(content, str):
            raise refuse(400, error="actions[action] does not have a valid value")
        if kind == "create" and path in tree:
            raise refuse(400, "A file with this name already exists")
        if kind == "update" and path not in tree:
            raise refuse(400, "A file with this name doesn't exist")
        tree[path] = content
    sha = fake_sha(f"commit-{project.id}-{gl._next_id()}")
    project.commits[sha] = tree
    project.branches[branch] = sha
    return 201, {"id": sha, "short_id": sha[:8], "title": message.splitlines()[0], "message": message}


def post_merge_request(gl: GitLabState, call: Call) -> tuple[int, Any]:
    project = gl._project(call, DEVELOPER)
    source, target, title = _text(call, "source_branch"), _text(call, "target_branch"), _text(call, "title")
    if not source or not target or not title:
        raise refuse(400, error="source_branch, target_branch, title are missing")
    if source == target:
        raise refuse(422, "You can't use same project/branch for source and target")
    head, base = branch_head(gl, project, source), branch_head(gl, project, target)
    if head is None or base is None:
        raise refuse(404, "404 Branch Not Found")
    taken = next((m for m in project.mrs.values() if m.source_branch == source and m.state == "opened"), None)
    if taken is not None:
        raise refuse(409, f"Another open merge request already exists for this source branch: !{taken.iid}")
    old, new = project.commits[base], project.commits[head]
    files: FileSpec = {p: (old.get(p), new.get(p)) for p in sorted(set(old) | set(new)) if old.get(p) != new.get(p)}
    iid = max(project.mrs, default=0) + 1
    version = gl._version(base, head, files, None)
    mr = MergeRequest(gl._next_id(), iid, project.id, title, _text(call, "description"), call.user, source, target,
                      gl._now(), [version])  # fmt: skip
    project.mrs[iid] = mr
    return 201, gl._mr_json(mr)


def set_branch(gl: GitLabState, project_id: int, name: str, files: dict[str, str]) -> str:
    """Branch ``name`` of project ``project_id`` at a new commit whose tree is ``files``; returns its sha."""
    with gl._lock:
        project = gl._projects[project_id]
        sha = fake_sha(f"set-{project_id}-{name}-{gl._next_id()}")
        project.commits[sha] = dict(files)
        project.branches[name] = sha
        return sha


def branch_files(gl: GitLabState, project_id: int, name: str) -> dict[str, str] | None:
    """The tree of branch ``name`` ({path: text}), or None when there is no such branch."""
    with gl._lock:
        project = gl._projects[project_id]
        head = branch_head(gl, project, name)
        return None if head is None else dict(project.commits[head])


def opened_merge_requests(gl: GitLabState, project_id: int) -> list[dict[str, Any]]:
    """The project's open merge requests, as the API shows them."""
    with gl._lock:
        return [gl._mr_json(m) for m in gl._projects[project_id].mrs.values() if m.state == "opened"]
