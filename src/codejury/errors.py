"""The one exception root of codejury.

Every error a user can cause or meet is a ``CodejuryError``; the CLI prints its message as
one line and exits non-zero. Third-party errors are translated at the boundary with
``raise ... from exc``.

    CodejuryError
    ├── InputError              bad input from the user: a flag, a ref, a path
    │   ├── DiffParseError      the unified diff cannot be parsed
    │   └── SourceError         git or the diff source failed (not a repository, unknown ref)
    ├── ConfigError             invalid configuration, or a plugin's configure step failed
    ├── ModelSetupError         a model string cannot be turned into a usable model
    │   └── EmbeddedModelError  the embedded model is missing, incomplete or corrupted
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


class ModelSetupError(CodejuryError):
    """A model string cannot be turned into a usable model."""


class EmbeddedModelError(ModelSetupError):
    """The embedded model is missing, incomplete or corrupted."""


class ReviewFailed(CodejuryError):
    """No reviewer succeeded, so there is no review to publish."""


class PublishError(CodejuryError):
    """A review could not be published to the forge."""
