"""Search terms of code: identifiers, lower-cased, with their camelCase and snake_case parts.

``parseHttpRequest`` gives ``parsehttprequest``, ``parse``, ``http``, ``request``, so a query in
words ("parse http request") and a query by name both find it. Keywords common to the indexed
languages are dropped: they are in every chunk and say nothing about it.
"""

from __future__ import annotations

import re
from functools import lru_cache

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_STOP = (
    "and as async await break case catch class const continue def default del do elif else "
    "end enum except export extends false finally fn for from func function go if impl import "
    "in interface is let match mut new nil none not null of or pass pub public "
    "private protected raise return self static struct super switch this throw true try type typeof use "
    "var void while with yield the int str string bool "
)
STOP_WORDS = frozenset(_STOP.split())


@lru_cache(maxsize=65_536)
def identifier_terms(identifier: str) -> tuple[str, ...]:
    """The terms of one identifier: itself lower-cased, then its parts when it has several."""
    lower = identifier.lower()
    parts = [p.lower() for p in _PARTS.findall(identifier)]
    own = () if lower in STOP_WORDS else (lower,)
    if len(parts) < 2:
        return own
    return own + tuple(p for p in parts if len(p) > 1 and p not in STOP_WORDS and p != lower)


def terms(text: str) -> list[str]:
    """The search terms of a piece of code or of a query, in order, repeats kept (BM25 counts them)."""
    out: list[str] = []
    for identifier in IDENTIFIER.findall(text):
        out.extend(identifier_terms(identifier))
    return out
