"""codejury: a CI-native panel of AI code reviewers that returns one review with a verdict."""

__version__ = "0.1.0"
