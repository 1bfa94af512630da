"""Test results as evidence: the JUnit XML reports a CI job already produced (``codejury review --tests FILE``).

codejury never runs the change's code; it reads what the CI job's test step wrote. A report is
untrusted (the change's own tests name the tests and write the messages), so it is parsed with
defusedxml with DTDs forbidden: no entity is ever expanded (a "billion laughs" file is refused),
no external resource is fetched, and each file is capped at ``MAX_JUNIT_BYTES`` while it is
read. A file that is missing, too large, not well-formed, in an encoding that cannot be read or
not JUnit is a one-line ``InputError`` naming it (exit 2), raised before any model is called.

Which changed function a failing test covers (``covered``), the rule the docs spell out:

- the changed functions are the functions and methods (tree-sitter chunks of the head-side file,
  as the repository index cuts them) whose lines the change adds to or removes from; without a
  head-side tree, the function the hunk header names and the definitions the hunk shows;
- a failing test covers a changed function when the function *is* the test (same file, same
  name: a test the change edited and that now fails), or when the test is about the function's
  file and names the function: the file's name or its directory's name (a Go or Python package)
  is the test's subject, taken from the test's file (``file`` attribute) and the last components
  of its ``classname`` with the test markers removed (``test_cart.py``, ``cart_test.go``,
  ``cart.test.ts``, ``TestCart``, ``CartTest``, ``CartSpec`` → ``cart``); and the test's name
  without its ``test`` prefix and parameters starts with the function's name, word by word
  (``test_total_with_discount`` and ``testTotal`` name ``total``; a sentence such as
  "computes total with discount" names it anywhere).

A finding on the lines of a covered function is backed by the test (``evidence``:
``junit:<test id>``, the id being ``classname::name``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from codejury.analyzers.base import head_bytes
from codejury.bounded_io import read_path
from codejury.change.types import ChangeSet, FileChange
from codejury.errors import InputError
from codejury.findings import Finding
from codejury.locations import overlaps

MAX_JUNIT_BYTES = 32 * 1024 * 1024
"""One ``--tests`` JUnit XML file."""
MAX_MESSAGE_CHARS = 600
"""A failure's message and output, as a reviewer sees it."""
MAX_NAMED = 5
"""Failing tests named in the review's note line (the rest are counted)."""
EVIDENCE_PREFIX = "junit"

_MARKERS = (
    re.compile(r"^tests?_(?P<s>.+)$", re.I),
    re.compile(r"^(?P<s>.+?)_tests?$", re.I),
    re.compile(r"^(?P<s>.+?)[._-](?:test|spec)s?$", re.I),
    re.compile(r"^Tests?(?P<s>[A-Z0-9].*)$"),
    re.compile(r"^(?P<s>.+?)(?:Tests?|Spec|IT)$"),
)
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_PARAMS = re.compile(r"[\[(].*$")
_TEST_PREFIX = re.compile(r"^(?:test|it|should)(?:_|(?=[A-Z0-9])|$)", re.I)


@dataclass(frozen=True)
class TestFailure:
    """One test that failed or errored in a report."""

    __test__ = False  # not a pytest class

    classname: str
    name: str
    file: str = ""
    kind: str = "failure"
    """``failure`` (an assertion) or ``error`` (the test could not run to its end)."""
    message: str = ""
    report: str = ""
    """The report file it came from, as given."""

    @property
    def id(self) -> str:
        return f"{self.classname}::{self.name}" if self.classname else self.name

    @property
    def evidence(self) -> str:
        return f"{EVIDENCE_PREFIX}:{self.id}"


@dataclass(frozen=True)
class TestReport:
    """Every ``--tests`` report of one review: how many tests ran, and the failures."""

    __test__ = False

    files: tuple[str, ...]
    total: int
    skipped: int
    failures: tuple[TestFailure, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class ChangedFunction:
    """A function or method whose lines the change touches: new-side lines ``start``..``end``."""

    path: str
    name: str
    start: int
    end: int

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]


# -- reading ---------------------------------------------------------------------------------------
def read_test_reports(paths: Sequence[str | Path]) -> TestReport | None:
    """Every report at ``paths`` read and checked now (None when there is none); ``InputError`` names a bad one."""
    if not paths:
        return None
    total = skipped = 0
    failures: list[TestFailure] = []
    for path in paths:
        what = f"--tests {path}"
        data = read_path(Path(path), MAX_JUNIT_BYTES, what)
        root = _parse(data, what)
        cases = list(root.iter("testcase"))
        for case in cases:
            outcome = next((c for c in case if c.tag in ("failure", "error")), None)
            if any(c.tag == "skipped" for c in case):
                skipped += 1
            if outcome is not None:
                failures.append(_failure(case, outcome, str(path)))
        total += len(cases)
    return TestReport(tuple(str(p) for p in paths), total, skipped, tuple(failures))


def _parse(data: bytes, what: str) -> Element:
    try:
        root = fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise InputError(f"{what}: refused: {exc} (a test report needs no DTD or entities)") from None
    except ParseError as exc:
        raise InputError(f"{what} is not well-formed XML: {exc}") from None
    except (LookupError, ValueError) as exc:  # an encoding Python does not know, or one the XML parser cannot use
        cause = " ".join(str(exc).split())[:200]
        raise InputError(f"{what}: its XML declaration names an encoding that cannot be read ({cause})") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise InputError(f"{what} is not a JUnit XML report: its root element is <{root.tag[:40]}>, not <testsuites>")
    for case in root.iter("testcase"):
        if not case.get("name"):
            raise InputError(f"{what} is not a JUnit XML report: a <testcase> has no name")
    return root


def _failure(case: Element, outcome: Element, report: str) -> TestFailure:
    said = " ".join(p for p in (outcome.get("type", ""), outcome.get("message", "")) if p)
    text = (outcome.text or "").strip()
    message = "\n".join(p for p in (said, text) if p)
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS] + " …[cut]"
    return TestFailure(
        classname=case.get("classname", "").strip(),
        name=case.get("name", "").strip(),
        file=(case.get("file") or "").strip().replace("\\", "/").removeprefix("./"),
        kind=outcome.tag,
        message=message,
        report=report,
    )


# -- the changed functions -------------------------------------------------------------------------
def changed_functions(change: ChangeSet, files: Iterable[FileChange]) -> list[ChangedFunction]:
    """The functions and methods whose lines ``files`` touch (see the module docstring)."""
    from codejury.repocontext.chunker import chunk_source
    from codejury.repocontext.definitions import functions_from_hunks, touched_lines
    from codejury.repocontext.languages import language_for

    out: list[ChangedFunction] = []
    for file in files:
        if file.status == "deleted" or file.is_binary or not file.hunks:
            continue
        touched = touched_lines(file)
        language = language_for(file.path)
        data = head_bytes(change, file.path) if language else None
        chunks = chunk_source(data, language) if data is not None and language else None
        if chunks is None:
            out += [
                ChangedFunction(file.path, name, start, end)
                for name, start, end in functions_from_hunks(file)
                if any(start <= n <= end for n in touched)
            ]
            continue
        for chunk in chunks:
            if chunk.kind == "function" and any(chunk.start <= n <= chunk.end for n in touched):
                out.append(ChangedFunction(file.path, chunk.name, chunk.start, chunk.end))
    return out


# -- matching ----------------------------------------------------------------------------------------
def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _unmarked(component: str) -> str | None:
    for pattern in _MARKERS:
        found = pattern.match(component)
        if found and found["s"]:
            return found["s"]
    return None


def _stem(path: str) -> str:
    name = PurePosixPath(path).name
    return name.split(".", 1)[0] if not name.startswith(".") else name


def subjects(test: TestFailure) -> set[str]:
    """The names a failing test is about (normalised): its file's and its classname's, test markers removed."""
    found: set[str] = set()
    if test.file:
        name = PurePosixPath(test.file).name
        base = name.rsplit(".", 1)[0] if "." in name else name
        for candidate in (base, _stem(test.file)):
            if (unmarked := _unmarked(candidate)) is not None:
                found.add(_norm(unmarked))
    parts = [p for p in re.split(r"[./\\$]", test.classname) if p]
    for index, part in enumerate(parts[-2:]):
        unmarked = _unmarked(part)
        if unmarked is not None:
            found.add(_norm(unmarked))
        elif index == len(parts[-2:]) - 1 and " " not in part:
            found.add(_norm(part))  # a Go package, a bare module: the last component as it is
    found.discard("")
    return found


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORDS.findall(text)]


def _test_words(name: str) -> tuple[list[str], bool]:
    """The test's name as words (its ``test`` prefix and parameters removed), and whether it is a sentence."""
    bare = _PARAMS.sub("", name).strip()
    sentence = " " in bare
    return _words(bare if sentence else _TEST_PREFIX.sub("", bare)), sentence


def _names_function(test: TestFailure, function: ChangedFunction) -> bool:
    words, sentence = _test_words(test.name)
    wanted = _words(function.short)
    if not wanted or not words:
        return False
    if not sentence:
        return words[: len(wanted)] == wanted
    return any(words[i : i + len(wanted)] == wanted for i in range(len(words) - len(wanted) + 1))


def _is_the_test(test: TestFailure, function: ChangedFunction) -> bool:
    if function.short != _PARAMS.sub("", test.name).strip():
        return False
    if test.file:
        return function.path == test.file or function.path.endswith("/" + test.file)
    module = PurePosixPath(function.path).with_suffix("").as_posix().replace("/", ".")
    return bool(test.classname) and (test.classname == module or test.classname.startswith(module + ".")
                                     or module.endswith("." + test.classname.split(".", 1)[0]))  # fmt: skip


def covered(test: TestFailure, functions: Sequence[ChangedFunction]) -> list[ChangedFunction]:
    """The changed functions ``test`` covers (the module docstring's rule)."""
    about = subjects(test)
    out = []
    for function in functions:
        path = PurePosixPath(function.path)
        on_file = _norm(_stem(function.path)) in about or _norm(path.parent.name) in about
        if _is_the_test(test, function) or (on_file and _names_function(test, function)):
            out.append(function)
    return out


@dataclass(frozen=True)
class TestCoverage:
    """The failures of a report matched to the changed functions of one review."""

    __test__ = False

    report: TestReport
    covers: dict[str, list[ChangedFunction]]
    """Test id → the changed functions it covers (an empty list: none)."""

    @property
    def failures(self) -> tuple[TestFailure, ...]:
        return self.report.failures

    def back(self, findings: Sequence[Finding]) -> list[Finding]:
        """Each finding on a covered function's lines, with the failing tests as ``junit:<test id>`` evidence."""
        out = []
        for f in findings:
            keys = {
                t.evidence
                for t in self.failures
                for fn in self.covers.get(t.id, ())
                if fn.path == f.path and overlaps(f, _Span(fn.path, fn.start, fn.end), slack=0)
            }
            rules = sorted(keys | set(f.evidence))
            out.append(f.model_copy(update={"evidence": rules}) if rules != f.evidence else f)
        return out

    def note(self) -> str:
        """The review's line about the reports: how many tests, and the failing ones by name."""
        report = self.report
        files = ", ".join(report.files)
        if not report.failures:
            return f"tests ({files}): none of {report.total} failed"
        named = []
        for test in sorted(report.failures, key=lambda t: (not self.covers.get(t.id), t.id))[:MAX_NAMED]:
            on = self.covers.get(test.id)
            where = f" (covers {', '.join(f'{fn.path}:{fn.short}' for fn in on[:3])})" if on else ""
            named.append(f"{test.id}{where}")
        more = len(report.failures) - len(named)
        tail = f"; and {more} more" if more > 0 else ""
        n = len(report.failures)
        return f"tests ({files}): {n} of {report.total} failed: {'; '.join(named)}{tail}"

    def context(self, budget_chars: int) -> tuple[str, int]:
        """The failures for the reviewers (those covering a changed function first), within ``budget_chars``,
        and how many were left out (said in the text's last line)."""
        order = sorted(self.failures, key=lambda t: (not self.covers.get(t.id), t.id))
        blocks = []
        for test in order:
            on = self.covers.get(test.id)
            covers = ", ".join(f"{fn.path}:{fn.start}-{fn.end} {fn.name}" for fn in on) if on else "none found"
            blocks.append(f"- {test.id} ({test.kind}; changed functions it covers: {covers})\n{test.message}".rstrip())
        kept: list[str] = []
        used = 0
        for block in blocks:
            if kept and used + len(block) + 1 > budget_chars:
                break
            kept.append(block[:budget_chars])
            used += len(block) + 1
        left = len(blocks) - len(kept)
        if left:
            kept.append(f"[{left} more failing test{'s' if left != 1 else ''} left out to fit the budget]")
        return "\n".join(kept), left


@dataclass(frozen=True)
class _Span:
    path: str
    start_line: int
    end_line: int


def coverage(report: TestReport, change: ChangeSet, files: Sequence[FileChange]) -> TestCoverage:
    """Match ``report``'s failures to the changed functions of ``files`` (the files a model sees)."""
    functions = changed_functions(change, files) if report.failures else []
    return TestCoverage(report, {t.id: covered(t, functions) for t in report.failures})
