"""A fake GitHub on loopback: the REST endpoints and GraphQL operations codejury uses, with state.

``FakeGitHub`` is the server (see ``codejury_fakes.github.server`` for what it models);
``records`` holds its state's records, ``state`` the world and how it changes, ``rest`` and
``graphql`` the handlers.
"""

from codejury_fakes.github.records import (
    ACTIONS_LOGIN,
    ACTIONS_MAY_NOT_APPROVE,
    DEFAULT_ACTIONS_PERMISSIONS,
    MAX_ANNOTATIONS,
    NOT_ACCESSIBLE,
    OFF_DIFF,
    CheckRun,
    IssueComment,
    Permission,
    Pull,
    PullFile,
    RecordedRequest,
    Repo,
    Review,
    ReviewComment,
    Side,
    Thread,
    Token,
    TokenKind,
    User,
)
from codejury_fakes.github.server import FakeGitHub

__all__ = [
    "ACTIONS_LOGIN",
    "ACTIONS_MAY_NOT_APPROVE",
    "DEFAULT_ACTIONS_PERMISSIONS",
    "MAX_ANNOTATIONS",
    "NOT_ACCESSIBLE",
    "OFF_DIFF",
    "CheckRun",
    "FakeGitHub",
    "IssueComment",
    "Permission",
    "Pull",
    "PullFile",
    "RecordedRequest",
    "Repo",
    "Review",
    "ReviewComment",
    "Side",
    "Thread",
    "Token",
    "TokenKind",
    "User",
]
