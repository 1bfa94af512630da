"""What the review says of each acceptance criterion of the change's linked issues (``Review.criteria``).

The criteria are found without a model (``change.intent.acceptance_criteria``: checkbox items, bullets under an
"Acceptance criteria" or "Definition of done" heading). Each is then:

- **unmet** when a published finding cites it: the reviewers are asked to report a criterion the change does not
  meet as a finding that quotes it, so a finding whose title and body hold the criterion's words (all of them in
  order, or most of its significant words) cites it, and only the criterion it matches best;
- **met** when the walkthrough, which reads the same diff, showed where the change meets it, with evidence naming
  code the diff shows (``agents.walkthrough`` checks it; an unsupported claim counts as no claim), and no finding
  cites it;
- **not judged** otherwise: nobody could say, and the review lists it so a person checks it.

No model call is added: the walkthrough's answer carries the claims, and only when there are criteria; a review
whose walkthrough is not written (a trivial change, ``describe = false``) judges none met.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from codejury.change.intent import acceptance_criteria
from codejury.findings import Criterion, Finding, Review
from codejury.runstate import ReviewRun

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    {"the", "and", "for", "are", "is", "be", "to", "of", "in", "on", "a", "an", "it", "its", "with", "when", "that",
     "this", "all", "any", "each", "not", "no", "or", "as", "by", "at", "from", "into", "must", "should", "can"}
)  # fmt: skip


def run_criteria(run: ReviewRun) -> list[tuple[str, str]]:
    """The criteria of ``run``'s linked issues, when the reviewers read them (``intent_tokens`` above 0)."""
    if run.settings.intent_tokens <= 0:
        return []
    return acceptance_criteria(run.change.meta.linked_issues)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def citation(finding: Finding, criterion: str) -> float:
    """How surely ``finding`` cites ``criterion``: 2 when the criterion's words stand in order in its title or body,
    else the share of the criterion's significant words it names when that share reaches 0.5 in a finding about
    intent (0.8 in another), else 0."""
    said = _words(f"{finding.title}\n{finding.body}")
    wanted = _words(criterion)
    if not wanted:
        return 0.0
    joined, phrase = f" {' '.join(said)} ", f" {' '.join(wanted)} "
    if phrase in joined:
        return 2.0
    significant = {w for w in wanted if w not in _STOP and len(w) > 2}
    if not significant:
        return 0.0
    share = len(significant & set(said)) / len(significant)
    return share if share >= (0.5 if "intent" in finding.category.lower() else 0.8) else 0.0


def cites(finding: Finding, criterion: str) -> bool:
    """Whether ``finding`` cites ``criterion`` at all (``citation`` above 0)."""
    return citation(finding, criterion) > 0


def judged(criteria: Sequence[tuple[str, str]], findings: Sequence[Finding], met: Mapping[int, str]) -> list[Criterion]:
    """Each criterion with what the review says of it (``met``: the walkthrough's checked claims, by number)."""
    cited: dict[int, list[str]] = {}
    for f in findings:  # a finding cites the one criterion it matches best (criteria often share words)
        scores = [citation(f, text) for _, text in criteria]
        best = max(scores, default=0.0)
        if best > 0:
            cited.setdefault(scores.index(best), []).append(f"{f.path}:{f.start_line} {f.title}")
    out: list[Criterion] = []
    for number, (issue, text) in enumerate(criteria, 1):
        citing = cited.get(number - 1, [])
        if citing:
            out.append(Criterion(issue=issue, text=text, status="unmet", cited_by=citing))
        elif number in met:
            out.append(Criterion(issue=issue, text=text, status="met", evidence=met[number]))
        else:
            out.append(Criterion(issue=issue, text=text))
    return out


def with_criteria(review: Review, criteria: Sequence[tuple[str, str]]) -> Review:
    """``review`` saying what it found of each of ``criteria`` (unchanged without any)."""
    if not criteria:
        return review
    met = review.walkthrough.criteria_met if review.walkthrough is not None else {}
    return review.model_copy(update={"criteria": judged(criteria, review.findings, met)})
