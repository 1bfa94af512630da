"""Git's smart HTTP protocol for the fake forges: a repository a test gives, fetched as from the forge.

``GitRepos`` keeps a bare copy of each repository a test registers (``FakeGitLab.serve_git``,
``FakeGitHub.serve_git``) and answers ``GET …/REPO.git/info/refs?service=git-upload-pack`` and
``POST …/REPO.git/git-upload-pack`` with git's own ``http-backend``, so a real ``git fetch``
talks to it. Like the forges it refuses what they refuse: no credentials or an unknown token is
401 with a Basic challenge (the token goes as the password of HTTP Basic: GitLab takes any user
name, GitHub ``x-access-token``), pushes are 403, an unknown repository 404. A commit is
fetched by its id only when a ref reaches it (``uploadpack.allowReachableSHA1InWant``, as the
forges allow). Every request is recorded with the user it authenticated as.
"""

from __future__ import annotations

import base64
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

GIT_PATH = re.compile(r"^/(?P<repo>[^?]+?)\.git/(?P<rest>info/refs|git-upload-pack|git-receive-pack)$")
Answer = tuple[int, dict[str, str], bytes]


@dataclass(frozen=True)
class GitRequest:
    """One request to a repository's git endpoint: who it authenticated as (None: refused)."""

    method: str
    repo: str
    service: str
    user: str | None
    status: int


class GitRepos:
    """Bare copies of the repositories a fake forge serves over git's smart HTTP protocol."""

    def __init__(self, user_for: Callable[[str, str, str], str | None]) -> None:
        """``user_for(repo, basic_user, password)`` names the user a token reads ``repo`` as, or None."""
        self._user_for = user_for
        self._tmp = tempfile.TemporaryDirectory(prefix="codejury-fake-git-")
        self._repos: dict[str, Path] = {}
        self._lock = threading.Lock()
        self.requests: list[GitRequest] = []

    def add(self, name: str, source: Path) -> None:
        """Serve ``source`` (a repository on disk, bare or not) as ``name`` (``acme/widgets``), as it is now."""
        dest = Path(self._tmp.name) / f"{name}.git"
        subprocess.run(["git", "clone", "--quiet", "--bare", "--no-local", str(source), str(dest)], check=True,
                       capture_output=True)  # fmt: skip
        subprocess.run(["git", "-C", str(dest), "config", "uploadpack.allowReachableSHA1InWant", "true"], check=True)
        subprocess.run(["git", "-C", str(dest), "config", "http.uploadpack", "true"], check=True)
        with self._lock:
            self._repos[name] = dest

    def close(self) -> None:
        self._tmp.cleanup()

    def serve(self, method: str, path: str, query: str, headers: dict[str, str], body: bytes) -> Answer | None:
        """The answer to a git request (``path`` without its query), or None when ``path`` is not one."""
        match = GIT_PATH.match(path)
        if match is None:
            return None
        name, rest = match["repo"].strip("/"), match["rest"]
        service = "git-receive-pack" if "receive-pack" in rest or "receive-pack" in query else "git-upload-pack"
        with self._lock:
            known = name in self._repos
        user = _basic_user(headers.get("authorization", ""), lambda u, p: self._user_for(name, u, p))
        status: int
        if not known:
            answer: Answer = (404, {"Content-Type": "text/plain"}, b"Repository not found.\n")
        elif user is None:
            answer = (401, {"WWW-Authenticate": 'Basic realm="fake forge"', "Content-Type": "text/plain"}, b"")
        elif service == "git-receive-pack":
            answer = (403, {"Content-Type": "text/plain"}, b"You are not allowed to push code to this project.\n")
        else:
            answer = self._backend(method, name, rest, query, headers, body)
        status = answer[0]
        with self._lock:
            self.requests.append(GitRequest(method, name, service, user, status))
        return answer

    def _backend(self, method: str, name: str, rest: str, query: str, headers: dict[str, str], body: bytes) -> Answer:
        env = {
            "GIT_PROJECT_ROOT": self._tmp.name,
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": f"/{name}.git/{rest}",
            "REQUEST_METHOD": method,
            "QUERY_STRING": query,
            "CONTENT_TYPE": headers.get("content-type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": headers.get("content-encoding", ""),
            "HTTP_GIT_PROTOCOL": headers.get("git-protocol", ""),
            "REMOTE_ADDR": "127.0.0.1",
            "PATH": "/usr/bin:/bin:/usr/local/bin",
        }
        done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = done.stdout.partition(b"\n\n")
        out: dict[str, str] = {}
        status = 200
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                out[key.strip()] = value.strip()
        return status, out, payload


def _basic_user(header: str, check: Callable[[str, str], str | None]) -> str | None:
    """The user an ``Authorization: Basic`` header's token authenticates, or None."""
    if not header.lower().startswith("basic "):
        return None
    try:
        user, _, password = base64.b64decode(header[6:].strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return check(user, password)
