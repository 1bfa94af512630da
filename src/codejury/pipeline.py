"""review(): change → filter → tier → workspace → reviewers → judge → verdict → record.

This is the one place where the stages are called in order.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from codejury.agents import prompts
from codejury.agents.runner import AgentOutcome, ChangeContext, Limits, run_agent
from codejury.agents.tools import TOOL_NAMES, RepoTools
from codejury.change.classify import classify_tier, is_release_file
from codejury.change.noise import filter_noise
from codejury.change.types import ChangeSet, FileChange
from codejury.config import Settings
from codejury.errors import InputError, ModelSetupError, ReviewFailed
from codejury.findings import (
    Disagreement,
    Finding,
    Plan,
    PlannedReviewer,
    ReplyVerdict,
    Review,
    ReviewerOutput,
    ReviewerReport,
    ReviewerStatus,
    SkippedFile,
    Tier,
    Usage,
)
from codejury.fingerprint import fingerprint
from codejury.judge import anchors, coordinator, reflection
from codejury.judge.dedup import deduplicate
from codejury.judge.replies import judge_disputes
from codejury.judge.verdict import decide_verdict, summarise, summarise_unreviewed
from codejury.models.pricing import ModelPrice, PriceTable, estimate_tokens
from codejury.models.profiles import ResolvedModel
from codejury.models.redacting import RedactingModel
from codejury.models.registry import parse_model_string, resolve_model
from codejury.plugins import (
    ReviewConfig,
    assemble,
    make_plugin_manager,
    run_bootstrap,
    run_configure,
    run_post_configure,
)
from codejury.record.events import EventLog
from codejury.resilience import (
    BOARD,
    DEADLINE,
    DEFAULT_FAILBACK,
    HEARTBEAT,
    MODELS_USED,
    BreakerBoard,
    BreakerState,
    ResilienceSettings,
    ResilientModel,
    build_chain,
)
from codejury.reviewers.roster import coordinator_prompt, select_reviewers, shared_rules
from codejury.secrets import Redactor, provider_key_values
from codejury.workspace import build_workspace, numbered_patch

BREAK_GLASS_RE = re.compile(r"^\s*break\s+glass\s*[.!]?\s*$", re.IGNORECASE | re.MULTILINE)
Resolver = Callable[[str, ReviewConfig], ResolvedModel]


@dataclass
class ReviewOptions:
    """How to run one review."""

    settings: Settings
    env: Mapping[str, str]
    events: EventLog
    warn: Callable[[str], None]
    break_glass: bool = False
    dry_run: bool = False
    plugins: Sequence[str] = ()
    notices: Sequence[str] = ()
    resolver: Resolver | None = None
    workspace_dir: Path | None = None
    board: BreakerBoard | None = None
    """Circuit breakers; None: the process-wide board, configured from the settings."""
    disputes: Sequence[Disagreement] = ()
    """Human replies disputing the bot's earlier findings (forge re-reviews): the coordinator judges them."""
    progress: Callable[[str], None] | None = None
    """Where a line goes as each stage starts and ends (stderr in the CLI); None: nowhere."""


def default_resolver(env: Mapping[str, str]) -> Resolver:
    def resolve(spec: str, config: ReviewConfig) -> ResolvedModel:
        return resolve_model(spec, config.providers, env=env)

    return resolve


async def configure(change: ChangeSet, opts: ReviewOptions) -> ReviewConfig:
    """Run the plugin lifecycle and return the assembled configuration."""
    pm = make_plugin_manager(opts.plugins)
    await run_bootstrap(pm, opts.settings, opts.warn)
    contributions = run_configure(pm, opts.settings, change)
    config = assemble(opts.settings, contributions, opts.notices)
    return await run_post_configure(pm, config, opts.warn)


def failback_table(config: ReviewConfig) -> dict[str, str | None]:
    """Built-in failback chains, overridden by config and the remote routing document."""
    return {**DEFAULT_FAILBACK, **config.settings.failback}


def model_chain(config: ReviewConfig, spec: str) -> list[str]:
    """``spec`` and its failback models, minus those of disabled providers."""
    disabled = {name for name, p in config.providers.items() if not p.enabled}
    return build_chain(spec, failback_table(config), disabled_providers=disabled)


def choose_model(config: ReviewConfig, name: str, *, tier: Tier) -> str | None:
    """The model for a reviewer: the first of its failback chain whose provider is enabled."""
    if name == "coordinator" and tier == "trivial" and "coordinator" not in config.settings.reviewer_models:
        spec: str | None = config.settings.models["standard"]
    else:
        spec = config.model_for(name)
    if spec is None:
        return None
    parse_model_string(spec)  # a malformed model string is a configuration error, reported here
    chain = model_chain(config, spec)
    return chain[0] if chain else None


def reviewer_files(name: str, files: Sequence[FileChange]) -> list[FileChange]:
    """The files a reviewer looks at: the release reviewer only release files, the rest all."""
    if name == "release":
        return [f for f in files if is_release_file(f.path)]
    return list(files)


def price_table(settings: Settings) -> PriceTable:
    return PriceTable(
        {spec: ModelPrice(p.input, p.output, p.cache_read, p.cache_write) for spec, p in settings.prices.items()}
    )


def break_glass_requested(change: ChangeSet) -> bool:
    """A human comment that says exactly 'break glass' forces approval."""
    return any(BREAK_GLASS_RE.search(c) for c in change.meta.comments)


async def _review(change: ChangeSet, opts: ReviewOptions) -> Review | Plan:
    """Review ``change`` (or plan it, with dry_run) and return the result, not yet scrubbed (see ``review``)."""
    started = time.monotonic()
    events = opts.events
    if not change.files:
        raise InputError("the change is empty: there is nothing to review")
    break_glass = opts.break_glass or break_glass_requested(change)
    if break_glass:
        events.emit("break_glass", source="flag" if opts.break_glass else "comment")
    config = await configure(change, opts)
    if (left_out := change.left_out_notice()) is not None:  # unreadable files outside the change: never fatal
        opts.warn(left_out)
        events.emit("left_out", files=sorted(change.left_out))
    read_head = _head_reader(change.root)
    read_base = change.base.read_text if change.base is not None else None
    kept, skipped = filter_noise(
        change.files, read_head=read_head, read_base=read_base, extra_globs=config.settings.exclude
    )
    tier: Tier = classify_tier(kept) if kept else "trivial"
    names = (
        select_reviewers(
            tier,
            kept,
            config.reviewers,
            release_changed=any(is_release_file(f.path) for f in kept),
            has_custom_rules=bool(config.custom_rules),
            has_agent_instructions=bool(config.repo_instructions),
        )
        if kept
        else []
    )
    events.emit("plan", tier=tier, reviewers=names, files=len(kept), skipped=len(skipped))
    models = {n: choose_model(config, n, tier=tier) for n in [*names, "coordinator"]}
    prices = price_table(config.settings)
    rules = shared_rules()
    context_text = prompts.shared_context(
        change, kept, repo_instructions=config.repo_instructions, custom_rules=config.custom_rules
    )
    patches = [(f.path, numbered_patch(f)) for f in kept]
    if opts.dry_run:
        plan = _plan(config, tier, names, models, kept, skipped, rules, context_text, patches, prices)
        # Nothing is built or called: only whether each chosen model could run here (key, provider, runtime).
        problems = {m: why for m in sorted({m for m in models.values() if m}) if (why := _unusable(m, config, opts))}
        return plan.model_copy(update={"model_problems": problems})
    if not kept or not names:
        review_ = Review(
            verdict="approved" if break_glass else "not_reviewed",
            tier=tier,
            skipped_files=skipped,
            break_glass=break_glass,
            summary=summarise_unreviewed(skipped, reviewable=len(kept), tier=tier, break_glass=break_glass),
            usage=Usage(duration_s=round(time.monotonic() - started, 3)),
        )
        events.emit("review_finished", verdict=review_.verdict, tier=tier, findings=0)
        return review_
    board = _board(config, opts)
    resolved = _resilient_models(config, opts, sorted({m for m in models.values() if m}), board)

    def breaker_moved(model: str, old: BreakerState, new: BreakerState) -> None:
        events.emit("breaker", model=model, from_state=old, to_state=new)

    board.add_listener(breaker_moved)
    try:
        with tempfile.TemporaryDirectory(prefix="codejury-") as tmp:
            dest = opts.workspace_dir or Path(tmp)
            workspace = build_workspace(change, dest, shared_context=context_text)
            tools = RepoTools(change.root, dict(patches))
            ctx = ChangeContext(
                files=kept,
                title=change.meta.title,
                shared_context=context_text,
                patches=patches,
                tools=tools,
                shared_rules=rules,
                sections=config.prompt_sections,
            )
            events.emit("workspace", path=str(workspace.root), patches=len(workspace.patch_paths))
            return await _run_review(
                change, config, opts, ctx, tier, names, models, resolved, kept, skipped, prices, break_glass, started
            )
    finally:
        board.remove_listener(breaker_moved)


def _board(config: ReviewConfig, opts: ReviewOptions) -> BreakerBoard:
    """The breakers this review shares with every other review in the process."""
    if opts.board is not None:
        return opts.board
    BOARD.failure_threshold = config.settings.breaker_failures
    BOARD.cooldown_s = config.settings.breaker_cooldown_s
    return BOARD


def _resilient_models(
    config: ReviewConfig, opts: ReviewOptions, specs: Sequence[str], board: BreakerBoard
) -> dict[str, ResolvedModel]:
    """Each chosen model as a failback chain with breakers, stall watchdog and heartbeats."""
    resolver = opts.resolver or default_resolver(opts.env)
    settings = config.settings
    resilience = ResilienceSettings(
        stall_timeout_s=settings.stall_timeout_s,
        heartbeat_s=settings.heartbeat_s,
        min_retry_window_s=settings.min_retry_window_s,
    )
    redactor = _run_redactor(config, opts)
    cache: dict[str, ResolvedModel] = {}
    out: dict[str, ResolvedModel] = {}
    for spec in specs:
        chain = [cache.get(m) or cache.setdefault(m, resolver(m, config)) for m in model_chain(config, spec)]
        wrapper = ResilientModel(chain, board=board, settings=resilience, on_event=opts.events.emit)
        out[spec] = ResolvedModel(spec=spec, model=RedactingModel(wrapper, redactor), profile=chain[0].profile)
    return out


async def _run_review(
    change: ChangeSet,
    config: ReviewConfig,
    opts: ReviewOptions,
    ctx: ChangeContext,
    tier: Tier,
    names: list[str],
    models: Mapping[str, str | None],
    resolved: Mapping[str, ResolvedModel],
    kept: list[FileChange],
    skipped: list[SkippedFile],
    prices: PriceTable,
    break_glass: bool,
    started: float,
) -> Review:
    settings, events = config.settings, opts.events
    semaphores = {spec: asyncio.Semaphore(max(1, m.profile.parallel_requests)) for spec, m in resolved.items()}
    say = opts.progress or _silent
    say(f"tier {tier}: {', '.join(names)} ({_count(len(names), 'reviewer')})")

    def limits_for(name: str) -> Limits:
        spec = config.reviewers.get(name)
        timeout = spec.timeout_s if spec and spec.timeout_s else settings.reviewer_timeout_s
        return Limits(settings.max_tool_calls, settings.max_requests, settings.max_input_tokens, timeout)

    used: dict[str, list[str]] = {}

    @contextmanager
    def watching(name: str) -> Iterator[None]:
        """While an agent runs: heartbeats name it, answered requests record their model."""
        beat = HEARTBEAT.set(lambda line: opts.warn(f"{name}: {line}"))
        record = MODELS_USED.set(used.setdefault(name, []))
        try:
            yield
        finally:
            MODELS_USED.reset(record)
            HEARTBEAT.reset(beat)

    def model_of(name: str) -> str:
        """The model that answered last (a failback model when the chosen one failed)."""
        return (used.get(name) or [models[name] or "-"])[-1]

    async def run_one(name: str) -> AgentOutcome:
        spec = models[name]
        if spec is None:
            say(f"{name} skipped: every model in its failback chain is disabled")
            return AgentOutcome(None, Usage(), error="every model in its failback chain is disabled")
        with watching(name):
            async with semaphores[spec]:
                say(f"{name} started ({spec})")
                outcome = await run_agent(
                    ctx,
                    name=name,
                    task_prompt=config.reviewers[name].prompt,
                    model=resolved[spec],
                    output_type=ReviewerOutput,
                    allowed_tools=config.tool_permissions.get(name, config.reviewers[name].tools) & TOOL_NAMES,
                    limits=limits_for(name),
                    prices=prices,
                    events=events,
                )
        found = len(outcome.output.findings) if isinstance(outcome.output, ReviewerOutput) else 0
        say(_finished(name, outcome, _count(found, "finding")))
        return outcome

    token = DEADLINE.set(time.monotonic() + settings.overall_timeout_s)
    try:
        outcomes = await _fan_out(names, run_one, settings.overall_timeout_s)
    finally:
        DEADLINE.reset(token)
    files_by_path = {f.path: f for f in kept}
    findings: list[Finding] = []
    dropped: dict[str, int] = {}
    reports: list[ReviewerReport] = []
    for name in names:
        outcome = outcomes[name]
        status: ReviewerStatus = "ok" if outcome.ok else "failed"
        reports.append(ReviewerReport.from_usage(name, model_of(name), status, outcome.usage, outcome.error))
        if outcome.ok and isinstance(outcome.output, ReviewerOutput):
            for draft in outcome.output.findings:
                anchored = anchors.anchor(name, draft, files_by_path)
                if isinstance(anchored, str):
                    dropped[anchored] = dropped.get(anchored, 0) + 1
                    events.emit(
                        "finding_dropped", reviewer=name, reason=anchored, path=draft.path, line=draft.start_line
                    )
                else:
                    findings.append(anchored)
    cut_files = sorted({path for outcome in outcomes.values() for path in outcome.cut})
    if cut_files:
        events.emit("context_cut", files=cut_files)
    ok_names = [r.name for r in reports if r.status == "ok"]
    if not ok_names:
        failures = "; ".join(f"{r.name}: {r.error}" for r in reports)
        events.emit("review_failed", reason="no reviewer succeeded", failures=failures)
        raise ReviewFailed(f"no reviewer succeeded ({failures})")
    if settings.reflection and findings:

        def to_finding(reviewer: str, draft: object) -> Finding | None:
            res = anchors.anchor(reviewer, draft, files_by_path)  # type: ignore[arg-type]
            return None if isinstance(res, str) else res

        trio = [(n, config.reviewers[n].prompt, resolved[models[n]]) for n in ok_names if models[n]]  # type: ignore[index]
        findings, refl = await reflection.reflect(
            ctx, findings, trio, limits=limits_for("reflection"), prices=prices, events=events, to_finding=to_finding
        )
        for name, outcome in refl:
            reports.append(
                ReviewerReport.from_usage(
                    f"{name}:reflection",
                    models[name] or "-",
                    "ok" if outcome.ok else "failed",
                    outcome.usage,
                    outcome.error,
                )
            )
    findings = _unique(findings)
    findings, dupes = deduplicate(findings)
    if dupes:
        dropped["duplicate"] = dropped.get("duplicate", 0) + len(dupes)
    judged = True
    coord_report: ReviewerReport
    coord_spec = models["coordinator"]
    if not findings:
        coord_report = ReviewerReport(name="coordinator", model=coord_spec or "-", status="skipped")
    elif coord_spec is None:
        judged = False
        coord_report = ReviewerReport(
            name="coordinator", model="-", status="failed", error="every model in its failback chain is disabled"
        )
    else:
        say(f"coordinator started ({coord_spec}): judging {_count(len(findings), 'finding')}")
        with watching("coordinator"):
            findings, judge_dropped, outcome = await coordinator.judge(
                ctx,
                findings,
                prompt=coordinator_prompt(),
                model=resolved[coord_spec],
                limits=limits_for("coordinator"),
                prices=prices,
                events=events,
                sections=list(config.reviewers),
            )
        judged = outcome.ok
        say(_finished("coordinator", outcome, f"{_count(len(findings), 'finding')} kept"))
        for k, v in judge_dropped.items():
            dropped[k] = dropped.get(k, 0) + v
        coord_report = ReviewerReport.from_usage(
            "coordinator", model_of("coordinator"), "ok" if outcome.ok else "failed", outcome.usage, outcome.error
        )
    replies: list[ReplyVerdict] = []
    if opts.disputes and coord_spec is not None:
        with watching("coordinator"):
            replies, reply_outcomes = await judge_disputes(
                ctx,
                opts.disputes,
                {fingerprint(f): f for f in findings},
                model=resolved[coord_spec],
                limits=limits_for("coordinator"),
                prices=prices,
                events=events,
            )
        for outcome in reply_outcomes:
            reports.append(
                ReviewerReport.from_usage(
                    "coordinator:reply",
                    model_of("coordinator"),
                    "ok" if outcome.ok else "failed",
                    outcome.usage,
                    outcome.error,
                )
            )
    findings.sort(key=lambda f: (-_rank(f.severity), f.path, f.start_line))
    verdict = decide_verdict(findings, break_glass=break_glass, judged=judged)
    failed = [r.name for r in reports if r.status == "failed"]
    total = sum((r.usage() for r in [*reports, coord_report]), Usage())
    total = total.model_copy(update={"duration_s": round(time.monotonic() - started, 3)})
    result = Review(
        verdict=verdict,
        tier=tier,
        summary=summarise(findings, verdict, failed, judged, break_glass),
        findings=findings,
        reviewers=reports,
        coordinator=coord_report,
        skipped_files=skipped,
        usage=total,
        judged=judged,
        break_glass=break_glass,
        dropped_findings=dropped,
        replies=replies,
        cut_files=cut_files,
    )
    events.emit(
        "review_finished",
        verdict=verdict,
        tier=tier,
        findings=len(findings),
        judged=judged,
        break_glass=break_glass,
        failed_reviewers=failed,
        dropped=dropped,
        **total.model_dump(),
    )
    return result


async def _fan_out(
    names: Sequence[str], run_one: Callable[[str], Coroutine[Any, Any, AgentOutcome]], overall_s: float
) -> dict[str, AgentOutcome]:
    """Run every reviewer concurrently; past the overall timeout the unfinished ones fail."""
    tasks = {name: asyncio.create_task(run_one(name)) for name in names}
    done, pending = await asyncio.wait(tasks.values(), timeout=overall_s)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    out: dict[str, AgentOutcome] = {}
    for name, task in tasks.items():
        if task in done and not task.cancelled() and task.exception() is None:
            out[name] = task.result()
        else:
            exc = None if task.cancelled() or task not in done else task.exception()
            out[name] = AgentOutcome(None, Usage(), error="overall review timeout" if exc is None else str(exc))
    return out


def _silent(line: str) -> None:
    """No progress lines (a caller that passed no ``progress``)."""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _finished(name: str, outcome: AgentOutcome, detail: str) -> str:
    """The progress line of a finished agent: its time, and what it found or why it failed."""
    took = f"{outcome.usage.duration_s:.1f} s"
    return f"{name} done in {took} ({detail})" if outcome.ok else f"{name} failed after {took}: {outcome.error}"


def _rank(severity: str) -> int:
    return {"critical": 3, "warning": 2, "suggestion": 1}.get(severity, 0)


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: set[str] = set()
    out = []
    for f in findings:
        if f.id not in seen:
            seen.add(f.id)
            out.append(f)
    return out


def _head_reader(root: Path | None) -> Callable[[str], str | None] | None:
    if root is None:
        return None
    base = root.resolve()

    def read(path: str) -> str | None:
        p = (base / path).resolve()
        if not p.is_relative_to(base) or not p.is_file():
            return None
        with p.open("rb") as fh:
            return fh.read(4096).decode("utf-8", errors="replace")

    return read


def _unusable(spec: str, config: ReviewConfig, opts: ReviewOptions) -> str | None:
    """Why ``spec`` could not run (a dry run's check); None with a test resolver, which has its own models."""
    from codejury.models.readiness import model_problem

    return None if opts.resolver is not None else model_problem(spec, config.providers, opts.env)


def _plan(
    config: ReviewConfig,
    tier: Tier,
    names: list[str],
    models: Mapping[str, str | None],
    kept: list[FileChange],
    skipped: list[SkippedFile],
    rules: str,
    context_text: str,
    patches: list[tuple[str, str]],
    prices: PriceTable,
) -> Plan:
    patch_tokens = {path: estimate_tokens(text) for path, text in patches}
    planned: list[PlannedReviewer] = []
    total_tokens = 0
    cost = 0.0
    for name in [*names, "coordinator"]:
        spec = models[name]
        files = reviewer_files(name, kept) if name != "coordinator" else kept
        prompt = config.reviewers[name].prompt if name != "coordinator" else coordinator_prompt()
        tokens = estimate_tokens(prompts.static_prompt(rules, config.prompt_sections, prompt) + context_text)
        tokens += sum(patch_tokens[f.path] for f in files)
        total_tokens += tokens
        if spec:
            cost += prices.cost(spec, Usage(input_tokens=tokens))
        if name != "coordinator":
            planned.append(
                PlannedReviewer(name=name, model=spec or "(no enabled model)", files=[f.path for f in files])
            )
    return Plan(
        tier=tier,
        reviewers=planned,
        coordinator_model=models["coordinator"] or "(no enabled model)",
        skipped_files=skipped,
        estimated_input_tokens=total_tokens,
        estimated_cost_usd=round(cost, 4),
    )


# -- secrets: scrubbed from the finished review and from every request the models send -----------------
async def review(change: ChangeSet, opts: ReviewOptions) -> Review | Plan:
    """Review ``change`` (or plan it, with dry_run) and return the result, every known secret scrubbed.

    The run's redactor is the event log's; it learns the configured providers' keys when the models
    are made (``_run_redactor``), scrubs every request they send (``RedactingModel``), every warning
    and progress line (a reviewer's error may quote a provider's reply), and here the finished
    review, before anything renders, writes, publishes or records it, and the message of a failed
    review (a forge posts it as the failure note).
    """
    redactor = opts.events.redactor
    opts = replace(
        opts,
        warn=_scrubbing(opts.warn, redactor),
        progress=_scrubbing(opts.progress, redactor) if opts.progress is not None else None,
    )
    try:
        result = await _review(change, opts)
    except ReviewFailed as exc:
        message = redactor.redact(str(exc))
        if message == str(exc):
            raise
        raise ReviewFailed(message) from None  # the unscrubbed original must not ride along as the cause
    return redactor.scrub(result)


def _scrubbing(say: Callable[[str], None], redactor: Redactor) -> Callable[[str], None]:
    """``say``, with known secrets scrubbed from each line first."""
    return lambda line: say(redactor.redact(line))


def _run_redactor(config: ReviewConfig, opts: ReviewOptions) -> Redactor:
    """The run's redactor, told the API keys of the configured providers (``api_key_env``, any name)."""
    redactor = opts.events.redactor
    redactor.add(provider_key_values(config.providers, opts.env))
    return redactor


__all__ = ["ModelSetupError", "ReviewOptions", "configure", "review"]
