"""Run an eval: every case reviewed exactly as ``codejury review`` reviews it, then scored.

Each case is checked out in a temporary directory and reviewed in this process by the composition
root (``codejury.session.Session.review``, docs/architecture.md) with the flags ``codejury review --repo
DIR --base BASE --head HEAD`` (or ``--diff FILE``) would get: the same config layering, plugins,
analyzers, repository index and reviewer tools. One ``Session`` serves the whole eval: the plugins
are loaded once and the models resolved once and kept across cases, so the embedded model's server starts once, not once
per case. An exception in one case (a timeout, no reviewer succeeding, a bug) is a failed case
with a one-line error, never a crash of the eval. Results are cached per case and config hash,
so an interrupted eval resumes where it stopped. The naive baseline is the same review with
``--baseline naive``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from codejury import __version__, session
from codejury.errors import CodejuryError, InputError, ReviewFailed
from codejury.eval.checkout import checkout
from codejury.eval.dataset import EvalCase
from codejury.eval.results import CaseRun, FoundFinding
from codejury.secrets import redact_env

CASE_TIMEOUT_S = 3600.0
ERROR_MAX_CHARS = 300
Mode = str  # "panel" or "naive"


@dataclass(frozen=True)
class EvalSettings:
    """How every case is reviewed: the ``codejury review`` flags shared by all cases, and where to cache."""

    config_file: Path | None = None
    """``--config``: an absolute path (the review does not run in the eval's directory)."""
    model: str | None = None
    """``--model``."""
    model_for: tuple[str, ...] = ()
    """``--model-for`` assignments, as given."""
    plugins: tuple[str, ...] = ()
    """``--plugin`` modules."""
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    cache_dir: Path | None = None
    jobs: int = 1
    case_timeout_s: float = CASE_TIMEOUT_S

    @property
    def review_args(self) -> tuple[str, ...]:
        """The same settings as ``codejury review`` flags (they are part of the cache key)."""
        args: list[str] = []
        if self.config_file is not None:
            args += ["--config", str(self.config_file)]
        if self.model is not None:
            args += ["--model", self.model]
        for assignment in self.model_for:
            args += ["--model-for", assignment]
        for plugin in self.plugins:
            args += ["--plugin", plugin]
        return tuple(args)

    @property
    def config_files(self) -> tuple[Path, ...]:
        return () if self.config_file is None else (self.config_file,)


def builtin_dataset() -> Path:
    """The bundled golden set (installed with the package)."""
    return Path(str(resources.files("codejury.eval") / "golden" / "cases.jsonl"))


def config_hash(settings: EvalSettings, mode: Mode) -> str:
    """What decides a review's outcome besides the case: version, flags, config files, prompts, CODEJURY_* env."""
    digest = hashlib.sha256()
    parts: list[str] = [__version__, mode, *settings.review_args]
    parts += [f"{k}={v}" for k, v in sorted(settings.env.items()) if k.startswith("CODEJURY_")]
    for path in settings.config_files:
        parts.append(hashlib.sha256(path.read_bytes()).hexdigest())
    prompts = resources.files("codejury.reviewers") / "prompts"
    for prompt in sorted(prompts.iterdir(), key=lambda p: p.name):
        if prompt.name.endswith(".md"):
            parts.append(hashlib.sha256(prompt.read_bytes()).hexdigest())
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:16]


def _cache_path(settings: EvalSettings, case: EvalCase, mode: Mode) -> Path | None:
    if settings.cache_dir is None:
        return None
    return settings.cache_dir / config_hash(settings, mode) / f"{case_key(case)}.json"


def case_key(case: EvalCase) -> str:
    """The case's fields and the content of the files it names (a bundle, a diff, a tree), so a
    replaced file is reviewed again; a repository directory or URL counts by its refs."""
    digest = hashlib.sha256(case.model_dump_json().encode())
    for name in (case.diff, case.tree, None if case.repo_is_url else case.repo, *case.tests):
        root = Path(name) if name else None
        if root is None or not (root.is_file() or case.tree == name):
            continue
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            with path.open("rb") as fh:
                digest.update(hashlib.file_digest(fh, "sha256").digest())
    return digest.hexdigest()[:16]


def _load_cached(path: Path | None) -> CaseRun | None:
    if path is None or not path.is_file():
        return None
    try:
        return CaseRun.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a torn or old cache entry is simply run again


def _store(path: Path | None, run: CaseRun) -> None:
    if path is None or run.error is not None:  # a failed case is retried on the next run
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(run.model_dump_json(), encoding="utf-8")
    tmp.replace(path)


def changed_lines(repo: Path | None, base: str | None, head: str | None, diff: str | None) -> dict[str, list[int]]:
    """New-side line numbers the change adds or modifies, per path."""
    from codejury.change.sources import DiffFileSource, GitSource

    if diff is not None:
        change = DiffFileSource(diff).load()
    else:
        with GitSource(repo or Path.cwd(), base=base, head=head) as source:
            change = source.load()
    out: dict[str, list[int]] = {}
    for f in change.files:
        lines = [ln.new_no for h in f.hunks for ln in h.lines if ln.kind == "+" and ln.new_no is not None]
        if lines:
            out[f.path] = lines
    return out


def review_flags(
    settings: EvalSettings,
    mode: Mode,
    output: Path,
    *,
    repo: Path | None = None,
    base: str | None = None,
    head: str | None = None,
    diff: str | None = None,
    tests: tuple[str, ...] = (),
) -> session.ReviewFlags:
    """The flags of ``codejury review [--repo REPO --base BASE --head HEAD | --diff DIFF] --format json
    --output OUTPUT --fail-on never [--baseline naive] [--tests FILE ...]`` plus the eval's ``--config``,
    ``--model``, ``--model-for`` and ``--plugin``."""
    return session.ReviewFlags(
        repo_dir=repo,
        base_ref=base,
        head_ref=head,
        diff_file=diff,
        fmt="json",
        output=output,
        fail_on="never",
        tests=tests,
        baseline="naive" if mode == "naive" else None,
        config_file=settings.config_file,
        model=settings.model,
        model_for=settings.model_for,
        plugins=settings.plugins,
    )


def _found(f: Mapping[str, Any]) -> FoundFinding:
    return FoundFinding(
        path=f["path"],
        start_line=f["start_line"],
        end_line=f.get("end_line", f["start_line"]),
        severity=f.get("severity", "warning"),
        title=f.get("title", ""),
        body=f.get("body", ""),
        reviewer=f.get("reviewer", ""),
        evidence=[str(e) for e in f.get("evidence") or []],
        confidence=float(f.get("confidence", 1.0)),
        below_threshold=bool(f.get("below_threshold", False)),
    )


def parse_review(case_id: str, data: Mapping[str, Any], wall_s: float, lines: dict[str, list[int]]) -> CaseRun:
    usage = data.get("usage") or {}
    return CaseRun(
        case_id=case_id,
        verdict=data.get("verdict"),
        findings=[_found(f) for f in data.get("findings", [])],
        below_threshold=[_found(f) for f in data.get("below_threshold", [])],
        changed_lines=lines,
        input_tokens=int(usage.get("input_tokens", 0)),
        output_tokens=int(usage.get("output_tokens", 0)),
        cost_usd=float(usage.get("cost_usd", 0.0)),
        wall_s=round(wall_s, 2),
        walkthrough_s=float(((data.get("walkthrough") or {}).get("usage") or {}).get("duration_s", 0.0)),
    )


def failure_line(exc: BaseException) -> str:
    """An exception as a failed case's one-line error (what ``codejury review`` would print after
    ``codejury:``), the environment's secrets scrubbed."""
    if isinstance(exc, ReviewFailed):
        text = f"review failed: {exc}"
    elif isinstance(exc, CodejuryError):
        text = str(exc)
    else:  # a bug: ``codejury review`` exits 5 with the same kind of line
        text = f"internal error: {type(exc).__name__}: {exc}"
    line = " ".join(redact_env(text).split()) or type(exc).__name__
    return line[:ERROR_MAX_CHARS]


async def review_case(case: EvalCase, settings: EvalSettings, mode: Mode, reviews: session.Session) -> CaseRun:
    """Review one case (or take it from the cache); a failure is a failed case, never a crash."""
    cache = _cache_path(settings, case, mode)
    if (cached := _load_cached(cache)) is not None:
        return cached
    with tempfile.TemporaryDirectory(prefix="codejury-eval-") as tmp:
        started = time.monotonic()
        try:
            run = await _review_in(case, settings, mode, reviews, Path(tmp))
        except Exception as exc:  # one case never takes the eval down (KeyboardInterrupt does stop it)
            run = CaseRun(case_id=case.id, error=failure_line(exc), wall_s=round(time.monotonic() - started, 2))
    _store(cache, run)
    return run


async def _review_in(
    case: EvalCase, settings: EvalSettings, mode: Mode, reviews: session.Session, tmp: Path
) -> CaseRun:
    output = tmp / "review.json"
    if case.diff is not None:
        flags = review_flags(settings, mode, output, diff=case.diff, tests=case.tests)
        lines = await asyncio.to_thread(changed_lines, None, None, None, case.diff)
    else:
        repo, base, head = await asyncio.to_thread(checkout, case, tmp / "repo")
        flags = review_flags(settings, mode, output, repo=repo, base=base, head=head, tests=case.tests)
        lines = await asyncio.to_thread(changed_lines, repo, base, head, None)
    started = time.monotonic()
    deadline = asyncio.timeout(settings.case_timeout_s)
    try:
        async with deadline:
            await reviews.review(dict(settings.env), flags)
    except TimeoutError:
        if not deadline.expired():
            raise  # a timeout inside the review (a provider's): its own message
        return CaseRun(
            case_id=case.id,
            error=f"timed out after {settings.case_timeout_s:g} s",
            wall_s=round(time.monotonic() - started, 2),
        )
    wall = time.monotonic() - started
    if not output.is_file():
        raise InputError("the review wrote no JSON")
    return parse_review(case.id, json.loads(output.read_text(encoding="utf-8")), wall, lines)


async def run_all(
    cases: Sequence[EvalCase],
    settings: EvalSettings,
    mode: Mode,
    reviews: session.Session,
    *,
    on_start: Callable[[EvalCase], None] | None = None,
    on_done: Callable[[EvalCase, CaseRun], None] | None = None,
) -> list[CaseRun]:
    """Every case, at most ``settings.jobs`` at a time, in the dataset's order, in this process with
    ``reviews``, the eval's session (the models they resolve are kept from one case to the next)."""
    gate = asyncio.Semaphore(max(1, settings.jobs))

    async def one(case: EvalCase) -> CaseRun:
        async with gate:
            if on_start is not None:
                on_start(case)
            run = await review_case(case, settings, mode, reviews)
        if on_done is not None:
            on_done(case, run)
        return run

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(c)) for c in cases]
    return [t.result() for t in tasks]
