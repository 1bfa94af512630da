"""Analyzer evidence: deterministic tools run on the changed lines; their hits are candidates.

Built in (each registered through the ``codejury_register_analyzers`` hook, see ``builtins``):

- ``ruff``: ruff's security (``S``), bugbear (``B``), unused imports and a few precise error rules on changed
  Python files (``analyzers.ruff``);
- ``secrets``: detect-secrets on the added lines of every changed text file; a live provider
  key is a critical (``analyzers.secret_scan``);
- ``rules``: our ast-grep rule pack for classic defects in Python, JavaScript/TypeScript, Go,
  Java, PHP and Rust (``analyzers.rules``, rules in ``analyzers/rules/*.yml``);
- ``hadolint``: hadolint's release-breaking rules on changed Dockerfiles (``analyzers.hadolint``);
- ``drift``: a changelog entry for another version than the manifest's, and AGENTS.md / CLAUDE.md
  left behind by a new package manager, test runner or required environment variable
  (``analyzers.drift``);
- ``team_rules``: code a rule in ``.codejury/rules/*.md`` forbids by name ("never call
  `http.Get`") on an added line (``analyzers.team_rules``);
- ``hygiene``: an added JavaScript/TypeScript/Java import nothing uses, a file left without its
  final newline (``analyzers.hygiene``);
- ``hidden_text``: bidirectional controls, Unicode tag characters and zero-width runs on added
  lines, which make a line read differently than it runs (``analyzers.hidden_text``);
- linters installed with codejury as wheels, each run once over the change's files of its
  languages with a rule selection chosen for precision: ``shellcheck`` (shell scripts and workflow
  ``run:`` blocks), ``zizmor`` (GitHub Actions workflows), ``cppcheck`` (C/C++, error and warning),
  ``typos`` (misspellings), ``oxlint`` (JavaScript/TypeScript, correctness; off by default,
  ``OFF_BY_DEFAULT``: ``enable_analyzers = ["oxlint"]``), ``mypy`` (type errors that fail at run time
  on the changed Python files, read with the repository's head tree; off by default too).

``--evidence FILE`` adds SARIF from any other tool (``analyzers.sarif.SarifEvidence``).
``collect_evidence`` runs them all at once within a budget (``analyzers.runner``), and
``domain_for`` names the reviewer that owns each hit (``analyzers.domains``).
"""

from __future__ import annotations

from collections.abc import Sequence

from codejury.analyzers.base import Analyzer, AnalyzerFailed, AnalyzerSkipped
from codejury.analyzers.domains import DOMAIN_TABLE, Domain, domain_for
from codejury.analyzers.runner import EvidenceReport, collect_evidence

__all__ = [
    "DOMAIN_TABLE",
    "OFF_BY_DEFAULT",
    "Analyzer",
    "AnalyzerFailed",
    "AnalyzerSkipped",
    "Domain",
    "EvidenceReport",
    "builtin_analyzers",
    "chosen",
    "collect_evidence",
    "domain_for",
]


OFF_BY_DEFAULT: frozenset[str] = frozenset({"oxlint", "mypy"})
"""Registered analyzers that run only when ``enable_analyzers`` names them: fewer than half of their hits
were real problems by a hand check on real pull requests (docs/analyzers.md)."""


def chosen(analyzers: dict[str, object], *, enable: Sequence[str], disable: Sequence[str]) -> dict[str, object]:
    """The registered analyzers that run: those off by default only when ``enable`` names them, none that
    ``disable`` names."""
    return {
        name: a
        for name, a in analyzers.items()
        if name not in disable and (name not in OFF_BY_DEFAULT or name in enable)
    }


def builtin_analyzers() -> dict[str, Analyzer]:
    """The built-in analyzers by registered name, freshly made."""
    from codejury.analyzers.cppcheck import CppcheckAnalyzer
    from codejury.analyzers.drift import DriftAnalyzer
    from codejury.analyzers.hadolint import HadolintAnalyzer
    from codejury.analyzers.hidden_text import HiddenTextAnalyzer
    from codejury.analyzers.hygiene import HygieneAnalyzer
    from codejury.analyzers.mypy import MypyAnalyzer
    from codejury.analyzers.oxlint import OxlintAnalyzer
    from codejury.analyzers.ruff import RuffAnalyzer
    from codejury.analyzers.rules import RulePackAnalyzer
    from codejury.analyzers.secret_scan import SecretScanner
    from codejury.analyzers.shellcheck import ShellCheckAnalyzer
    from codejury.analyzers.team_rules import TeamRulesAnalyzer
    from codejury.analyzers.typos import TyposAnalyzer
    from codejury.analyzers.zizmor import ZizmorAnalyzer

    return {
        "ruff": RuffAnalyzer(),
        "secrets": SecretScanner(),
        "rules": RulePackAnalyzer(),
        "hadolint": HadolintAnalyzer(),
        "drift": DriftAnalyzer(),
        "team_rules": TeamRulesAnalyzer(),
        "hygiene": HygieneAnalyzer(),
        "hidden_text": HiddenTextAnalyzer(),
        "shellcheck": ShellCheckAnalyzer(),
        "zizmor": ZizmorAnalyzer(),
        "oxlint": OxlintAnalyzer(),
        "cppcheck": CppcheckAnalyzer(),
        "typos": TyposAnalyzer(),
        "mypy": MypyAnalyzer(),
    }
