"""The service's tests: the real PostgreSQL server of the store's tests, and a fake GitLab with one merge request."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from codejury.forges.gitlab import adapter as gitlab_mod
from codejury.forges.gitlab.api import GitLabAPI
from codejury.testing.gitlab import FakeGitLab
from tests.record.conftest import PostgresServer, new_pg_database, postgres_server
from tests.service.helpers import NEW, OLD

__all__ = ["PostgresServer", "new_pg_database", "postgres_server"]


@pytest.fixture
def gl(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitLab]:
    """A fake GitLab serving merge request !7 of project 1 (``OLD`` → ``NEW`` in app.py)."""
    monkeypatch.setattr(gitlab_mod, "GitLabAPI", functools.partial(GitLabAPI, backoff_s=0.001))
    with FakeGitLab() as server:
        server.add_mr(1, 7, files={"app.py": (OLD, NEW)}, description="Adds things.")
        yield server
