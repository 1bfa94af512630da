"""A fake GitLab (REST v4) on loopback that keeps state and refuses what GitLab refuses.

``FakeGitLab`` is the server (see ``codejury_fakes.gitlab.server`` for what it models);
``records`` holds its state's records, ``state`` the world and how it changes, ``routes``
the endpoints.
"""

from codejury_fakes.gitlab.records import (
    DEVELOPER,
    GUEST,
    MAINTAINER,
    REPORTER,
    FakeUser,
    FileSpec,
    QuickAction,
    RecordedRequest,
    gitlab_line_code,
)
from codejury_fakes.gitlab.server import FakeGitLab

__all__ = [
    "DEVELOPER",
    "GUEST",
    "MAINTAINER",
    "REPORTER",
    "FakeGitLab",
    "FakeUser",
    "FileSpec",
    "QuickAction",
    "RecordedRequest",
    "gitlab_line_code",
]
