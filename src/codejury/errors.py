"""The one exception root of codejury, and the whole tree drawn in one place.

Every error a user can cause or meet is a ``CodejuryError``; the CLI prints its message as
one line and exits 2, unless its class says otherwise (``ReviewFailed`` 3, ``ForgeUnavailable``
4, ``InternalError`` 5). Third-party errors are translated at the boundary with
``raise ... from exc``. Anything else that escapes a command is a bug: the CLI reports it in
one line as an internal error and exits 5. The classes live beside the code that raises them
(the module is named on the right); a test checks that every exception class in ``src/``
derives from ``CodejuryError`` and that every public one is drawn here (private control-flow
exceptions, caught where they are raised, derive from the root and are not drawn).

    CodejuryError
    ├── InputError                  bad input from the user: a flag, a ref, a path
    │   ├── DiffParseError          the unified diff cannot be parsed
    │   └── SourceError             git or the diff source failed (not a repository, unknown ref)
    │       └── Unreadable          a file of the head commit cannot be read: missing to the tools,
    │                               named in the review, never fatal (change.head_tree)
    ├── ConfigError                 invalid configuration, or a plugin's configure step failed
    │   └── RoutingError            the remote routing document is unusable (a warning: never fatal)
    ├── ModelSetupError             a model string cannot be turned into a usable model
    │   └── EmbeddedModelError      the embedded model is missing, incomplete or corrupted
    ├── ModelStalled                a streamed attempt went silent (resilience.errors; fails back)
    ├── ChainExhausted              every model of a failback chain failed (resilience.errors)
    ├── CostCeilingReached          the cost ceiling or a kill switch stopped the model calls (models.budget)
    ├── AnalyzerSkipped             an analyzer cannot run here; one line, never fatal (analyzers.base)
    ├── AnalyzerFailed              an analyzer ran and failed; one line, never fatal (analyzers.base)
    ├── OutputError                 the review or its event log could not be written where asked
    ├── StoreError                  the review store cannot be opened, read or written (record.schema)
    │   └── StoreTooNew             the store's schema is newer than this codejury (record.schema)
    ├── EmbeddingsError             the embeddings or rerank server failed; BM25 answers (repocontext.embeddings)
    ├── HeadAlreadyReviewed         a push job's head is already reviewed: nothing to do (session)
    ├── ReviewFailed                no reviewer succeeded: a partial review or a failure note (exit 3)
    ├── ReviewRefused               the kill switch or a daily cap refused codejury describe (exit 6)
    ├── ForgeError                  a forge API call failed (forges.errors)
    │   ├── ForgeAuthError          401/403: the token is invalid or lacks a right
    │   ├── ForgeRefused            any other 4xx: the forge understood and said no
    │   │   └── GitHubRefused       ... with GitHub's own list of reasons (forges.github.api)
    │   └── ForgeUnavailable        429, 5xx or network errors outlasted the retries (exit 4)
    ├── InternalError               a check that must never fail did: a bug in codejury (exit 5)
    │   └── UnsafeBody              a planned forge comment failed the safety check (forges.safety)
    └── TestDoubleError             raised inside codejury.testing's fake servers, never by codejury
        ├── Refusal                 a fake forge handler answers with an error (testing.github/gitlab)
        ├── GraphQLError            the fake GitHub answers a GraphQL error (testing.github.records)
        ├── PostgresUnavailable     no throwaway PostgreSQL server can start here (testing.postgres)
        └── PostgresStartFailed     initdb or pg_ctl failed (testing.postgres)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codejury.findings import Review


class CodejuryError(Exception):
    """Root of every error codejury raises on purpose."""

    exit_code: int = 2
    """The status a command exits with when this error ends it (``cli_io.exit_on_errors``)."""
    lead: str = ""
    """Words before the message on that one line (``review failed``), or none."""


class InputError(CodejuryError):
    """Bad input from the user."""


class DiffParseError(InputError):
    """The unified diff cannot be parsed."""


class SourceError(InputError):
    """The change source (git, a diff file) failed."""


class ConfigError(CodejuryError):
    """Invalid configuration, or a plugin's configure step failed."""


class RoutingError(ConfigError):
    """The remote routing document cannot be fetched or is not what we accept.

    Never fatal: the review goes on with the local configuration and one warning.
    """


class ModelSetupError(CodejuryError):
    """A model string cannot be turned into a usable model."""


class EmbeddedModelError(ModelSetupError):
    """The embedded model is missing, incomplete or corrupted."""


class OutputError(CodejuryError):
    """The review or its event log could not be written where the user asked (-o, --events)."""


class ReviewFailed(CodejuryError):
    """No reviewer succeeded, so there is no full review.

    ``partial`` is the review published instead of the failure note when the analyzers had hits: those
    hits unchecked, unjudged, never an approval; None when only the failure note was published."""

    exit_code = 3
    lead = "review failed"

    def __init__(self, message: str, partial: Review | None = None) -> None:
        super().__init__(message)
        self.partial = partial


class ReviewRefused(CodejuryError):
    """The kill switch or a daily cap refused a model call that is not a review (``codejury describe``)."""

    exit_code = 6
    lead = "refused"


class InternalError(CodejuryError):
    """A check that must never fail did: a bug in codejury (the CLI exits 5, never 2)."""

    exit_code = 5


class TestDoubleError(CodejuryError):
    """Raised inside the fake servers of ``codejury.testing`` (control flow of a fake, never a real run)."""

    __test__ = False  # not a pytest test class, despite its name
