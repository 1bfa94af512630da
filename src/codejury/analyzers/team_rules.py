"""The team's own "never use X" rules, checked on the added lines: the compliance reviewer's evidence.

A team writes its rules in ``.codejury/rules/*.md`` (read on the base side, as the compliance
reviewer reads them). Where a rule forbids code by name, in backticks, in a sentence that says
so (``Never call `http.Get` or `http.DefaultClient` ...``, ``Do not use `print()` in service
code``), an added line that uses that code is a hit (rule ``forbidden-code``, a warning, owned
by the compliance reviewer, which confirms it or not). A small model misses these on its own:
on the bundled golden set the compliance reviewer found neither team rule that was broken.

What counts as forbidden code: a backticked span in a sentence with "never", "do not", "don't",
"must not", "avoid" or "no" (as in "no `print()`"), that looks like code (a call ``name()``, a
dotted name ``pkg.Name``, or an expression with ``&``, ``{`` or ``::``), and is not a path.
A backticked path ending in ``/`` in the same sentence with "may", "except" or "allowed"
exempts the files under it (``scripts under `scripts/` may``). Markdown, the rules themselves and
comment-only lines are not checked. Nothing here understands prose beyond that: a rule without
code in backticks is left to the compliance reviewer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from codejury.analyzers.base import AnalyzerSkipped, added_text
from codejury.change.types import BaseReader, ChangeSet, FileChange
from codejury.evidence import Evidence

RULES_DIR = ".codejury/rules"
MAX_RULE_FILES = 50
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z`(])|\n\s*[-*+]\s+|\n\s*\d+[.)]\s+|\n{2,}")
_FORBIDS = re.compile(r"\b(?:never|do not|don't|must not|must never|should not|avoid|no)\b", re.IGNORECASE)
_EXEMPTS = re.compile(r"\b(?:may|except|allowed|exempt)\b", re.IGNORECASE)
_SPAN = re.compile(r"`([^`\n]{2,60})`")
_CODE_LIKE = re.compile(r"^[&*]?[A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_]\w*)*(?:\(\)|\{\})?$")
_COMMENT_ONLY = re.compile(r"^\s*(?:#|//|/\*|\*|--|<!--)")
_NOT_CODE_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc")


@dataclass(frozen=True)
class Forbidden:
    """One piece of code a team rule forbids: its text, how it is found, and the rule's words."""

    code: str
    pattern: re.Pattern[str]
    rule_file: str
    sentence: str
    exempt: tuple[str, ...]


class TeamRulesAnalyzer:
    """Code a rule in ``.codejury/rules/*.md`` forbids by name, on the lines the change adds."""

    name = "team_rules"

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        checked = [f for f in change.files if _is_code(f)]
        if not checked:
            return []
        if change.base is None:
            raise AnalyzerSkipped("team_rules skipped: the base side cannot be read (a diff without --repo)")
        forbidden = list(forbidden_code(change.base))
        return [hit for f in checked for hit in _hits(f, forbidden)]


def forbidden_code(base: BaseReader) -> Iterator[Forbidden]:
    """Every piece of code the team's rule files forbid by name."""
    paths = sorted(p for p in base.list_dir(RULES_DIR) if p.endswith(".md"))[:MAX_RULE_FILES]
    for path in paths:
        text = base.read_text(path)
        if text is None:
            continue
        for sentence in _SENTENCE_END.split(text):
            yield from parse_sentence(sentence, path)


def parse_sentence(sentence: str, rule_file: str) -> Iterator[Forbidden]:
    """The code one sentence of a rule forbids (none when it forbids nothing by name)."""
    words = _SPAN.sub(" ", sentence)
    if not _FORBIDS.search(words):
        return
    spans = _SPAN.findall(sentence)
    exempt = tuple(s for s in spans if s.endswith("/")) if _EXEMPTS.search(words) else ()
    said = " ".join(sentence.split())
    for span in spans:
        code = span.strip()
        if code.endswith("/") or not _CODE_LIKE.match(code) or not _looks_like_code(code):
            continue
        yield Forbidden(code, _pattern(code), rule_file, said[:300], exempt)


def _looks_like_code(code: str) -> bool:
    """A call, a dotted or qualified name, or an expression: not a plain word like `ctx`."""
    return code.endswith(("()", "{}")) or "." in code or "::" in code or code.startswith(("&", "*"))


def _pattern(code: str) -> re.Pattern[str]:
    """How ``code`` is found on a line: a call by its name and an open parenthesis, a name on word bounds."""
    if code.endswith("()"):
        return re.compile(r"(?<![\w.])" + re.escape(code[:-2]) + r"\s*\(")
    if code.endswith("{}"):  # a composite literal, with or without fields: `&http.Client{Timeout: t}`
        code = code[:-1]
    lead = r"(?<![\w.])" if code[0].isalnum() or code[0] == "_" else ""
    tail = r"(?!\w)" if code[-1].isalnum() or code[-1] == "_" else ""
    return re.compile(lead + re.escape(code) + tail)


def _is_code(file: FileChange) -> bool:
    path = file.path
    return (
        file.status != "deleted"
        and not file.is_binary
        and bool(file.additions)
        and not path.lower().endswith(_NOT_CODE_SUFFIXES)
        and not path.startswith(RULES_DIR + "/")
    )


def _hits(file: FileChange, forbidden: list[Forbidden]) -> Iterator[Evidence]:
    for rule in forbidden:
        if any(file.path.startswith(prefix) for prefix in rule.exempt):
            continue
        for number, text in added_text(file):
            if _COMMENT_ONLY.match(text) or not rule.pattern.search(text):
                continue
            yield Evidence(
                analyzer="team_rules",
                rule="forbidden-code",
                path=file.path,
                start_line=number,
                end_line=number,
                severity="warning",
                message=(  # the first line is the title when no model rewrites it
                    f"`{rule.code}` is used here, which the team rule in {rule.rule_file} forbids\n"
                    f'The rule says: "{rule.sentence}" Follow it, or change the rule in a change of its own.'
                ),
            )
            break  # one hit per rule and file: the first use; the reviewer reads the rest
