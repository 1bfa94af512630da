"""One ``codejury eval`` run: load, review (panel and baseline), judge, score, report, gate."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from codejury.errors import ConfigError, InputError, ModelSetupError
from codejury.eval.dataset import EvalCase, load_cases
from codejury.eval.markdown import render
from codejury.eval.results import CaseRun, report_json
from codejury.eval.runner import EvalSettings, builtin_dataset, run_all
from codejury.render import counted

if TYPE_CHECKING:
    from codejury.config import Settings
    from codejury.models.profiles import ResolvedModel
    from codejury.session import Session

GATED = frozenset({"precision", "recall", "f1", "judged_precision", "judged_recall", "judged_f1", "on_changed_lines"})


def parse_thresholds(values: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for value in values:
        name, sep, number = (p.strip() for p in value.partition("="))
        if not sep or name not in GATED:
            raise InputError(f"--fail-below expects METRIC=VALUE with METRIC one of {', '.join(sorted(GATED))}")
        try:
            out[name] = float(number)
        except ValueError as exc:
            raise InputError(f"--fail-below {name}: {number!r} is not a number") from exc
    return out


def _err(msg: str) -> None:
    click.echo(f"codejury eval: {msg}", err=True)


def _layered(env: Mapping[str, str], flags: Mapping[str, Any]) -> Settings:
    """The settings every case starts from, read as ``codejury review`` reads them (``settings_loader``: the
    ``--config`` file, the environment, ``--model`` and ``--model-for``; each case's repository adds its own), so
    a bad value is refused in the same one line before any review."""
    from codejury.change.types import ChangeSet
    from codejury.flags import EVAL_OPTIONS, review_flags
    from codejury.settings_loader import load_review_settings

    settings, _ = load_review_settings(ChangeSet(files=()), env, review_flags({k: flags[k] for k in EVAL_OPTIONS}))
    return settings


def _uses_embedded_model(settings: Settings) -> bool:
    """Whether any reviewer would run on the embedded model (which runs one review at a time)."""
    specs = [*settings.models.values(), *settings.reviewer_models.values()]
    return any(spec.partition(":")[0].strip().lower() == "local" for spec in specs)


def run_eval(env: dict[str, str], **flags: Any) -> int:
    """Check every input first (a paid-for eval is never lost to a bad path), run, write, gate."""
    import asyncio

    from codejury.cli_io import check_writable, write_output
    from codejury.errors import OutputError

    try:
        dataset: Path | None = flags["dataset"]
        if (dataset is None) == (not flags["builtin"]):
            raise InputError("give a dataset file or --builtin (exactly one)")
        path = builtin_dataset() if flags["builtin"] else Path(dataset)  # type: ignore[arg-type]
        thresholds = parse_thresholds(flags["fail_below"])
        for flag, target in (("--output", flags["output"]), ("--json", flags["json_file"])):
            if target is not None:
                check_writable(flag, Path(target))
        cases = load_cases(path)
        doc = asyncio.run(_run(env, flags, path, cases))
    except (InputError, ConfigError, ModelSetupError, OutputError) as exc:
        _err(str(exc))
        return 2
    text = render(doc, title=f"codejury eval: {path.name} ({counted(len(cases), 'case')})")
    try:
        if flags["json_file"] is not None:
            write_output(Path(flags["json_file"]), json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        if flags["output"] is not None:
            write_output(Path(flags["output"]), text)
    except OutputError as exc:
        click.echo(text, nl=False)
        _err(f"{exc}; the table was printed on stdout instead")
        return 2
    if flags["output"] is None:
        click.echo(text, nl=False)
    return _gate(doc["overall"], thresholds)


async def _run(env: dict[str, str], flags: Mapping[str, Any], path: Path, cases: list[EvalCase]) -> dict[str, Any]:
    if flags["limit"]:
        cases = cases[: flags["limit"]]
    jobs = flags["jobs"]
    layered = _layered(env, flags)  # refuses a bad config or flag before any review
    embedded = _uses_embedded_model(layered)
    if jobs > 1 and embedded:
        _err("the embedded model runs one review at a time: --jobs 1")
        jobs = 1
    settings = _settings(env, flags, jobs)
    from codejury.models.registry import resolve_model
    from codejury.session import Session, load_plugins

    # An unknown provider or a missing key for the judge is refused before any review is paid for.
    judge = resolve_model(flags["judge"], _providers(layered), env=env) if flags["judge"] else None
    # One session for the whole eval, as for one review: a plugin that cannot be imported stops it here. The
    # models every case resolves stay cached until the session closes (one embedded-model server for all cases),
    # and closing it closes the judge's client too. The reviews' own warnings and stage lines stay out of the
    # eval's progress display.
    started = time.monotonic()
    async with Session(load_plugins(settings.plugins), warn=lambda _line: None, progress=None) as reviews:
        runs = await _reviews(cases, settings, "panel", "codejury", reviews)
        baseline = await _reviews(cases, settings, "naive", "naive baseline", reviews) if flags["baseline"] else None
        if judge is not None:
            await _judge(cases, [runs, *([baseline] if baseline else [])], judge)
    doc = report_json(cases, runs, baseline)
    doc["overall"]["eval_wall_s"] = round(time.monotonic() - started, 1)
    return doc


def _settings(env: dict[str, str], flags: Mapping[str, Any], jobs: int) -> EvalSettings:
    """How every case is reviewed: the ``codejury review`` flags of the eval, and where to cache."""
    from platformdirs import user_cache_dir

    return EvalSettings(
        config_file=Path(flags["config_file"]).resolve() if flags["config_file"] else None,
        model=flags["model"],
        model_for=tuple(flags["model_for"]),
        plugins=tuple(flags["plugins"]),
        env=env,
        cache_dir=None if flags["no_cache"] else Path(user_cache_dir("codejury")) / "eval",
        jobs=jobs,
    )


async def _reviews(
    cases: Sequence[EvalCase], settings: EvalSettings, mode: str, label: str, reviews: Session
) -> list[CaseRun]:
    from codejury.eval.progress import CaseProgress

    with CaseProgress(label, len(cases)) as progress:
        return await run_all(cases, settings, mode, reviews, on_start=progress.started, on_done=progress.finished)


async def _judge(
    cases: Sequence[EvalCase],
    run_sets: Sequence[list[CaseRun]],
    model: ResolvedModel,
) -> None:
    """Fill ``accepted`` on every run with the pairs the judge model says are the same problem."""
    from codejury.eval.judge import judge_pairs
    from codejury.models.pricing import PriceTable

    prices = PriceTable({})
    unanswered = 0
    for runs in run_sets:
        for i, (case, run) in enumerate(zip(cases, runs, strict=True)):
            if run.error is not None:
                runs[i] = run.model_copy(update={"accepted": []})
                continue
            accepted, _, missed = await judge_pairs(run.findings, case.expected, model, prices)
            unanswered += missed
            runs[i] = run.model_copy(update={"accepted": sorted(accepted)})
    if unanswered:
        _err(f"the judge did not answer {unanswered} pair(s): counted as not the same problem")


def _providers(settings: Settings) -> dict[str, Any]:
    """Built-in providers plus the configured ones, as a review assembles them (a judge on a gateway needs its
    base_url)."""
    from codejury.lifecycle import configured_providers
    from codejury.models.providers import BUILTIN_PROVIDERS

    return configured_providers(settings, BUILTIN_PROVIDERS)


def _gate(overall: Mapping[str, Any], thresholds: Mapping[str, float]) -> int:
    """0, or 1 when a threshold is missed, or 3 when no case could be reviewed (the scores mean nothing)."""
    if overall.get("cases") and overall.get("failed_cases") == overall.get("cases"):
        _err("no case could be reviewed: the scores are not a measurement (see the table for each case's error)")
        return 3
    missed = []
    for name, floor in thresholds.items():
        value = overall.get(name)
        if value is None or value < floor:
            missed.append(f"{name} {value if value is not None else 'n/a'} < {floor}")
    if missed:
        _err("below threshold: " + "; ".join(missed))
        return 1
    if overall.get("failed_cases"):
        _err(f"{overall['failed_cases']} case(s) failed to review: see the table")
    return 0
