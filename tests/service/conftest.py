"""The service's tests: a fake GitLab with one merge request (PostgreSQL: the session's server, tests/conftest.py)."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest
from codejury_fakes.gitlab import FakeGitLab

from codejury.forges.gitlab import adapter as gitlab_mod
from codejury.forges.gitlab.api import GitLabAPI
from tests.service.helpers import NEW, OLD


@pytest.fixture
def gl(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitLab]:
    """A fake GitLab serving merge request !7 of project 1 (``OLD`` → ``NEW`` in app.py)."""
    monkeypatch.setattr(gitlab_mod, "GitLabAPI", functools.partial(GitLabAPI, backoff_s=0.001))
    with FakeGitLab() as server:
        server.add_mr(1, 7, files={"app.py": (OLD, NEW)}, description="Adds things.")
        yield server
