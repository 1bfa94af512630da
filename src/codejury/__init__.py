"""codejury: a CI-native panel of AI code reviewers that returns one review with a verdict."""

__version__ = "0.1.0"
"""The one version source: the package's metadata (pyproject.toml reads it), the release tags (``v0.1.0`` on
GitHub, ``0.1.0`` on GitLab), the image tags and the documented install lines follow it (docs/releasing.md)."""
