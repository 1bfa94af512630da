"""A month of recorded reviews for the dashboard's tests, written through the store like real ones.

``seed_month(store, now)`` writes ``REVIEWS`` reviews over the 30 days before ``now`` (three
repositories, all tiers, changes reviewed again with forge bookkeeping so the acted-on rate has data)
and, last, ``SHOWCASE``: a review with a hostile finding title, a failed reviewer, skipped and cut
files, which the tests open in full.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from codejury.findings import Finding, SkippedFile
from codejury.record.model import ReviewRecord, record_from_review
from codejury.record.store import Store
from codejury.testing import review_seed as seed

REVIEWS = 90
HOSTILE_TITLE = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"> token check & "quotes"'
REPOS = ("github.com/acme/shop", "github.com/acme/api", "gitlab.example.com/infra/deploy")
MODELS = ("anthropic:claude-sonnet-4-5", "anthropic:claude-haiku-4-5", "openai:gpt-5-mini")
REVIEWERS = ("security", "performance", "code_quality", "documentation")
TIERS = {"trivial": (0.01, 12.0), "lite": (0.05, 45.0), "full": (0.30, 140.0)}
VERDICTS = ("approved", "approved_with_comments", "requested_changes")
CATEGORIES = {"security": "sql-injection", "performance": "n+1-query", "code_quality": "dead-code",
              "documentation": "stale-docstring"}  # fmt: skip


@dataclass(frozen=True)
class Seeded:
    records: list[ReviewRecord]
    showcase: ReviewRecord


def _findings(rng: random.Random, k: int) -> list[Finding]:
    out = []
    for i in range(k):
        who = rng.choice(REVIEWERS)
        out.append(
            seed.finding(
                who,
                f"src/module{i}.py",
                10 + 7 * i,
                title=f"{CATEGORIES[who]} in handler {i}",
                category=CATEGORIES[who],
                severity=rng.choice(("critical", "warning", "suggestion", "suggestion")),
            )  # fmt: skip
        )
    return out


def month_records(now: datetime, n: int = REVIEWS, rng: random.Random | None = None) -> list[ReviewRecord]:
    """``n`` reviews spread over the 30 days before ``now``, oldest first."""
    rng = rng or random.Random(7)
    records: list[ReviewRecord] = []
    previous: dict[tuple[str, str], ReviewRecord] = {}
    for i in range(n):
        at = now - timedelta(days=30) + timedelta(hours=1 + (30 * 24 - 2) * i / n)
        tier = rng.choices(list(TIERS), weights=(2, 5, 3))[0]
        base_cost, base_duration = TIERS[tier]
        repo = rng.choice(REPOS)
        key = (repo, f"#{rng.randrange(1, 12)}")
        earlier = None
        last = previous.get(key)
        if last is not None:
            earlier = {f.fingerprint: rng.choice(("fixed", "fixed", "open", "dismissed")) for f in last.findings}
        runs = [
            seed.reviewer(name, rng.choice(MODELS), tokens=rng.randrange(2000, 9000),
                          cache_read=rng.randrange(0, 2000), cost=base_cost / 4,
                          status="failed" if rng.random() < 0.05 else "ok")
            for name in REVIEWERS[: {"trivial": 1, "lite": 3, "full": 4}[tier]]
        ]  # fmt: skip
        kwargs = {
            "tier": tier, "verdict": rng.choice(VERDICTS), "findings": _findings(rng, rng.randrange(0, 4)),
            "reviewers": runs, "cost": round(base_cost * rng.uniform(0.5, 2.0), 4),
            "duration": round(base_duration * rng.uniform(0.5, 2.0), 1), "break_glass": rng.random() < 0.03,
        }  # fmt: skip
        record = seed.record(at, review_kwargs=kwargs, repository=key[0], change_id=key[1],
                             head_sha=f"{rng.getrandbits(160):040x}", earlier=earlier)  # fmt: skip
        previous[key] = record
        records.append(record)
    return records


def showcase_record(at: datetime) -> ReviewRecord:
    """The review the browser test opens: every part of a full review, and a hostile title."""
    review = seed.review(
        tier="full",
        verdict="requested_changes",
        findings=[
            seed.finding(title=HOSTILE_TITLE, evidence=["ruff S608"], verified=True),
            seed.finding(
                "performance",
                "shop/search.py",
                31,
                title="Query per item in a loop",
                severity="warning",
                category="n+1-query",
            ),  # fmt: skip
            seed.finding(
                "documentation",
                "README.md",
                3,
                title="Stale usage example",
                severity="suggestion",
                category="stale-docstring",
            ),  # fmt: skip
        ],
        reviewers=[
            seed.reviewer("security", MODELS[0], tokens=8000, cache_read=5000),
            seed.reviewer("performance", MODELS[0], status="failed", tokens=0),
            seed.reviewer("documentation", MODELS[1]),
        ],
        cost=0.4321,
        duration=98.5,
        dropped={"failed verification": 2},
    ).model_copy(
        update={
            "summary": "One injection and an N+1 query; the performance reviewer failed.",
            "skipped_files": [SkippedFile(path="package-lock.json", reason="lock file")],
            "cut_files": ["shop/huge_module.py"],
            "notes": ["semgrep was not installed: its rules did not run"],
        }
    )
    events = seed.events(repository=REPOS[0], change_id="#42", head_sha="b" * 40, failbacks=1)
    return record_from_review(review, events).model_copy(update={"recorded_at": at})


def seed_month(store: Store, now: datetime, n: int = REVIEWS) -> Seeded:
    records = month_records(now, n)
    showcase = showcase_record(now - timedelta(minutes=30))
    for record in [*records, showcase]:
        store.write(record)
    return Seeded(records=[*records, showcase], showcase=showcase)


def day_verdict_pairs(records: Sequence[ReviewRecord]) -> set[tuple[str, str]]:
    """The (UTC day, verdict) pairs among ``records``: one stacked bar segment each on a daily chart."""
    return {(r.recorded_at.strftime("%Y-%m-%d"), r.verdict) for r in records}
