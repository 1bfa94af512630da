"""The dry-run stage: what a review would do, with no model built or called.

Tokens are estimated per reviewer (its static prompt, the shared context and the patches of the
files it looks at), priced with the configured prices, and every chosen model is checked for
whether it could run here (provider known and enabled, key set, embedded runtime installed). The
shared context is the one the reviewers would get: with the failing tests of the ``--tests``
reports, and on a forge with the change's discussion (read with the change, no extra request);
the plan says in one line each what the estimate includes, and names the models with no known price
(their calls count as $0).
"""

from __future__ import annotations

from collections.abc import Sequence

from codejury.agents import prompts
from codejury.agents.discussion import discussion_section, tests_context
from codejury.agents.walkthrough import planned_tokens, skip_reason
from codejury.change.classify import is_release_file
from codejury.change.types import FileChange
from codejury.findings import Plan, PlannedReviewer, Usage
from codejury.models.pricing import estimate_tokens
from codejury.models.selection import is_weak_spec
from codejury.render import counted
from codejury.reviewers.roster import coordinator_prompt, shared_rules
from codejury.runstate import ReviewRun
from codejury.stages.criteria import run_criteria
from codejury.workspace import numbered_patch


def _walkthrough_tokens(run: ReviewRun, kept: Sequence[FileChange]) -> tuple[str, int] | None:
    """The coordinator's model and the tokens of the walkthrough a review would write; None when it would write none."""
    spec = run.selection.models.get("coordinator")
    if spec is None or not kept or skip_reason(run.selection.tier, run.settings.describe) is not None:
        return None
    if is_weak_spec(run.config, spec):  # listed from the diff (stages.outline): no model, no tokens
        return spec, 0
    criteria = [text for _, text in run_criteria(run)]  # the linked issues' criteria, asked in the same call
    return spec, planned_tokens(run.change.meta, kept, criteria=criteria)


def reviewer_files(name: str, files: Sequence[FileChange]) -> list[FileChange]:
    """The files a reviewer looks at: the release reviewer only release files, the rest all."""
    if name == "release":
        return [f for f in files if is_release_file(f.path)]
    return list(files)


def plan_stage(run: ReviewRun) -> Plan:
    """The plan of ``run``: tier, reviewers and their models and files, tokens, cost, unusable models."""
    config, selection = run.config, run.selection
    kept = list(selection.kept)
    context_text = prompts.shared_context(
        run.change,
        kept,
        repo_instructions=config.repo_instructions,
        custom_rules=config.custom_rules,
        org_instructions=config.org_instructions,
    )
    extra, estimate_notes = _context_extras(run, kept)
    context_text += extra
    rules = shared_rules()
    patch_tokens = {f.path: estimate_tokens(numbered_patch(f)) for f in kept}
    planned: list[PlannedReviewer] = []
    total_tokens = 0
    cost = 0.0
    for name in [*selection.names, "coordinator"] if selection.names else []:
        spec = selection.models[name]
        files = reviewer_files(name, kept) if name != "coordinator" else kept
        prompt = config.reviewers[name].prompt if name != "coordinator" else coordinator_prompt()
        tokens = estimate_tokens(prompts.static_prompt(rules, config.prompt_sections, prompt) + context_text)
        tokens += sum(patch_tokens[f.path] for f in files)
        total_tokens += tokens
        if spec:
            cost += run.prices.cost(spec, Usage(input_tokens=tokens))
        if name != "coordinator":
            planned.append(
                PlannedReviewer(name=name, model=spec or "(no enabled model)", files=[f.path for f in files])
            )
    walkthrough = _walkthrough_tokens(run, kept)
    if walkthrough is not None:
        spec, tokens = walkthrough
        total_tokens += tokens
        cost += run.prices.cost(spec, Usage(input_tokens=tokens))
        estimate_notes.append(
            f"the walkthrough of the change: about {tokens:,} input tokens on {spec}"
            if tokens
            else f"the walkthrough of the change: listed from the diff, no model tokens ({spec} is weak)"
        )
    priced = [spec for name in [*selection.names, "coordinator"] if (spec := selection.models.get(name))]
    if unpriced := run.prices.unpriced(priced if selection.names else []):  # $0 in the estimate, as in the review
        names = ", ".join(unpriced)
        estimate_notes.append(f'no known price for {names}: not in the estimated cost (set [prices."provider:model"])')
    return Plan(
        tier=selection.tier,
        reviewers=planned,
        coordinator_model=selection.models.get("coordinator") or "(no enabled model)",
        skipped_files=list(selection.skipped),
        estimated_input_tokens=total_tokens,
        estimated_cost_usd=round(cost, 4),
        model_problems=_model_problems(run),
        estimate_notes=estimate_notes,
    )


def _context_extras(run: ReviewRun, kept: Sequence[FileChange]) -> tuple[str, list[str]]:
    """What the failing tests and the discussion add to each model call, as the review would give them, and
    the plan's line on each: the failing tests in the shared context, the discussion in the prompt of a model
    without tools or as the answer of ``get_pr_discussion`` (counted as read)."""
    settings = run.settings
    text = ""
    notes: list[str] = []
    report = run.options.test_report
    if report is not None:
        from codejury.analyzers.junit import coverage

        files = ", ".join(report.files)
        failing = tests_context(coverage(report, run.change, kept), settings.test_failures_tokens)
        if failing:
            text += failing
            notes.append(
                f"test failures included: {counted(len(report.failures), 'failing test')} of {files}, "
                f"about {estimate_tokens(failing):,} tokens in each model call"
            )
        elif report.failures:
            notes.append(f"test failures not included: test_failures_tokens is 0 ({files})")
        else:
            notes.append(f"no test failures to include: none of {counted(report.total, 'test')} failed ({files})")
    discussion = run.change.meta.discussion
    if discussion is not None and settings.discussion_tokens:
        section = "\n" + discussion_section(discussion, settings.discussion_tokens)
        text += section
        notes.append(
            f"discussion included: the {discussion.noun}'s discussion ({discussion.counts()}), "
            f"about {estimate_tokens(section):,} tokens in each model call"
        )
    return text, notes


def _model_problems(run: ReviewRun) -> dict[str, str]:
    """Why each chosen model could not run here."""
    from codejury.models.readiness import model_problem

    specs = sorted({m for m in run.selection.models.values() if m})
    return {m: why for m in specs if (why := model_problem(m, run.config.providers, run.options.env))}
