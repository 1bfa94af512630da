"""Text safety: what every comment codejury posts on GitLab or GitHub goes through.

Untrusted text (model-written titles and bodies, quoted replies, MR titles) goes through
``safe_text`` (or ``safe_line`` for one-line places), code through ``safe_code``,
``suggestion_block`` or ``inline_code``, and the finished body through ``check_published``
(``checked`` raises ``UnsafeBody`` on a problem) before it is posted. What "safe" means (FORGES.md):

- **No quick action.** GitLab runs a line starting with ``/approve``, ``/merge``... at
  column 0, as the token's user. Prose lines whose first non-space character is ``/`` get a
  backslash (``\\/merge`` renders as ``/merge``). Older GitLab finds code blocks with a
  regex that only knows a fence of exactly three backticks, so inside our longer fences a
  command-shaped line (``/word`` alone or followed by a space) gets a leading space too.
- **No mention.** ``@all``, ``@here``, ``@group/team``, any ``@name``: wrapped in a
  ``<code>`` element, which neither forge scans for mentions. ``&`` is escaped so ``&#64;``
  cannot spell one either.
- **No broken structure.** ``<`` is escaped outside code, so no ``<details>``, ``</details>``,
  HTML comment or script survives; the text's code fences and inline code spans are
  re-emitted by us, fences at column 0 and closed (an unclosed fence ends with the text),
  spans on one line, so none can swallow the rest of the comment.
- **No marker.** Anything that looks like one of our markers is removed (``markers``).
- **No secret.** The last step before anything is posted: ``scrub_payload`` replaces every known
  secret value (``codejury.secrets.Redactor``: the run's credentials and the forge token, in the
  forms a model could echo them) in every string of the request body, whatever part of the
  comment or check run it is in, and checks that a body that was safe is still safe after it.
  The forge clients call it on every write, so no body reaches a forge without it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from codejury.errors import InternalError
from codejury.forges.markers import is_marker_line
from codejury.render import clean_text, one_line
from codejury.secrets import Redactor

_FENCE_OPEN = re.compile(r"(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(?P<fence>`{3,}|~{3,})[ \t]*")
_BACKTICKS = re.compile(r"`+")
_LANG = re.compile(r"[A-Za-z0-9_+#.-]*")
_MARKER_LIKE = re.compile(r"<!--\s*codejury(?:[^\n]*?-->|[^\n]*)", re.IGNORECASE)
# The shape GitLab's extractor matches: /name alone or followed by whitespace (names are ASCII).
_COMMAND_IN_CODE = re.compile(r"/[A-Za-z][A-Za-z0-9_-]*(?:\s|$)")
_QUICK_ACTION = re.compile(r"^([^\S\n]*)/", re.MULTILINE)
_TILDE_FENCE = re.compile(r"^([^\S\n]*)(?=~~~)", re.MULTILINE)
# In text: a mention (with the backslash that may escape its @; "_" counts as a boundary, as it
# may open emphasis, and a run of mentions is wrapped whole), a backslash escape to keep whole,
# a "\@" that renders as a plain @, "<" or "&" (escaped or not), a lone backtick.
_HAZARD = re.compile(
    r"(?P<mention>(?<![A-Za-z0-9])(?<![A-Za-z0-9]\\)\\?@(?P<name>[A-Za-z0-9_.](?:[A-Za-z0-9_./@-]|\\@)*))"
    r"|(?P<pair>\\[\\`])"
    r"|(?P<at>\\@)"
    r"|\\?(?P<html>[<&])"
    r"|(?P<tick>`)"
)
_SPAN_TOKENS = re.compile(r"\\[\s\S]|`+")
_CHECK_TOKENS = re.compile(r"\\.|`+|<code>[^<`\n]*</code>")

# check_published
_MENTION = re.compile(r"(?<![A-Za-z0-9])@[A-Za-z0-9_.][A-Za-z0-9_./-]*")
_ENCODED_AT = re.compile(r"&(?:#0*64|#x0*40|commat);", re.IGNORECASE)
_TAG = re.compile(r"<[A-Za-z/!?][^<>\n]*>?")
_ALLOWED_TAG = re.compile(r"</?(?:details|summary|sub|sup|b|i|em|strong|kbd)>|<details open>|<br ?/?>", re.I)
_HTML_START = re.compile(r" {0,3}<(?!code>[^<`\n]*</code>)[A-Za-z/!?]")
_PIPE = re.compile(r"\|")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)(?:\\\\)*\|")
_FENCE_LIKE = re.compile(r"\s*(?:`{3,}[^`]*|~{3,}.*)")


@dataclass(frozen=True)
class _Block:
    """A run of lines: prose (``fence`` empty) or a fenced code block without its fence lines."""

    start: int
    lines: list[str]
    fence: str = ""
    info: str = ""
    indent: int = 0
    closed: bool = True


def _blocks(lines: list[str]) -> list[_Block]:
    """Split lines into prose and fenced code the way CommonMark finds top-level fences."""
    blocks: list[_Block] = []
    prose_start, i = 0, 0
    while i < len(lines):
        m = _FENCE_OPEN.fullmatch(lines[i])
        if m is None or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        if prose_start < i:
            blocks.append(_Block(prose_start, lines[prose_start:i]))
        fence = m["fence"]
        end = next((j for j in range(i + 1, len(lines)) if _closes(lines[j], fence)), None)
        body = lines[i + 1 : len(lines) if end is None else end]
        blocks.append(_Block(i, body, fence, m["info"].strip(), len(m["indent"]), end is not None))
        i = prose_start = len(lines) if end is None else end + 1
    if prose_start < len(lines):
        blocks.append(_Block(prose_start, lines[prose_start:]))
    return blocks


def _closes(line: str, fence: str) -> bool:
    m = _FENCE_CLOSE.fullmatch(line)
    return m is not None and m["fence"][0] == fence[0] and len(m["fence"]) >= len(fence)


@dataclass(frozen=True)
class _Code:
    """Inline code found in text: a backtick span (``ticks`` > 0), a ``<code>`` element
    (``ticks`` 0), or a backtick run with no closer (``closed`` False)."""

    start: int
    end: int
    ticks: int
    closed: bool = True


def _inline_code(text: str, tokens: re.Pattern[str]) -> Iterator[_Code]:
    """Inline code in ``text``, scanned left to right as CommonMark does (backslash escapes first)."""
    pos = 0
    while (m := tokens.search(text, pos)) is not None:
        token, pos = m[0], m.end()
        if token[0] == "\\":
            continue
        if token[0] == "<":
            yield _Code(m.start(), m.end(), 0)
            continue
        close = re.compile(f"(?<!`){token}(?!`)").search(text, pos)
        if close is None:
            yield _Code(m.start(), m.end(), len(token), closed=False)
            continue
        yield _Code(m.start(), close.end(), len(token))
        pos = close.end()


def _strip_markers(text: str) -> str:
    while (stripped := _MARKER_LIKE.sub("", text)) != text:
        text = stripped
    return text


def _defuse(match: re.Match[str]) -> str:
    if match["name"] is not None:
        return "<code>@" + match["name"].replace("_", "\\_") + "</code>"
    if match["pair"] is not None:
        return match["pair"]
    if match["at"] is not None:
        return "@"
    if match["html"] is not None:
        return "&lt;" if match["html"] == "<" else "&amp;"
    return "\\`"


def _safe_prose(text: str) -> str:
    """Prose with its code spans re-emitted on one line and everything else defused."""
    out, pos = [], 0
    for code in _inline_code(text, _SPAN_TOKENS):
        if code.closed:
            out.append(_HAZARD.sub(_defuse, text[pos : code.start]))
            out.append(inline_code(text[code.start + code.ticks : code.end - code.ticks]))
            pos = code.end
    out.append(_HAZARD.sub(_defuse, text[pos:]))
    return _TILDE_FENCE.sub(r"\1\\", _QUICK_ACTION.sub(r"\1\\/", "".join(out)))


def safe_text(text: str) -> str:
    """Untrusted Markdown made safe to publish: no quick action, mention, raw HTML or marker;
    its code fences re-emitted balanced (``safe_code``), its inline code on one line."""
    text = _strip_markers(clean_text(text))
    out: list[str] = []
    for block in _blocks(text.split("\n")):
        if not block.fence:
            out.append(_safe_prose("\n".join(block.lines)))
            continue
        lines = [line[min(block.indent, len(line) - len(line.lstrip(" "))) :] for line in block.lines]
        while not block.closed and lines and not lines[-1].strip():
            lines.pop()  # an unclosed fence ends with the text, not with its trailing blank lines
        out.append(_fence(lines, _lang(block.info)))
    return "\n".join(out)


def safe_line(text: str) -> str:
    """Untrusted text for a one-line place (a title, a table cell): ``safe_text`` on one line."""
    return _safe_prose(_strip_markers(one_line(text)))


def inline_code(text: str) -> str:
    """``text`` as inline code on one line: a backtick span, or a ``<code>`` element when the
    text holds a ``|`` (a table would split a backtick span there)."""
    text = clean_text(text).replace("\n", " ")
    if "|" in text or not text.strip(" "):
        escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace("`", "&#96;")
        return "<code>" + re.sub(r"([\\*_\[\]|~])", r"\\\1", escaped) + "</code>"
    ticks = "`" * (_longest_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def safe_code(code: str, lang: str = "") -> str:
    """``code`` in a backtick fence longer than any backtick run inside, so it cannot be closed
    early; ``lang`` is reduced to a plain language name (never ``suggestion``)."""
    return _fence(_code_lines(code), _lang(lang))


def suggestion_block(replacement: str, lines_above: int = 0, lines_below: int = 0) -> str:
    """A suggestion fence replacing the commented lines with ``replacement`` ("" deletes them).

    GitHub replaces ``start_line..line`` of the comment: leave both offsets 0. GitLab replaces
    the commented line (the end of a multi-line range) plus ``lines_above`` lines before and
    ``lines_below`` after it (```` ```suggestion:-N+M ````): for a finding on lines 10-12
    commented on line 12, pass ``lines_above=2``.
    """
    if lines_above < 0 or lines_below < 0:
        raise ValueError(f"suggestion offsets must be >= 0, got -{lines_above}+{lines_below}")
    info = f"suggestion:-{lines_above}+{lines_below}" if lines_above or lines_below else "suggestion"
    return _fence(_code_lines(replacement), info)


def _code_lines(code: str) -> list[str]:
    lines = clean_text(code).split("\n")
    return lines[:-1] if lines[-1] == "" else lines  # one trailing newline ends the last line


def _lang(info: str) -> str:
    match = _LANG.match(info.strip())
    lang = match[0] if match else ""
    return "" if lang.lower().startswith("suggestion") else lang


def _longest_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)


def _fence(lines: list[str], info: str) -> str:
    lines = [f" {line}" if _COMMAND_IN_CODE.match(line) else line for line in lines]
    ticks = "`" * max(3, _longest_run("\n".join(lines)) + 1)
    return "\n".join([ticks + info, *lines, ticks])


def check_published(body: str) -> list[str]:
    """Problems in a finished comment body, empty when it is safe to post: quick-action lines,
    mentions outside code, unbalanced fences, ``<details>`` or ``<summary>``, raw HTML and HTML
    comments (a marker is allowed only as the first line), carriage returns.

    It reads Markdown conservatively: inline code counts as code only where that cannot depend on
    context it does not track (one line, no ``|``, no unmatched backtick earlier in the paragraph,
    not inside raw HTML).
    """
    problems: list[str] = []
    if "\r" in body:
        problems.append("carriage return in the body (GitLab drops it before reading quick actions)")
    lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    skip = 1 if lines and is_marker_line(lines[0]) else 0
    depth = {"details": 0, "summary": 0}
    after_html = False
    for block in _blocks(lines[skip:]):
        first = skip + block.start + 1
        if block.fence:
            problems += _check_code(block, first, after_html)
            after_html = False
        else:
            found, after_html = _check_prose(block.lines, first, depth)
            problems += found
    problems += [f"unbalanced <{tag}>" for tag, open_count in depth.items() if open_count]
    return problems


class UnsafeBody(InternalError):
    """A planned body failed ``check_published``: a bug in codejury, never published."""


def checked(body: str) -> str:
    """``body`` if ``check_published`` finds nothing; otherwise ``UnsafeBody`` (a bug, never posted)."""
    problems = check_published(body)
    if problems:
        raise UnsafeBody("refusing to publish an unsafe body: " + "; ".join(problems[:5]))
    return body


def _check_code(block: _Block, first: int, after_html: bool) -> list[str]:
    found = []
    if after_html:
        found.append(f"line {first}: code fence inside raw HTML (needs a blank line before it)")
    if block.indent:
        found.append(f"line {first}: indented code fence")
    if not block.closed:
        found.append(f"line {first}: code fence never closed")
    for number, line in enumerate(block.lines, first + 1):
        if _COMMAND_IN_CODE.match(line):
            found.append(f"line {number}: quick action in code (older GitLab reads it)")
    return found


def _check_prose(lines: list[str], first: int, depth: dict[str, int]) -> tuple[list[str], bool]:
    """Problems in prose lines, and whether they end inside a raw HTML block."""
    found: list[str] = []
    html = dirty = False
    for number, line in enumerate(lines, first):
        if not line.strip():
            html = dirty = False
            continue
        if line.lstrip().startswith("/"):
            found.append(f"line {number}: starts with '/' (GitLab quick action)")
        if _FENCE_LIKE.fullmatch(line):
            found.append(f"line {number}: fence-like line outside a code block")
        html = html or _HTML_START.match(line) is not None
        live, dirty = _live_text(line, html, dirty)
        found += [f"line {number}: mention {m[0]!r} outside code" for m in _MENTION.finditer(live)]
        found += [f"line {number}: encoded @ {m[0]!r}" for m in _ENCODED_AT.finditer(live)]
        for tag in _TAG.finditer(live):
            found += _check_tag(tag[0], number, depth)
    return found, html


def _live_text(line: str, html: bool, dirty: bool) -> tuple[str, bool]:
    """The line with trustworthy inline code blanked out, and whether the paragraph is now dirty."""
    out, pos = [], 0
    for code in _inline_code(line, _CHECK_TOKENS):
        pipe = _PIPE if code.ticks else _UNESCAPED_PIPE  # a table splits cells there
        if not code.closed or pipe.search(line, code.start, code.end):
            dirty = True
            continue
        if code.ticks and (html or dirty):
            continue
        out += [line[pos : code.start], " "]
        pos = code.end
    out.append(line[pos:])
    return "".join(out), dirty


def _check_tag(tag: str, number: int, depth: dict[str, int]) -> list[str]:
    if tag.startswith("<!--"):
        return [f"line {number}: HTML comment (only a first-line marker may be one)"]
    if not _ALLOWED_TAG.fullmatch(tag):
        return [f"line {number}: raw HTML {tag!r}"]
    name = tag.strip("</>").split()[0].lower()
    if name not in depth:
        return []
    depth[name] += -1 if tag.startswith("</") else 1
    if depth[name] < 0:
        depth[name] = 0
        return [f"line {number}: {tag} without an opening tag"]
    return []


def scrub_secrets(text: str, redactor: Redactor | None) -> str:
    """``text`` with every secret ``redactor`` knows replaced; ``UnsafeBody`` if that made a safe body unsafe."""
    if not redactor:
        return text
    scrubbed = redactor.redact(text)
    if scrubbed != text and check_published(scrubbed) and not check_published(text):
        raise UnsafeBody("refusing to publish: scrubbing a secret left an unsafe body")
    return scrubbed


def scrub_payload(payload: Any, redactor: Redactor | None) -> Any:
    """A JSON request body with ``scrub_secrets`` applied to every string in it (keys included)."""
    if not redactor:
        return payload
    if isinstance(payload, str):
        return scrub_secrets(payload, redactor)
    if isinstance(payload, dict):
        return {scrub_payload(k, redactor): scrub_payload(v, redactor) for k, v in payload.items()}
    if isinstance(payload, list | tuple):
        return [scrub_payload(v, redactor) for v in payload]
    return payload
