"""Committed credentials on the added lines of every changed text file (detect-secrets, offline).

Only the added lines are scanned: each changed file is rebuilt in a private temporary directory
with its added lines at their own line numbers and every other line blank, under its own name (so
detect-secrets' per-file-type rules and filters apply). That needs no head-side tree, so a plain
diff is scanned too, and unchanged lines cost nothing. An added line goes to detect-secrets only
when one pattern made of its detectors' own (every provider format, every keyword, the allowlist
pragma) matches it, and the kinds always dropped below are not looked for: the same hits, a
fraction of the time on a large change.

What a hit becomes (one per line, the strongest kind on it):

- a provider's key format (Stripe live key, AWS access key, GitHub/GitLab/Slack/npm/PyPI/OpenAI
  token, a private key block, ...): **critical**, a **warning** in a test or fixture path (test
  certificates and keys are often committed on purpose);
- a credential-named variable assigned a literal that looks generated (letters and digits, at
  least 12 characters): **warning**;
- dropped: values that mark themselves as placeholders or test keys (``EXAMPLE``, ``dummy``,
  ``changeme``, ``your_…``, ``xxxx``, ``sk_test_``, ``${…}``, ``user:pass@``), high-entropy strings with nothing
  else to say they are secrets (hashes, ids, fixtures), public IP addresses, short or
  dictionary-word passwords.

The secret itself never goes into the evidence, not even its first characters: a message names the
kind of secret and the line (its first line is the finding's title, the second its body).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib.util
import re
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codejury.analyzers.base import AnalyzerSkipped, files_with_additions
from codejury.change.types import ChangeSet, FileChange
from codejury.evidence import Evidence
from codejury.findings import Severity

MAX_LINE_CHARS = 4_000
"""Longer added lines (minified code, data) are not scanned."""
KEYWORD_TYPE = "Secret Keyword"
DROPPED_TYPES = frozenset({"Base64 High Entropy String", "Hex High Entropy String", "Public IP (ipv4)"})
WARNING_TYPES = frozenset({"JSON Web Token", "Basic Auth Credentials"})
"""Provider-format hits that are often sample data: a warning, not a critical."""
_PLACEHOLDER = re.compile(
    r"example|sample|dummy|placeholder|changeme|change_me|your[_-]|xxxx|\*\*\*|redacted|fake|"
    r"sk_test_|pk_test_|rk_test_|_test_|<[^>]*>|\$\{|\{\{|%\(",
    re.IGNORECASE,
)
_PLACEHOLDER_WORDS = frozenset(
    {"pass", "passwd", "password", "secret", "user", "username", "admin", "root", "test", "token", "key", "pwd"}
)
_GENERATED = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)\S{12,}$")
_TEST_PATH = re.compile(r"(^|/)(tests?|spec|specs|fixtures?|testdata|__tests__|examples?)(/|$)|(^|/)test_[^/]*$")
_LOCK = threading.Lock()
"""detect-secrets keeps its settings in a process-wide global: one scan at a time."""


@dataclass(frozen=True)
class _Hit:
    path: str
    line: int
    kind: str
    value: str


class SecretScanner:
    """detect-secrets over the added lines of every changed file."""

    name = "secrets"

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        files = files_with_additions(change)
        if not files:
            return []
        if importlib.util.find_spec("detect_secrets") is None:
            raise AnalyzerSkipped("secrets skipped: detect-secrets is not installed (pip install detect-secrets)")
        hits = await asyncio.to_thread(_scan, files)
        return _evidence(hits, self.name)


@dataclass(frozen=True)
class _Candidate:
    """Whether detect-secrets could report a line: a necessary condition, checked cheaply."""

    words: tuple[tuple[str, ...], ...]
    """Case-folded literals: a line holding every literal of one entry may hold a keyword (or a pragma)."""
    formats: tuple[re.Pattern[str], ...]
    """The provider formats, and any keyword that is not a plain literal, as detect-secrets matches them."""

    def __call__(self, line: str) -> bool:
        lower = line.casefold()
        if any(all(w in lower for w in word) for word in self.words):
            return True
        return any(p.search(line) for p in self.formats)


_LITERAL = re.compile(r"[\w\u00c0-\u024f]+")


@functools.cache
def _plugins() -> tuple[list[dict[str, str]], _Candidate]:
    """The detect-secrets plugins whose hits can be kept (every one but the kinds always dropped), and
    what every line one of them could report holds: a provider format, a keyword the keyword detector
    looks for, or an allowlist pragma (which speaks for the next line)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
    from detect_secrets.plugins.keyword import DENYLIST

    used: list[dict[str, str]] = []
    words: list[tuple[str, ...]] = [("allowlist",)]
    formats: list[re.Pattern[str]] = []
    for word in DENYLIST:  # "api_?key": a line with "api" and "key" in any case; anything else as a pattern
        pieces = word.split("_?")
        if all(_LITERAL.fullmatch(piece) for piece in pieces):
            words.append(tuple(piece.casefold() for piece in pieces))
        else:
            formats.append(re.compile(word, re.IGNORECASE))
    mapping: Mapping[str, type[BasePlugin]] = get_mapping_from_secret_type_to_class()
    for kind, plugin in mapping.items():
        if kind in DROPPED_TYPES:
            continue
        used.append({"name": plugin.__name__})
        detector = plugin()
        if isinstance(detector, RegexBasedDetector):
            formats += list(detector.denylist)
    return used, _Candidate(tuple(words), tuple(formats))


def _scan(files: Sequence[FileChange]) -> list[_Hit]:
    from detect_secrets.core.secrets_collection import SecretsCollection
    from detect_secrets.settings import transient_settings

    plugins, candidate = _plugins()
    with tempfile.TemporaryDirectory(prefix="codejury-secrets-") as tmp:
        root = Path(tmp)
        names = [_write_added_lines(root, f, candidate) for f in files]
        collection = SecretsCollection(root=tmp)
        with _LOCK, transient_settings({"plugins_used": plugins}):
            for name in names:
                if name is not None:
                    collection.scan_file(name)
        by_name = {n: f.path for n, f in zip(names, files, strict=True) if n is not None}
        return [
            _Hit(by_name[filename], s.line_number, s.type, s.secret_value or "")
            for filename, s in collection
            if filename in by_name
        ]


def _write_added_lines(root: Path, file: FileChange, candidate: Callable[[str], bool]) -> str | None:
    """Write ``file``'s added lines that ``candidate`` admits at their line numbers under a safe copy
    of its name (None when there is none: the file cannot hold a secret the scanner reports)."""
    parts = [p for p in PurePosixPath(file.path).parts if p not in ("", ".", "..", "/")]
    if not parts:
        return None
    name = "/".join(parts)
    lines: dict[int, str] = {}
    for hunk in file.hunks:
        for line in hunk.lines:
            if line.kind != "+" or line.new_no is None or len(line.text) > MAX_LINE_CHARS:
                continue
            if candidate(line.text):
                lines[line.new_no] = line.text.rstrip("\r\n")
    if not lines:
        return None
    last = max(lines)
    text = "\n".join(lines.get(n, "") for n in range(1, last + 1)) + "\n"
    try:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    except OSError:  # a name too long for this file system: scanned under a short one, same suffix
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = f"{digest}{PurePosixPath(parts[-1]).suffix[:16]}"
        (root / name).write_text(text, encoding="utf-8")
    return name


def _evidence(hits: Sequence[_Hit], analyzer: str) -> list[Evidence]:
    best: dict[tuple[str, int], tuple[int, Evidence]] = {}
    for hit in hits:
        graded = _grade(hit)
        if graded is None:
            continue
        severity, rule = graded
        rank = ("suggestion", "warning", "critical").index(severity)
        key = (hit.path, hit.line)
        if key in best and best[key][0] >= rank:
            continue
        what = "a credential" if hit.kind == KEYWORD_TYPE else f"a {hit.kind.lower()}"
        message = (
            f"{what[0].upper()}{what[1:]} is committed in the code\n"
            "Anyone who can read the repository can use it: revoke and rotate it, and read it from the "
            "environment or a secret store."
        )
        best[key] = (rank, Evidence(
            analyzer=analyzer, rule=rule, path=hit.path, start_line=hit.line, end_line=hit.line,
            severity=severity, message=message,
        ))  # fmt: skip
    return [ev for _, ev in sorted(best.values(), key=lambda item: (item[1].path, item[1].start_line))]


def _grade(hit: _Hit) -> tuple[Severity, str] | None:
    """(severity, rule) for a hit, or None to drop it (see the module docstring)."""
    if hit.kind in DROPPED_TYPES or _PLACEHOLDER.search(hit.value) or hit.value.lower() in _PLACEHOLDER_WORDS:
        return None
    rule = re.sub(r"[^a-z0-9]+", "-", hit.kind.lower()).strip("-")
    if hit.kind == KEYWORD_TYPE:
        return ("warning", rule) if _GENERATED.match(hit.value) else None
    if hit.kind in WARNING_TYPES or _TEST_PATH.search(hit.path.lower()):
        return "warning", rule
    return "critical", rule
