"""The naive baseline stage (``--baseline naive``): ``judge.naive``'s one plain prompt on the standard model
in place of the panel and the judge, its findings given the rubric's verdict.
"""

from __future__ import annotations

import time

from codejury.errors import ReviewFailed
from codejury.findings import Finding, Review, ReviewerReport
from codejury.judge.naive import naive_review
from codejury.judge.verdict import decide_verdict
from codejury.models.selection import ReviewModels, board_for, build_review_models, choose_model, default_resolver
from codejury.resilience import AgentWatch
from codejury.runstate import ReviewRun


async def naive_stage(run: ReviewRun, models: ReviewModels) -> Review:
    """The baseline in place of the panel: one naive prompt on the standard model, no judge.

    Its findings are kept as the model wrote them (no anchoring to the diff, no coordinator), and
    the rubric gives the verdict, so ``codejury eval`` scores the plain prompt on the same terms.
    """
    spec = choose_model(run.config, "code_quality", tier="full") if "code_quality" in run.config.reviewers else None
    spec = spec or run.selection.models.get("coordinator")
    if spec is None:
        raise ReviewFailed("naive baseline: every model in the failback chain is disabled")
    if spec not in models.chains:
        models = _with(run, models, spec)
    limits = run.limits_for("naive")
    watch = AgentWatch(deadline=time.monotonic() + limits.timeout_s)
    run.options.say(f"naive baseline started ({spec})")
    try:
        found, usage = await naive_review(
            run.change, models.for_agent(spec, watch), run.prices, timeout_s=limits.timeout_s
        )
    except Exception as exc:  # the baseline failing is a failed review, said in one line
        raise ReviewFailed(f"no reviewer succeeded (naive: {type(exc).__name__}: {str(exc)[:200]})") from exc
    findings = [
        Finding(
            id=f"naive-{i}",
            reviewer="naive",
            category="naive",
            severity=f.severity,
            path=f.path,
            start_line=f.start_line,
            end_line=max(f.start_line, f.end_line or f.start_line),
            title=f.title,
            body=f.body,
            confidence=1.0,
        )
        for i, f in enumerate(found)
    ]
    verdict = decide_verdict(findings)
    report = ReviewerReport.from_usage("naive", watch.last_answered or spec, "ok", usage)
    return Review(
        verdict=verdict,
        tier=run.selection.tier,
        summary=f"Naive baseline: {len(findings)} finding(s) from one plain prompt.",
        findings=findings,
        reviewers=[report],
        skipped_files=list(run.selection.skipped),
        usage=usage.model_copy(update={"duration_s": run.elapsed()}),
    )


def _with(run: ReviewRun, models: ReviewModels, spec: str) -> ReviewModels:
    """``models`` plus ``spec``'s chain (the standard model when no reviewer of the panel uses it)."""
    extra = build_review_models(
        run.config,
        [spec],
        resolver=default_resolver(run.options.env),
        board=next(iter(models.chains.values())).board if models.chains else board_for(run.settings),
        redactor=models.redactor,
        on_event=run.events.emit,
    )
    return ReviewModels(
        chains={**models.chains, **extra.chains},
        profiles={**models.profiles, **extra.profiles},
        gates={**models.gates, **extra.gates},
        redactor=models.redactor,
    )
