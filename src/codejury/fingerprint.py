"""Stable identities for findings, so the same issue can be recognised across pushes and re-runs.

``fingerprint(finding)`` is 16 hex characters of a sha256 over three things:

- the path, as given (repository-relative);
- the category, lower-cased and stripped;
- the title, normalised: lower-cased, digits and punctuation removed, whitespace collapsed
  (models reword numbers and punctuation from run to run: "Query in loop (3 calls)" and
  "query in loop: 4 calls" are one issue).

Line numbers are deliberately left out. A push that adds ten lines above a finding moves it ten
lines down without changing it, and a re-run of the same change may anchor it a line earlier or
later. A line-keyed id would report every unchanged issue as "fixed" plus "new" on each push,
close and reopen code-scanning alerts, and defeat re-review bookkeeping. The reviewer, severity,
body and confidence are left out too: the judge may move a finding between sections or change
its severity, and the body is free prose. The price is that two findings with the same path,
category and title in one file share a fingerprint; ``unique_fingerprints`` separates them
deterministically for formats that need one id per entry, and ``location_fingerprint`` adds the
start line for consumers that want line-specific identity.

The exact recipe is versioned by its users (SARIF stores it under ``codejury/v1``): changing it
changes every id, so treat it as part of the output contract.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from codejury.findings import Finding

_LENGTH = 16
_NOT_WORDS = re.compile(r"[^\w\s]|[\d_]")


def normalise_title(title: str) -> str:
    """The title as the fingerprint sees it: lower-case, no digits or punctuation, single spaces."""
    return " ".join(_NOT_WORDS.sub("", title.lower()).split())


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:_LENGTH]


def fingerprint(finding: Finding) -> str:
    """A 16-hex-char id of the finding that survives line shifts: path, category and normalised title."""
    return _digest(finding.path, finding.category.strip().lower(), normalise_title(finding.title))


def location_fingerprint(finding: Finding) -> str:
    """Like ``fingerprint`` but also keyed on the start line, for line-specific identity."""
    return _digest(fingerprint(finding), str(finding.start_line))


def unique_fingerprints(findings: Sequence[Finding]) -> list[str]:
    """``fingerprint`` of each finding, in order, made unique within the list.

    Findings sharing a fingerprint are ordered by position (start line, end line, then list order);
    the first keeps the plain fingerprint, the n-th gets ``-n`` appended. The first occurrence's id
    therefore survives line shifts as ``fingerprint`` does.
    """
    plain = [fingerprint(f) for f in findings]
    groups: dict[str, list[int]] = {}
    for i, fp in enumerate(plain):
        groups.setdefault(fp, []).append(i)
    out = list(plain)
    for fp, indexes in groups.items():
        ordered = sorted(indexes, key=lambda i: (findings[i].start_line, findings[i].end_line, i))
        for n, i in enumerate(ordered[1:], start=2):
            out[i] = f"{fp}-{n}"
    return out
