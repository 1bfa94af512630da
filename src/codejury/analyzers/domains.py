"""Which reviewer owns an analyzer's hit: one table, read by the stage that hands candidates out.

``domain_for(evidence)`` names the built-in reviewer (``security``, ``performance``,
``code_quality``, ``release``, ``agents_md``, ``compliance``) that confirms or rejects a hit.
The table is ordered: the first row whose analyzer matches and whose rule starts with the row's
prefix wins. Rules of the packaged rule pack carry their domain in their id (``py-sql-injection``
is security because the pack says so in ``RULE_PACK_DOMAINS``); SARIF hits are sorted by the
words of their rule id and tags.
"""

from __future__ import annotations

from typing import Final, Literal

from codejury.evidence import Evidence

Domain = Literal["security", "performance", "code_quality", "release", "agents_md", "compliance"]

DOMAIN_TABLE: Final[tuple[tuple[str, str, Domain], ...]] = (
    # (analyzer, rule prefix, reviewer)
    ("ruff", "S113", "performance"),  # a request without a timeout hangs a worker
    ("ruff", "S", "security"),
    ("ruff", "ASYNC", "performance"),  # blocking calls inside async code
    ("ruff", "PERF", "performance"),
    ("ruff", "B019", "performance"),  # lru_cache on a method keeps every instance alive
    ("ruff", "", "code_quality"),  # bugbear B, pyflakes F (unused imports too), pylint errors PLE, RUF006
    ("secrets", "", "security"),
    ("rules", "perf-", "performance"),
    ("rules", "quality-", "code_quality"),
    ("rules", "", "security"),
    ("hadolint", "", "release"),
    ("drift", "changelog", "release"),
    ("drift", "agents-md", "agents_md"),
    ("team_rules", "", "compliance"),
    ("hygiene", "", "code_quality"),
    ("hidden_text", "", "security"),  # what a reviewer reads is not what runs (Trojan Source)
    ("zizmor", "", "security"),  # template injection, dangerous triggers, permissions, unpinned actions
    ("shellcheck", "", "code_quality"),
    ("oxlint", "", "code_quality"),
    ("cppcheck", "", "code_quality"),
    ("typos", "", "code_quality"),
    ("mypy", "", "code_quality"),
)
"""(analyzer, rule prefix, reviewer): the first matching row decides."""

_SECURITY_WORDS = ("secur", "inject", "sql", "xss", "cwe", "crypt", "secret", "password", "auth", "taint", "tls")
_PERFORMANCE_WORDS = ("perf", "slow", "complexity", "n+1", "quadratic", "alloc")


def domain_for(evidence: Evidence) -> Domain:
    """The built-in reviewer that owns this hit."""
    for analyzer, prefix, domain in DOMAIN_TABLE:
        if evidence.analyzer == analyzer and evidence.rule.startswith(prefix):
            return domain
    return domain_by_words(f"{evidence.rule} {evidence.message}")


def domain_by_words(text: str) -> Domain:
    """A domain guessed from a rule's id, tags and message (SARIF from tools we do not know)."""
    lowered = text.lower()
    if any(word in lowered for word in _SECURITY_WORDS):
        return "security"
    if any(word in lowered for word in _PERFORMANCE_WORDS):
        return "performance"
    return "code_quality"
