"""What one run knows of a merge request, shared by its reader (``gitlab.reader``) and its publisher
(``gitlab.publisher``): the client, who the token is, the merge request and its diff version, the changed
files and the bot's previous review."""

from __future__ import annotations

from urllib.parse import quote

from codejury.change.types import FileChange
from codejury.forges.adapter import ForgeAdapter
from codejury.forges.gitlab.api import GitLabAPI
from codejury.forges.gitlab.target import GitLabTarget
from codejury.forges.gitlab.types import DiffRefs, GitLabUser, MergeRequest
from codejury.forges.plan import PreviousState

CONCURRENCY = 4
"""GitLab requests in flight at once (base files read ahead, inline threads posted)."""


class MergeRequestState(ForgeAdapter[GitLabTarget, GitLabAPI]):
    """The bot on one merge request, as far as reading and publishing share it; use ``async with`` (it asks
    GitLab who the token is first)."""

    forge_name = "gitlab"
    noun = "merge request"

    def _start(self) -> None:
        self.mr: MergeRequest | None = None
        self.refs: DiffRefs | None = None
        """The diff version the inline comments are anchored on."""
        self.files: dict[str, FileChange] = {}
        self.previous = PreviousState()
        self._me: GitLabUser | None = None

    async def _identify(self) -> None:
        self._me = await self.api.current_user()

    @property
    def me(self) -> GitLabUser:
        if self._me is None:
            raise RuntimeError("use GitLabMergeRequest with async with")
        return self._me

    @property
    def head_sha(self) -> str:
        return self.refs.head_sha if self.refs else ""

    @property
    def web_url(self) -> str:
        return self.mr.web_url if self.mr else ""

    def line_url(self, path: str, start: int, end: int) -> str | None:
        if self.mr is None or "/-/merge_requests/" not in self.mr.web_url:
            return None
        project = self.mr.web_url.split("/-/merge_requests/", 1)[0]
        lines = f"L{start}" if end <= start else f"L{start}-{end}"
        return f"{project}/-/blob/{self.head_sha}/{quote(path)}#{lines}"
