"""What one review is asked to do (``ReviewFlags``), in a module of its own: ``codejury review`` checks its
flags before it imports the composition root and the model layer (a second of start-up), so a bad flag is
answered at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ReviewFlags:
    """What one review is asked to do: the flags of ``codejury review``, however the caller got them."""

    working_tree: bool = False
    base_ref: str | None = None
    head_ref: str | None = None
    diff_file: str | None = None
    repo_dir: Path | None = None
    fmt: str | None = None
    output: Path | None = None
    events_file: Path | None = None
    fail_on: str | None = None
    break_glass: bool = False
    dry_run: bool = False
    model: str | None = None
    model_for: tuple[str, ...] = ()
    reflection: bool | None = None
    exclude: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    """JUnit XML reports the CI job produced (``--tests``): failing tests named, backing findings, in context."""
    baseline: str | None = None
    config_file: Path | None = None
    remote_config: str | None = None
    plugins: tuple[str, ...] = ()
    source: str | None = None
    url: str | None = None
    publish: bool = False
    max_inline: int = 20
    skip_reviewed_head: bool = False
    """With ``publish``: when the bot's summary already records a review of this head commit, stop
    before any model is called (``HeadAlreadyReviewed``); a push the service queued while the same
    head was being reviewed."""
    max_cost: float | None = None
    metrics_push: str | None = None
    metrics_textfile: Path | None = None
