"""Text a reviewer cannot see, on the lines a change adds: a security hit, because it changes what people read.

- ``bidi-control`` (critical): a bidirectional control (U+202A–202E, U+2066–2069) reorders how a
  line is displayed, so the code that runs is not the code a reviewer reads (Trojan Source,
  CVE-2021-42574);
- ``tag-characters`` (critical): Unicode tag characters (U+E0000–E007F) spell ASCII text that no
  editor or forge shows, read by models as plain words (an emoji subdivision flag is left alone);
- ``zero-width`` (warning): two or more zero-width characters in a row, or one inside a word (an
  identifier that looks like another, a string that does not compare equal to what it shows).

Each hit names the characters as ``<U+XXXX>``. The lines come from the diff itself, so no head-side
tree is needed and nothing is skipped; the security reviewer confirms or rejects the hit, and a
rejected one is held like any security evidence (``judge.holds``).
"""

from __future__ import annotations

from codejury.analyzers.base import added_text, files_with_additions
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence
from codejury.findings import Severity
from codejury.guardrails.injection import invisible_hits, visible

_WHAT: dict[str, tuple[Severity, str, str]] = {
    "bidi-control": (
        "critical",
        "Bidirectional control character on an added line: the line displays in another order than it runs",
        "Trojan Source (CVE-2021-42574): remove the control, or write it as an escape (\\u202e) inside a string.",
    ),
    "tag-characters": (
        "critical",
        "Invisible Unicode tag characters on an added line",
        "They spell text that no editor or forge shows, but a model reads; remove them.",
    ),
    "zero-width": (
        "warning",
        "Zero-width characters on an added line",
        "An identifier or string that looks like another one; remove them, or write them as escapes.",
    ),
}


class HiddenTextAnalyzer:
    """Bidirectional controls, tag characters and zero-width runs on the added lines of every changed text file."""

    name = "hidden_text"

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        hits: list[Evidence] = []
        for file in files_with_additions(change):
            for number, text in added_text(file):
                if text.isascii():  # every character these rules look for is outside ASCII
                    continue
                rules = dict.fromkeys(rule for rule, _, _ in invisible_hits(text))
                for rule in rules:
                    severity, title, advice = _WHAT[rule]
                    hits.append(
                        Evidence(
                            analyzer=self.name,
                            rule=rule,
                            path=file.path,
                            start_line=number,
                            end_line=number,
                            severity=severity,
                            message=f"{title}\n{advice} The line reads: {visible(text)[:160]}",
                        )  # fmt: skip
                    )
        return hits
