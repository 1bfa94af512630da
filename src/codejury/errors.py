"""The one exception root of codejury.

Every error a user can cause or meet is a ``CodejuryError``; the CLI prints its message as
one line and exits non-zero (2 unless its class says otherwise). Third-party errors are
translated at the boundary with ``raise ... from exc``. Anything else that escapes a command is
a bug: the CLI reports it in one line as an internal error and exits 5.

    CodejuryError
    ├── InputError              bad input from the user: a flag, a ref, a path
    │   ├── DiffParseError      the unified diff cannot be parsed
    │   └── SourceError         git or the diff source failed (not a repository, unknown ref)
    ├── ConfigError             invalid configuration, or a plugin's configure step failed
    │   └── RoutingError        the remote routing document is unusable (a warning: never fatal)
    ├── ModelSetupError         a model string cannot be turned into a usable model
    │   └── EmbeddedModelError  the embedded model is missing, incomplete or corrupted
    ├── OutputError             the review or its event log could not be written where asked
    ├── ReviewFailed            no reviewer succeeded: there is no review to publish
    └── PublishError            a review could not be published to the forge
"""

from __future__ import annotations


class CodejuryError(Exception):
    """Root of every error codejury raises on purpose."""


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
    """No reviewer succeeded, so there is no review to publish."""


class PublishError(CodejuryError):
    """A review could not be published to the forge."""
