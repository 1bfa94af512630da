"""The walkthrough in the merge request's description, between codejury's markers (``describe_in = "description"``).

The block codejury owns in a description is::

    <!-- codejury:walkthrough v1 <digest> -->
    ...the walkthrough, as the summary comment would show it...
    <!-- /codejury:walkthrough -->

``<digest>`` is the first 16 hex digits of the SHA-256 of the text between the markers (line endings
normalised to ``\\n``, outer whitespace stripped: a browser that saves the description with ``\\r\\n`` keeps it
valid). A block counts as codejury's only when its digest matches its text and no other start marker lies inside
it; of those, the LAST one is replaced on the next push. So marker text the author writes in their own text (a
quoted example, a stray start marker, an end marker placed to swallow a paragraph) is never taken for codejury's
block: codejury neither overwrites the author's text around it nor keeps what the author wrote between markers
as its own. Every byte outside the block is kept; when there is no block, one is appended after a blank line.

On GitLab a description holding a quick action (``/merge`` at the start of a line) is never saved by codejury
(``runs_quick_actions``): GitLab would run it as codejury's user; the walkthrough stays in the summary comment.

The text inside is the walkthrough through ``safety`` (``walkthrough_section``), which strips anything shaped
like a codejury marker, so codejury's own text can never end its block early. ``without_walkthrough`` removes
the block again where the description is read as the author's words (the reviewers' context).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable

from codejury.findings import Walkthrough
from codejury.forges.errors import ForgeAuthError, ForgeRefused
from codejury.forges.safety import check_published, checked, inline_code
from codejury.forges.summary import walkthrough_section

_START = re.compile(r"<!-- codejury:walkthrough v1 (?P<digest>[0-9a-f]{16}) -->")
END = "<!-- /codejury:walkthrough -->"
IN_DESCRIPTION = "The walkthrough of this change is in its description."
"""The summary comment's one line when the walkthrough went to the description."""
_COMMIT = re.compile(r"<sub>codejury · walkthrough of commit `(?P<sha>[0-9a-f]{7,64})`</sub>")


def digest(text: str) -> str:
    """The digest a block's start marker carries for ``text`` (its lines as ``\\n``, outer whitespace stripped)."""
    normal = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:16]


def walkthrough_block(walkthrough: Walkthrough, head_sha: str = "") -> str:
    """The whole block (markers included) for ``walkthrough`` of commit ``head_sha`` (named in its last line, so a
    block a later push could not replace is seen to be older), its text checked for publishing."""
    lines = walkthrough_section(walkthrough)
    if re.fullmatch(r"[0-9a-f]{7,64}", head_sha):
        lines = [*lines, f"<sub>codejury · walkthrough of commit {inline_code(head_sha[:12])}</sub>"]
    text = checked("\n".join(lines).strip() + "\n")
    return f"<!-- codejury:walkthrough v1 {digest(text)} -->\n{text}{END}"


def block_span(description: str) -> tuple[int, int] | None:
    """Where codejury's block is in ``description`` (start, end offsets, markers included), or None: the last
    block whose digest matches its text and that holds no other start marker."""
    found: tuple[int, int] | None = None
    for start in _START.finditer(description):
        end = description.find(END, start.end())
        if end < 0:
            continue
        inner = description[start.end() : end]
        if _START.search(inner) is None and digest(inner) == start["digest"]:
            found = (start.start(), end + len(END))
    return found


def described_commit(description: str) -> str:
    """The commit (its first 12 digits) that codejury's block in ``description`` names; "" without a block or a
    commit in it."""
    span = block_span(description)
    found = _COMMIT.search(description, span[0], span[1]) if span is not None else None
    return found["sha"] if found is not None else ""


def earlier_walkthrough_notice(described: str, head_sha: str) -> str | None:
    """The summary's one line when the description's walkthrough (of commit ``described``) is of another commit
    than ``head_sha``, the one this review describes; None when it is of this one or there is none."""
    if not described or head_sha.startswith(described):
        return None
    return f"The walkthrough in the description describes an earlier commit, {inline_code(described)}, not this one."


def with_walkthrough(description: str, block: str) -> str:
    """``description`` with codejury's block replaced by ``block``, or ``block`` appended; the rest kept as is."""
    span = block_span(description)
    if span is not None:
        return description[: span[0]] + block + description[span[1] :]
    if not description.strip():
        return block
    gap = "" if description.endswith("\n\n") else "\n" if description.endswith("\n") else "\n\n"
    return description + gap + block


def runs_quick_actions(description: str) -> bool:
    """Whether GitLab would read a line of ``description`` as a quick action (``/merge`` at the start of a line
    outside a code fence): saved by codejury, it would run as codejury's user, with codejury's rights, so codejury
    does not save such a description (a command its author may not run stays in the text GitLab stores)."""
    return any("quick action" in problem for problem in check_published(description))


def without_walkthrough(description: str) -> str:
    """``description`` without codejury's block: the author's own words (a reviewer reads no earlier walkthrough)."""
    span = block_span(description)
    if span is None:
        return description
    return (description[: span[0]].rstrip() + "\n\n" + description[span[1] :].lstrip()).strip()


async def placed(
    block: str,
    current: str,
    write: Callable[[str], Awaitable[object]],
    posted: list[str],
    *,
    forge: str,
    limit: int,
    hint: str,
) -> str | None:
    """Write ``current`` (the description just read) with ``block`` in it through ``write``, unless it is there
    already; None when it is there, else why not: too long for ``forge`` (``limit`` characters) or the token may not
    edit it (403, or 404/422 where the forge answers so), ``hint`` saying what the token needs."""
    wanted = with_walkthrough(current, block)
    if wanted == current:
        return None
    if len(wanted) > limit:
        return f"the description would pass {forge}'s {limit:,} characters"
    try:
        await write(wanted)
    except (ForgeAuthError, ForgeRefused) as exc:
        if exc.status not in (403, 404, 422):
            raise
        return f"{forge} refused to let the token edit the description ({exc.status}); {hint}"
    posted.append("walkthrough in the description")
    return None
