"""The keys a finding is remembered by: its rule, the rule's version and its code's shape (``codejury.memory``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from codejury.analyzers.domains import domain_for
from codejury.change.types import FileChange
from codejury.evidence import Evidence
from codejury.findings import Finding
from codejury.fingerprint import fingerprint, normalise_title
from codejury.render import tool_rule

RULE_CHARS = 300
"""The longest rule key kept (a reviewer's name and a long title)."""


@dataclass(frozen=True)
class MemoryKey:
    """One finding's keys: its fingerprint (within its change), rule, rule version and code shape."""

    fingerprint: str
    rule: str
    rule_version: str
    shape: str
    """"" when none of its lines is in the diff: such a finding is never matched."""


def rule_of(finding: Finding) -> str:
    """The analyzer rules that back ``finding`` (``ruff:S101,secrets:aws-key``), else ``reviewer:normalised title``."""
    rules = sorted(
        {f"{tool}:{rule}" for key in finding.evidence if (found := tool_rule(key)) for tool, rule in [found]}
    )
    text = ",".join(rules) if rules else f"{finding.reviewer}:{normalise_title(finding.title)}"
    return text[:RULE_CHARS]


def digest(text: str, length: int = 16) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def code_shape(finding: Finding, files: Mapping[str, FileChange]) -> str:
    """A digest of the new-side text of ``finding``'s lines shown in the diff, white space folded and blank lines
    left out; "" when none is shown."""
    change = files.get(finding.path)
    if change is None:
        return ""
    wanted = range(finding.start_line, max(finding.start_line, finding.end_line) + 1)
    texts = {ln.new_no: ln.text for h in change.hunks for ln in h.lines if ln.new_no in wanted}
    folded = [" ".join(texts[n].split()) for n in wanted if n in texts]
    folded = [line for line in folded if line]
    return digest("\n".join(folded)) if folded else ""


def security_backed(finding: Finding) -> bool:
    """An analyzer rule of the security domain backs ``finding``: memory alone never suppresses it."""
    for key in finding.evidence:
        found = tool_rule(key)
        if found is None:
            continue
        hit = Evidence(
            analyzer=found[0], rule=found[1], path=finding.path, start_line=1, end_line=1, severity="warning",
            message=finding.title,
        )  # fmt: skip
        if domain_for(hit) == "security":
            return True
    return False


def memory_keys(
    findings: Sequence[Finding], files: Sequence[FileChange], versions: Mapping[str, str]
) -> list[MemoryKey]:
    """The keys of each of ``findings``; ``versions`` maps a reviewer to its prompt's version (analyzer rules
    have none: their id is the rule)."""
    by_path = {f.path: f for f in files}
    return [
        MemoryKey(
            fingerprint(f),
            rule_of(f),
            "" if any(tool_rule(k) for k in f.evidence) else versions.get(f.reviewer, ""),
            code_shape(f, by_path),
        )
        for f in findings
    ]
