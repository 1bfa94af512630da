"""Hidden markers: how codejury finds its own comments again and the state it left in them.

A marker is an HTML comment on the first line of a comment body (``with_marker``); forges
hide it when rendering and return it verbatim through the API::

    <!-- codejury:summary v1 {"head_sha":"…","findings":{"<fingerprint>":"open"},"verdict":"…"} -->
    <!-- codejury:finding v1 <fingerprint> -->

The summary carries what a re-review needs: the head commit last reviewed and every
fingerprint with its status (open, fixed, dismissed). Its JSON escapes ``<``, ``>`` and ``&``,
so it can never hold ``-->`` and end the comment early. Parsing answers None for anything
malformed (other version, broken JSON, unknown status, a head sha that is not hex) and
looks at the first line only; ``safety.safe_text`` removes marker lookalikes from untrusted
text.

Anyone can paste a marker into a comment (FORGES.md): trust one only on a comment written
by the bot's own user. ``trusted_summary`` and ``trusted_finding`` take the author's and the
bot's user ids and answer None when they differ; use them rather than the bare parsers on
comments read from a forge.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from codejury.findings import Verdict

FindingStatus = Literal["open", "fixed", "dismissed"]
FINGERPRINT_PATTERN = r"[A-Za-z0-9_.:/+=-]{1,200}"
Fingerprint = Annotated[str, StringConstraints(pattern=f"^{FINGERPRINT_PATTERN}$")]

_SUMMARY = re.compile(r"<!-- codejury:summary v1 (?P<state>\{.*\}) -->")
_FINDING = re.compile(rf"<!-- codejury:finding v1 (?P<fingerprint>{FINGERPRINT_PATTERN}) -->")
_JSON_IN_COMMENT = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


class SummaryState(BaseModel):
    """What the summary comment remembers between reviews of one merge request."""

    model_config = ConfigDict(frozen=True)

    head_sha: str = Field(pattern=r"^[0-9a-f]{7,64}$")
    findings: dict[Fingerprint, FindingStatus] = Field(default_factory=dict)
    verdict: Verdict | None = None


def summary_marker(head_sha: str, findings: Mapping[str, FindingStatus], verdict: Verdict | None = None) -> str:
    """The summary's marker; raises ValueError for a non-hex sha or a malformed fingerprint."""
    try:
        state = SummaryState(head_sha=head_sha, findings=dict(findings), verdict=verdict)
    except ValidationError as exc:
        raise ValueError(f"invalid summary state: {exc}") from exc
    return f"<!-- codejury:summary v1 {state.model_dump_json(exclude_none=True).translate(_JSON_IN_COMMENT)} -->"


def finding_marker(fingerprint: str) -> str:
    """An inline comment's marker; raises ValueError for a fingerprint outside ``FINGERPRINT_PATTERN``."""
    if re.fullmatch(FINGERPRINT_PATTERN, fingerprint) is None:
        raise ValueError(f"invalid fingerprint: {fingerprint!r}")
    return f"<!-- codejury:finding v1 {fingerprint} -->"


def with_marker(marker: str, body: str) -> str:
    """``body`` with ``marker`` as its first line, where the parsers look for it."""
    return f"{marker}\n{body}"


def _first_line(body: str) -> str:
    return body.split("\n", 1)[0].rstrip("\r")


def parse_summary(body: str) -> SummaryState | None:
    """The state in a summary marker on ``body``'s first line, or None. Trust it only on the bot's comments."""
    match = _SUMMARY.fullmatch(_first_line(body))
    if match is None or "-->" in match["state"]:
        return None
    try:
        return SummaryState.model_validate_json(match["state"])
    except ValidationError:
        return None


def parse_finding(body: str) -> str | None:
    """The fingerprint in a finding marker on ``body``'s first line, or None. Trust it only on the bot's comments."""
    match = _FINDING.fullmatch(_first_line(body))
    return None if match is None else match["fingerprint"]


def is_marker_line(line: str) -> bool:
    """Whether ``line`` is exactly one well-formed codejury marker."""
    return parse_summary(line) is not None or parse_finding(line) is not None


def trusted_summary(body: str, *, author_id: int | str, bot_id: int | str) -> SummaryState | None:
    """``parse_summary`` on a comment written by the bot's own user; None for anyone else's."""
    return parse_summary(body) if author_id == bot_id else None


def trusted_finding(body: str, *, author_id: int | str, bot_id: int | str) -> str | None:
    """``parse_finding`` on a comment written by the bot's own user; None for anyone else's."""
    return parse_finding(body) if author_id == bot_id else None
