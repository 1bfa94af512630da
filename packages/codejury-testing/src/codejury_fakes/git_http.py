"""Git's smart HTTP protocol for the fake forges: a repository a test gives, fetched as from the forge.

``GitRepos`` keeps a bare copy of each repository a test registers (``FakeGitLab.serve_git``,
``FakeGitHub.serve_git``) and answers ``GET …/REPO.git/info/refs?service=git-upload-pack`` and
``POST …/REPO.git/git-upload-pack`` with git's own ``http-backend``, so a real ``git fetch``
talks to it. Like the forges it refuses what they refuse: no credentials or an unknown token is
401 with a Basic challenge (the token goes as the password of HTTP Basic: GitLab takes any user
name, GitHub ``x-access-token``), pushes are 403, an unknown repository 404. A commit is
fetched by its id only when a ref reaches it (``uploadpack.allowReachableSHA1InWant``, as the
forges allow). Every request is recorded with the user it authenticated as, and the bytes of its
answer that reached the client (``sent``: a client that hangs up stops the answer).

What a network and a forge do to a fetch, on demand: ``rate_bytes_s`` sends answers at that
rate, in small pieces; ``stall`` leaves the pack request of a repository unanswered until the
server stops; ``redirect`` answers a repository's first request with a redirect elsewhere (as a
renamed repository or a proxy may).
"""

from __future__ import annotations

import base64
import dataclasses
import io
import re
import subprocess
import tempfile
import threading
import time
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
    sent: int = 0
    """The bytes of the answer's body written to the client before it ended or the client hung up."""


class GitRepos:
    """Bare copies of the repositories a fake forge serves over git's smart HTTP protocol."""

    def __init__(self, user_for: Callable[[str, str, str], str | None]) -> None:
        """``user_for(repo, basic_user, password)`` names the user a token reads ``repo`` as, or None."""
        self._user_for = user_for
        self._tmp = tempfile.TemporaryDirectory(prefix="codejury-fake-git-")
        self._repos: dict[str, Path] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[GitRequest] = []
        self.rate_bytes_s: float | None = None
        """Send answers at this many bytes a second (None: at once)."""
        self.stalled: set[str] = set()
        """Repositories whose pack requests are never answered (``stall``)."""
        self.redirects: dict[str, str] = {}
        """Repositories whose first request is answered with a redirect to this URL (``redirect``)."""

    def stall(self, name: str) -> None:
        """Leave every pack request of ``name`` unanswered until the server stops."""
        with self._lock:
            self.stalled.add(name)

    def redirect(self, name: str, location: str) -> None:
        """Answer ``name``'s ref advertisement with ``302 Found`` to ``location``."""
        with self._lock:
            self.redirects[name] = location

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
        self._stopping.set()
        self._tmp.cleanup()

    def respond(
        self, out: io.BufferedIOBase, send_head: Callable[[int, dict[str, str]], None], method: str, path: str,
        query: str, headers: dict[str, str], body: bytes,
    ) -> bool:  # fmt: skip
        """Answer a git request through ``send_head`` (status, headers) and ``out`` (the body); False when ``path``
        is not one. The body goes at ``rate_bytes_s``; what reached the client is recorded as ``sent``."""
        match = GIT_PATH.match(path)
        name, rest = (match["repo"].strip("/"), match["rest"]) if match else ("", "")
        with self._lock:
            location = self.redirects.get(name) if rest == "info/refs" else None
            stalled = rest == "git-upload-pack" and name in self.stalled
        index: int | None = None
        if location is not None:
            answer: Answer = (302, {"Location": location, "Content-Type": "text/plain"}, b"")
            self._record(GitRequest(method, name, "git-upload-pack", None, 302))
        elif stalled:
            self._record(GitRequest(method, name, "git-upload-pack", None, 0))
            self._stopping.wait(120)
            return True
        else:
            found = self._serve(method, path, query, headers, body)
            if found is None:
                return False
            answer, index = found
        status, head, payload = answer
        send_head(status, {**head, "Content-Length": str(len(payload))})
        sent = 0
        step = 16 * 1024 if self.rate_bytes_s else max(1, len(payload))
        try:
            while sent < len(payload):
                piece = payload[sent : sent + step]
                out.write(piece)
                out.flush()
                sent += len(piece)
                if self.rate_bytes_s:
                    time.sleep(len(piece) / self.rate_bytes_s)
        except OSError:
            pass  # the client hung up
        if index is not None:
            with self._lock:
                self.requests[index] = dataclasses.replace(self.requests[index], sent=sent)
        return True

    def _record(self, request: GitRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def serve(self, method: str, path: str, query: str, headers: dict[str, str], body: bytes) -> Answer | None:
        """The answer to a git request (``path`` without its query), or None when ``path`` is not one."""
        found = self._serve(method, path, query, headers, body)
        return None if found is None else found[0]

    def _serve(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> tuple[Answer, int] | None:
        """The answer and the index of its record in ``requests``."""
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
            return answer, len(self.requests) - 1

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
