"""Instruction-shaped text in what a review reads: pure, fast detectors (regular expressions and Unicode).

Everything a model reads from a change is data, fenced in our boundary tags (``agents.prompts``);
that fence is the defence. These detectors only say where the data looks like it is talking to the
model, so that the attempt is logged and shown to people. A hit never removes text and never
changes a verdict. False positives are acceptable (a document about prompts, a test of this very
module); a missed rephrasing is expected too.

``scan(text)`` returns one ``Hit`` per rule and line (the rule, the 1-based line, a short excerpt on
one line with invisible characters written as ``<U+202E>``). Rules (``RULES``):

- phrases addressed to the model: ``ignore-instructions`` ("ignore previous instructions", and the
  same in French, German, Spanish, Italian and Portuguese), ``role-change`` ("you are now", "from
  now on you", "act as the reviewer"), ``verdict-request`` ("approve this change", "report no
  findings", "do not flag");
- ``role-tag``: chat-template tokens (``<|im_start|>system``, ``[INST]``, ``<<SYS>>``) and a line
  that starts as a role speaks (``system:``, ``assistant:``);
- ``fake-block``: a made-up system, tool-result or instructions block (``<system>``,
  ``<function_results>``, ``BEGIN SYSTEM PROMPT``);
- ``boundary-tag``: one of codejury's own boundary tags (removed before fencing, and still logged);
- ``authority-claim``: an approval claimed for the gate ("pre-approved under SEC-2291", "security
  has signed off", "approved by the security team", "exempt from review");
- invisible text: ``tag-characters`` (U+E0000–E007F, ASCII smuggled invisibly), ``zero-width`` (a run
  of two or more zero-width characters, or one inside a word), ``bidi-control`` (U+202A–202E,
  U+2066–2069: Trojan Source);
- ``html-comment``: a comment hidden from the rendered page (only where ``hidden_comments`` is set:
  a change's description).

The phrase rules read the text with invisible characters removed and compatibility forms folded
(NFKC), so "ig\\u200bnore previous instructions" or full-width letters still match.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from codejury.agents.prompts import BOUNDARY_TAGS

RULES: dict[str, str] = {
    "ignore-instructions": "asks the model to ignore or replace its instructions",
    "role-change": "tells the model what it is now or how to act",
    "verdict-request": "asks for a verdict or for findings to be withheld",
    "role-tag": "a chat-template role token or a line speaking as a role",
    "fake-block": "a made-up system, tool-result or instructions block",
    "boundary-tag": "one of codejury's own boundary tags",
    "authority-claim": "claims an approval or sign-off aimed at the gate",
    "tag-characters": "invisible Unicode tag characters (U+E0000-E007F)",
    "zero-width": "a run of zero-width characters, or one inside a word",
    "bidi-control": "bidirectional control characters (Trojan Source)",
    "html-comment": "a comment hidden from the rendered description",
}
"""Every rule's name and what it means (the events, the store and the review's note name the rule)."""

EXCERPT_CHARS = 120
"""At most this many characters of the line around a hit are kept as its excerpt."""

BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u180e\ufeff"
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")
_TAG_CHARS = re.compile("[\U000e0000-\U000e007f]+")
_FLAG_TAGS = re.compile("\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f")
"""An emoji subdivision flag (England, Scotland, Wales): tag characters with a visible meaning."""
_ZERO_WIDTH = re.compile(f"[{ZERO_WIDTH}]{{2,}}|(?<=\\w)[{ZERO_WIDTH}](?=\\w)")
_INVISIBLE = re.compile(f"[{ZERO_WIDTH}\U000e0000-\U000e007f]")
_HTML_COMMENT = re.compile(r"<!--(.*?)(?:-->|\Z)", re.DOTALL)

_I = re.IGNORECASE
_PHRASES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "ignore-instructions",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass|skip|drop)\s+(?:(?:all|any|every|the|your|my|these|those|"
            r"of|everything)\s+){0,3}(?:(?:previous|prior|above|earlier|preceding|former|original|existing|system|"
            r"old|given)\s+){0,2}(?:instructions?|rules|prompts?|directions|guidelines|directives|guidance|context|"
            r"constraints|policies)\b"
            r"|\bignor(?:ez|e)\s+(?:toutes\s+)?les\s+(?:instructions|consignes)\s+(?:précédentes|ci-dessus)"
            r"|\bignorier(?:e|en)\s+(?:sie\s+)?(?:alle\s+)?(?:vorherigen|bisherigen|obigen)\s+(?:anweisungen|regeln)"
            r"|\bignor[ae]\s+(?:todas\s+)?(?:las|as|le)\s+(?:instrucciones|instruções|istruzioni)\s+"
            r"(?:anteriores|precedenti)",
            _I,
        ),
    ),
    (
        "role-change",
        re.compile(
            r"\byou\s+are\s+now\b|\bfrom\s+now\s+on,?\s+you\b|\byour\s+new\s+(?:role|task|instructions)\b"
            r"|\bnew\s+instructions\s*:|\bact\s+as\s+(?:a|an|the)\s+\w*\s*(?:reviewer|assistant|model|bot|admin)\b"
            r"|\bpretend\s+(?:to\s+be|you\s+are)\b|\bdu\s+bist\s+(?:jetzt|nun)\b|\btu\s+es\s+maintenant\b"
            r"|\bahora\s+eres\b",
            _I,
        ),
    ),
    (
        "verdict-request",
        re.compile(
            r"\bapprove\s+(?:this|the|my)\s+(?:change|pr|mr|pull\s+request|merge\s+request|diff|commit|patch|code)\b"
            r"|\b(?:report|return|output|give|list)\s+(?:no|zero|0|an\s+empty\s+list\s+of)\s+(?:findings|issues|"
            r"problems|comments)\b"
            r"|\b(?:do\s+not|don'?t|never)\s+(?:report|flag|mention|raise|comment\s+on)\s+(?:this|these|it|them|any|"
            r"findings?|issues?|problems?|vulnerabilit\w*|the\s+(?:issue|problem|finding|vulnerability|injection))\b"
            r"|\b(?:mark|treat)\s+(?:this|it|the\s+change)\s+as\s+(?:safe|approved|secure|clean)\b"
            r"|\bverdict\s*[:=]\s*\"?approved?\b|\"findings\"\s*:\s*\[\s*\]"
            r"|\bapprouve[rz]?\s+(?:ce|cette)\s+(?:changement|modification)\b|\bgenehmige\s+(?:diese|den)\b"
            r"|\baprueba\s+(?:este|esta)\s+(?:cambio|pr)\b",
            _I,
        ),
    ),
    (
        "role-tag",
        re.compile(
            r"<\|\s*(?:im_start|im_end|system|user|assistant|start_header_id|end_header_id|eot_id|endoftext)\s*\|>"
            r"|\[/?INST\]|<</?SYS>>|^\s*(?:#{1,3}\s*)?(?:system|assistant|developer)\s*(?:prompt)?\s*:",
            _I | re.MULTILINE,
        ),
    ),
    (
        "fake-block",
        re.compile(
            r"</?\s*(?:system|system_prompt|instructions|tool_response|tool_output|function_results?|"
            r"function_calls|admin|developer)\s*>"
            r"|\b(?:begin|end)\s+(?:of\s+)?(?:the\s+)?(?:system\s+prompt|system\s+message|user\s+input|"
            r"tool\s+output|instructions)\b",
            _I,
        ),
    ),
    (
        "boundary-tag",
        re.compile(r"<\s*/?\s*(?:" + "|".join(BOUNDARY_TAGS) + r")\b[^>]*>", _I),
    ),
    (
        "authority-claim",
        re.compile(
            r"\bpre-?approved\b|\b(?:security|appsec|infosec|compliance)(?:\s+team)?\s+(?:has|have)\s+"
            r"(?:already\s+)?(?:signed\s+off|approved|reviewed|cleared|audited)"
            r"|\b(?:approved|signed\s+off|cleared|vetted|audited)\s+by\s+(?:the\s+)?(?:security|appsec|infosec|"
            r"compliance|ciso|legal)\b"
            r"|\b(?:security|sec)\s+(?:exception|waiver|sign-?off)\s+(?:granted|approved|on\s+file|[A-Z]+-\d+)"
            r"|\bexempt(?:ed)?\s+from\s+(?:the\s+)?(?:security\s+)?(?:review|scanning|checks)\b",
            _I,
        ),
    ),
)


FIRST_CHARACTERS: dict[str, str] = {
    "ignore-instructions": "bdfios",
    "role-change": "adfnpty",
    "verdict-request": '"adglmnortv',
    "fake-block": "<be",
    "authority-claim": "aceipsv",
}
"""Every character a match of the rule can start with (in any case): a lookahead on them lets the
regular expression engine skip the rest of a text at C speed (a test checks each set against its
pattern). A rule not named here is searched as it stands."""
_SEARCHED: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (rule, re.compile(f"(?=[{FIRST_CHARACTERS[rule]}])(?:{p.pattern})", p.flags) if rule in FIRST_CHARACTERS else p)
    for rule, p in _PHRASES
)


@dataclass(frozen=True)
class Hit:
    """One rule that matched on one line of a text."""

    rule: str
    line: int
    """1-based line of the text (for a text of one line, 1)."""
    excerpt: str
    """At most ``EXCERPT_CHARS`` characters around the match, on one line, invisible characters written out."""


def visible(text: str) -> str:
    """``text`` on one line with every invisible or bidirectional control written as ``<U+XXXX>``."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in BIDI_CONTROLS or ch in ZERO_WIDTH or 0xE0000 <= code <= 0xE007F or unicodedata.category(ch) == "Cc":
            out.append(" " if ch in "\t\n\r" else f"<U+{code:04X}>")
        else:
            out.append(ch)
    return " ".join("".join(out).split())


def _excerpt(line: str, start: int, end: int) -> str:
    room = max(0, EXCERPT_CHARS - (end - start)) // 2
    lo, hi = max(0, start - room), min(len(line), end + room)
    text = visible(line[lo:hi])
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS]
    return ("…" if lo > 0 else "") + text + ("…" if hi < len(line) else "")


def normalised(text: str) -> str:
    """``text`` as the phrase rules read it: invisible characters removed, compatibility forms folded."""
    return unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))


def invisible_hits(line: str) -> Iterator[tuple[str, int, int]]:
    """The invisible-text rules on one line: (rule, start, end) of each match."""
    for match in _BIDI.finditer(line):
        yield "bidi-control", match.start(), match.end()
    flags = [m.span() for m in _FLAG_TAGS.finditer(line)]
    for match in _TAG_CHARS.finditer(line):
        if not any(lo <= match.start() and match.end() <= hi for lo, hi in flags):
            yield "tag-characters", match.start(), match.end()
    for match in _ZERO_WIDTH.finditer(line):
        yield "zero-width", match.start(), match.end()


def _lines(text: str) -> list[str]:
    return text.split("\n")


def scan(text: str, *, hidden_comments: bool = False, one_line_phrases: bool = False) -> list[Hit]:
    """Every rule that matches ``text``, once per rule and line, in line order.

    ``one_line_phrases``: each line of ``text`` is a text of its own (a file's added lines, joined to
    be read in one pass): a phrase is only looked for within one line, as if each were scanned alone.
    """
    hits: dict[tuple[str, int], Hit] = {}
    raw_lines = _lines(text)
    if not text.isascii():  # every invisible character is outside ASCII
        for number, line in enumerate(raw_lines, start=1):
            for rule, start, end in invisible_hits(line):
                hits.setdefault((rule, number), Hit(rule, number, _excerpt(line, start, end)))
    folded = text if text.isascii() else normalised(text)
    folded_lines = _lines(folded)
    starts = [0]
    for line in folded_lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    for rule, pattern in _SEARCHED:
        rescan: set[int] = set()
        for match in pattern.finditer(folded):
            number = bisect.bisect_right(starts, match.start())
            if one_line_phrases and "\n" in match.group(0):
                rescan.update(range(number, bisect.bisect_right(starts, match.end() - 1) + 1))
                continue
            line = folded_lines[number - 1]
            start = match.start() - starts[number - 1]
            end = min(len(line), start + (match.end() - match.start()))
            hits.setdefault((rule, number), Hit(rule, number, _excerpt(line, start, end)))
        for number in sorted(rescan):  # a match across lines hid what the lines hold alone
            line = folded_lines[number - 1]
            for match in pattern.finditer(line):
                hits.setdefault((rule, number), Hit(rule, number, _excerpt(line, match.start(), match.end())))
    if hidden_comments:
        for match in _HTML_COMMENT.finditer(text):
            if match.group(1).strip():
                number = text.count("\n", 0, match.start()) + 1
                body = " ".join(match.group(1).split())
                hits.setdefault(("html-comment", number), Hit("html-comment", number, _excerpt(body, 0, 0)))
    return sorted(hits.values(), key=lambda h: (h.line, h.rule))


def rules_of(hits: Iterable[Hit]) -> set[str]:
    """The names of the rules among ``hits``."""
    return {h.rule for h in hits}
