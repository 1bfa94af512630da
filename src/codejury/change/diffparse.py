"""Parse git and plain unified diffs into FileChange records, fast and tolerant of real-world output.

Handles renames, copies, new and deleted files, mode-only changes, binary files (both the
``Binary files ... differ`` line and ``GIT binary patch`` blocks), CRLF line endings,
undecodable bytes, ``\\ No newline at end of file``, C-quoted paths, ``diff -u`` output
without ``diff --git`` headers, and preamble text (commit headers, e-mail headers) around
the file sections. Anything that cannot be a diff raises DiffParseError with a line number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codejury.change.types import DiffLine, FileChange, FileStatus, Hunk
from codejury.errors import DiffParseError

MAX_NUMBER_DIGITS = 10
"""A hunk's line numbers and counts have at most this many digits (no file has 10 billion lines)."""
_HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)")
_PLAIN_BINARY = re.compile(r"Binary files (.+) and (.+) differ$")
_ONE_CHAR_PREFIX = re.compile(r"[a-z0-9]/")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_OCTAL = frozenset("01234567")
_DEV_NULL = "/dev/null"
_GIT_HEADER_KEYS = (
    "old mode ", "new mode ", "deleted file mode ", "new file mode ", "rename from ", "rename to ",
    "rename old ", "rename new ", "copy from ", "copy to ", "similarity index ", "dissimilarity index ",
    "index ",
)  # fmt: skip


def _read_quoted(text: str, start: int) -> tuple[str, int]:
    """Decode the C-quoted string opening at ``text[start]``; return it and the index after it."""
    out = bytearray()
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            return out.decode("utf-8", errors="replace"), i + 1
        if ch != "\\":
            out += ch.encode("utf-8", errors="replace")
            i += 1
            continue
        esc = text[i + 1 : i + 2]
        if esc in _ESCAPES:
            out.append(_ESCAPES[esc])
            i += 2
        elif len(digits := text[i + 1 : i + 4]) == 3 and set(digits) <= _OCTAL:
            out.append(int(digits, 8) & 0xFF)
            i += 4
        else:
            raise ValueError(f"unknown escape '\\{esc}' in quoted path")
    raise ValueError("unterminated quoted path")


def unquote_git_path(path: str) -> str:
    """Undo git's C-style quoting (``"a/sp\\303\\251 ce.txt"``); unquoted text comes back as is."""
    if len(path) < 2 or not path.startswith('"'):
        return path
    try:
        decoded, end = _read_quoted(path, 0)
    except ValueError:
        return path
    return decoded if end == len(path) else path


def _label_name(label: str) -> str:
    """The file name in a ``---``/``+++`` label: unquoted, without the tab and timestamp after it."""
    if label.startswith('"'):
        return _read_quoted(label, 0)[0]
    return label.split("\t", 1)[0]


def _header_names(rest: str) -> tuple[str, str]:
    """Split the two names of a ``diff --git`` header (either may be quoted)."""
    if rest.startswith('"'):
        old, end = _read_quoted(rest, 0)
        tail = rest[end:].lstrip(" ")
        return old, _read_quoted(tail, 0)[0] if tail.startswith('"') else tail
    if rest.endswith('"') and ' "' in rest:
        cut = rest.index(' "')
        return rest[:cut], _read_quoted(rest, cut + 1)[0]
    if len(rest) % 2 == 1:  # "a/NAME b/NAME": split exactly in the middle when both halves agree
        half = len(rest) // 2
        old, new = rest[:half], rest[half + 1 :]
        if rest[half] == " " and (old == new or old.partition("/")[2] == new.partition("/")[2]):
            return old, new
    cut = rest.find(" b/")
    if cut < 0:
        cut = rest.find(" ")
    return (rest[:cut], rest[cut + 1 :]) if cut > 0 else (rest, rest)


def _strip_git_prefix(name: str) -> str:
    """Drop a one-character side prefix (``a/``, ``b/``, mnemonic ``i/`` ``w/`` ``c/``)."""
    return name[2:] if _ONE_CHAR_PREFIX.match(name) and len(name) > 2 else name


@dataclass
class _FileSection:
    """One file's lines while they are being read."""

    start: int
    git: bool
    end: int = 0
    header_old: str | None = None
    header_new: str | None = None
    label_old: str | None = None
    label_new: str | None = None
    moved_from: str | None = None
    moved_to: str | None = None
    moved_kind: FileStatus | None = None
    new_file: bool = False
    deleted_file: bool = False
    old_mode: str | None = None
    new_mode: str | None = None
    is_binary: bool = False
    hunks: list[Hunk] = field(default_factory=list)

    def in_header(self) -> bool:
        """Whether extended header lines may still follow."""
        return self.git and not self.hunks and self.label_new is None and not self.is_binary

    def apply_header(self, line: str) -> bool:
        """Record a git extended-header line; return False when the line is not one."""
        if not line.startswith(_GIT_HEADER_KEYS):
            return False
        key, _, value = line.partition(" ")
        if line.startswith(("old mode ", "new mode ")):
            mode = line.split(" ", 2)[2]
            if key == "old":
                self.old_mode = mode
            else:
                self.new_mode = mode
        elif line.startswith("new file mode "):
            self.new_file, self.new_mode = True, line[14:]
        elif line.startswith("deleted file mode "):
            self.deleted_file, self.old_mode = True, line[18:]
        elif key in ("rename", "copy"):
            side, _, name = value.partition(" ")
            self.moved_kind = "renamed" if key == "rename" else "copied"
            if side in ("from", "old"):
                self.moved_from = unquote_git_path(name)
            else:
                self.moved_to = unquote_git_path(name)
        return True

    def build(self, lines: list[str]) -> FileChange:
        """Turn the collected facts into a FileChange."""
        patch = "\n".join(lines[self.start : self.end]) + "\n"
        old, new = self._names()
        status: FileStatus
        if self.new_file or old == _DEV_NULL or (not self.git and _only_side(self.hunks, "new")):
            status = "added"
        elif self.deleted_file or new == _DEV_NULL or (not self.git and _only_side(self.hunks, "old")):
            status = "deleted"
        elif self.moved_kind and self.moved_from and self.moved_to:
            status = self.moved_kind
        else:
            status = "modified"
        path = old if status == "deleted" else new
        if not path or path == _DEV_NULL:
            raise DiffParseError(f"malformed diff at line {self.start + 1}: file header names no file")
        return FileChange(
            path=path,
            old_path=old if status in ("renamed", "copied") else None,
            status=status,
            hunks=tuple(self.hunks),
            is_binary=self.is_binary,
            old_mode=self.old_mode,
            new_mode=self.new_mode,
            patch=patch,
        )

    def _names(self) -> tuple[str, str]:
        """Old and new path, ``/dev/null`` standing for a missing side."""
        old = self.label_old if self.label_old is not None else self.header_old
        new = self.label_new if self.label_new is not None else self.header_new
        old, new = old or "", new or ""
        if self.git:
            old = old if old == _DEV_NULL else _strip_git_prefix(old)
            new = new if new == _DEV_NULL else _strip_git_prefix(new)
        elif _DEV_NULL not in (old, new):
            old, new = _strip_plain_prefix(old, new)
        elif old == _DEV_NULL:  # hg-style "--- /dev/null" / "+++ b/name"
            new = new.removeprefix("b/")
        else:
            old = old.removeprefix("a/")
        return self.moved_from or old, self.moved_to or new


def _strip_plain_prefix(old: str, new: str) -> tuple[str, str]:
    """Strip ``a/``/``b/`` or differing top directories (``old/x`` vs ``new/x``) from plain diffs."""
    if _ONE_CHAR_PREFIX.match(old) and _ONE_CHAR_PREFIX.match(new):
        return old[2:], new[2:]
    old_top, _, old_rest = old.partition("/")
    new_top, _, new_rest = new.partition("/")
    if old_rest and new_rest and old_top != new_top:
        return old_rest, new_rest
    return old, new


def _only_side(hunks: list[Hunk], side: str) -> bool:
    """Whether every hunk is empty on the other side (a plain diff's way to show add/delete)."""
    if not hunks:
        return False
    if side == "new":
        return all(h.old_start == 0 and h.old_len == 0 for h in hunks)
    return all(h.new_start == 0 and h.new_len == 0 for h in hunks)


def _error(index: int, cause: str) -> DiffParseError:
    return DiffParseError(f"malformed diff at line {index + 1}: {cause}")


def _hunk_number(digits: str, index: int) -> int:
    """A line number or count of a hunk header; absurd lengths are refused before ``int()``."""
    if len(digits) > MAX_NUMBER_DIGITS:
        raise _error(index, f"a number in the hunk header has {len(digits)} digits (at most {MAX_NUMBER_DIGITS})")
    return int(digits)


def _parse_hunk(lines: list[str], i: int) -> tuple[Hunk, int]:
    """Read the hunk whose header is ``lines[i]``; return it and the index after it."""
    header = lines[i]
    match = _HUNK_HEADER.match(header)
    if match is None:
        if header.startswith("@@@"):
            raise _error(i, "combined (merge) diffs are not supported")
        raise _error(i, f"bad hunk header {header[:80]!r}")
    old_start, new_start = _hunk_number(match[1], i), _hunk_number(match[3], i)
    old_len = 1 if match[2] is None else _hunk_number(match[2], i)
    new_len = 1 if match[4] is None else _hunk_number(match[4], i)
    old_no, new_no, old_left, new_left = old_start, new_start, old_len, new_len
    out: list[DiffLine] = []
    append = out.append
    j, n = i + 1, len(lines)
    while (old_left or new_left) and j < n:
        line = lines[j]
        tag = line[:1]
        if tag == " " or not line:
            if not (old_left and new_left):
                break
            append(DiffLine(" ", line[1:], old_no, new_no))
            old_no += 1
            new_no += 1
            old_left -= 1
            new_left -= 1
        elif tag == "-":
            if not old_left:
                break
            append(DiffLine("-", line[1:], old_no, None))
            old_no += 1
            old_left -= 1
        elif tag == "+":
            if not new_left:
                break
            append(DiffLine("+", line[1:], None, new_no))
            new_no += 1
            new_left -= 1
        elif tag != "\\":
            break
        j += 1
    if old_left or new_left:
        stopped_on = lines[j][:1] if j < n else ""
        if stopped_on == "+" or (new_left and stopped_on != "-"):
            has = "more" if stopped_on == "+" else str(new_len - new_left)
            raise _error(i, f"hunk says {new_len} new lines but has {has}")
        has = "more" if stopped_on == "-" else str(old_len - old_left)
        raise _error(i, f"hunk says {old_len} old lines but has {has}")
    while j < n and lines[j][:1] == "\\":
        j += 1
    if j < n and lines[j][:1] in ("+", "-", " ") and lines[j] != "-- " and not _is_label_pair(lines, j):
        raise _error(i, f"hunk says {old_len} old and {new_len} new lines but has more")
    hunk = Hunk(old_start, old_len, new_start, new_len, match[5].strip(), tuple(out))
    return hunk, j


def _is_label_pair(lines: list[str], i: int) -> bool:
    return lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _skip_binary_patch(lines: list[str], i: int) -> int:
    """Skip the ``literal``/``delta`` blocks after ``GIT binary patch``; return the next index."""
    n = len(lines)
    while i < n and lines[i].startswith(("literal ", "delta ")):
        i += 1
        while i < n and lines[i]:
            i += 1
        i += 1 if i < n else 0
    return i


def _split_lines(data: bytes | str) -> list[str]:
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    text = text.removeprefix("\ufeff")
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines


def parse_diff(data: bytes | str) -> tuple[FileChange, ...]:
    """Parse a git or plain unified diff; empty input gives ``()``, non-diffs raise DiffParseError."""
    lines = _split_lines(data)
    if not any(line.strip() for line in lines):
        return ()
    sections: list[_FileSection] = []
    cur: _FileSection | None = None
    i, n = 0, len(lines)
    try:
        while i < n:
            line = lines[i]
            if line.startswith("diff --git "):
                old, new = _header_names(line[11:])
                cur = _FileSection(start=i, git=True, end=i + 1, header_old=old, header_new=new)
                sections.append(cur)
                i += 1
            elif line.startswith(("diff --cc ", "diff --combined ")):
                raise _error(i, "combined (merge) diffs are not supported")
            elif _is_label_pair(lines, i):
                if cur is None or not cur.in_header():
                    cur = _FileSection(start=i, git=False)
                    sections.append(cur)
                cur.label_old = _label_name(line[4:])
                cur.label_new = _label_name(lines[i + 1][4:])
                i += 2
                cur.end = i
            elif line.startswith("@@"):
                if cur is None:
                    raise _error(i, "hunk found before any file header")
                if cur.is_binary:
                    raise _error(i, "hunk found inside a binary file's section")
                hunk, i = _parse_hunk(lines, i)
                cur.hunks.append(hunk)
                cur.end = i
            elif cur is not None and cur.in_header() and cur.apply_header(line):
                i += 1
                cur.end = i
            elif line.startswith("Binary files ") and (match := _PLAIN_BINARY.match(line)):
                if cur is None or not cur.in_header():
                    cur = _FileSection(start=i, git=False)
                    cur.header_old, cur.header_new = _label_name(match[1]), _label_name(match[2])
                    sections.append(cur)
                cur.is_binary = True
                i += 1
                cur.end = i
            elif line == "GIT binary patch" and cur is not None and cur.in_header():
                cur.is_binary = True
                i = _skip_binary_patch(lines, i + 1)
                cur.end = i
            else:
                i += 1
    except ValueError as exc:
        raise _error(i, str(exc)) from exc
    if not sections:
        raise _error(0, "no 'diff --git' or '---'/'+++' file header found; this is not a unified diff")
    return tuple(section.build(lines) for section in sections)
