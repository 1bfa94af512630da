"""Evaluation cases: JSONL, one pull request with its expected review comments per line.

The shape is the one of AACR-Bench derived sets (``id``, ``language``, ``repo``, ``base``,
``head``, ``expected``, ``known_false_positives``); instead of a repository a case may give a
unified ``diff`` file, or a ``tree`` directory with ``base/`` and ``head/`` file trees (the
bundled golden set). Relative paths resolve against the dataset file. A malformed line is
a one-line error naming its line number, and no case is run.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from codejury.errors import InputError

MAX_DATASET_BYTES = 64 * 1024 * 1024


class _Place(BaseModel):
    """New-side lines of a file of the change, with a note."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    path: str = Field(min_length=1)
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    note: str = ""


class ExpectedComment(_Place):
    """A review comment an engineer wrote on the change (new-side lines)."""

    category: str = "uncategorised"
    context: str | None = None

    @model_validator(mode="after")
    def _ordered(self) -> ExpectedComment:
        if self.end_line < self.start_line:
            raise ValueError(f"end_line {self.end_line} is before start_line {self.start_line}")
        return self


class KnownFalsePositive(_Place):
    """A place where a finding is known to be wrong."""


class EvalCase(BaseModel):
    """One pull request to review and score."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(min_length=1)
    language: str = "unknown"
    source: str | None = None
    repo: str | None = None
    """A git bundle, a local repository directory, or a git URL."""
    base: str | None = None
    head: str | None = None
    diff: str | None = None
    """A unified diff file, for cases without a repository."""
    tree: str | None = None
    """A directory holding ``base/`` and ``head/`` file trees, committed as two branches of a fresh repository."""
    title: str | None = None
    description: str | None = None
    tests: tuple[str, ...] = ()
    """JUnit XML reports of the case's CI run, reviewed with ``--tests``."""
    expected: tuple[ExpectedComment, ...] = ()
    known_false_positives: tuple[KnownFalsePositive, ...] = ()

    @model_validator(mode="after")
    def _has_a_change(self) -> EvalCase:
        given = [k for k in ("repo", "diff", "tree") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a case needs exactly one of 'repo' (with 'base' and 'head'), 'diff' or 'tree'")
        if self.repo is not None and not (self.base and self.head):
            raise ValueError("a case with 'repo' needs 'base' and 'head' refs")
        return self

    @property
    def repo_is_url(self) -> bool:
        repo = self.repo or ""
        return "://" in repo or repo.startswith("git@")


def _resolve(value: str | None, root: Path) -> str | None:
    if value is None or "://" in value or value.startswith("git@"):
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (root / path))


def load_cases(path: Path) -> list[EvalCase]:
    """Every case of the dataset at ``path``, with its paths resolved; a bad line stops everything."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_DATASET_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read dataset {path}: {exc.strerror or exc}") from exc
    if len(raw) > MAX_DATASET_BYTES:
        raise InputError(f"dataset {path} is larger than {MAX_DATASET_BYTES // (1024 * 1024)} MB")
    root = path.resolve().parent
    cases: list[EvalCase] = []
    seen: set[str] = set()
    for lineno, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            data = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise InputError(f"{where}: not valid JSON ({getattr(exc, 'msg', exc)})") from exc
        if not isinstance(data, dict):
            raise InputError(f"{where}: a case must be a JSON object, not {type(data).__name__}")
        try:
            case = EvalCase.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "case"
            raise InputError(f"{where}: {loc}: {first['msg']}") from exc
        if case.id in seen:
            raise InputError(f"{where}: duplicate case id {case.id!r}")
        seen.add(case.id)
        cases.append(
            case.model_copy(
                update={
                    "repo": _resolve(case.repo, root),
                    "diff": _resolve(case.diff, root),
                    "tree": _resolve(case.tree, root),
                    "tests": tuple(str(_resolve(t, root)) for t in case.tests),
                }
            )
        )
    if not cases:
        raise InputError(f"dataset {path} has no cases")
    return cases
