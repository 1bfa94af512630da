"""SARIF 2.1.0 from the tools a team already runs (CodeQL, Semgrep, ESLint, clippy, gosec, ...).

``SarifEvidence.from_files(paths)`` reads and checks every file when the review starts (a file
that is not SARIF is a one-line ``InputError`` naming it, exit 2); ``analyze(change)`` then keeps
the results on added lines of the change. Per result: the first physical location, its
``artifactLocation.uri`` resolved against ``uriBaseId`` (``run.originalUriBaseIds``), a
``file://`` URI made relative to the change's root, else matched to a changed file by its
trailing path components (a CI checkout lives at some absolute path we do not know).

Severity: ``error`` is a warning, and a critical when the rule's ``security-severity`` (CodeQL,
Semgrep) is 7.0 or more; ``warning`` a warning; ``note``/``none`` a suggestion; no level means the
rule's default level, else ``warning`` (the SARIF default).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from codejury.analyzers.base import added_lines, on_changed_lines
from codejury.bounded_io import read_path
from codejury.change.types import ChangeSet
from codejury.errors import InputError
from codejury.evidence import Evidence
from codejury.findings import Severity

MAX_SARIF_BYTES = 32 * 1024 * 1024
"""One ``--evidence`` SARIF file."""
CRITICAL_SECURITY_SEVERITY = 7.0


@dataclass(frozen=True)
class _Result:
    tool: str
    rule: str
    uri: str
    start_line: int
    end_line: int
    severity: Severity
    message: str


class SarifEvidence:
    """Results read from SARIF files, filtered to each change's added lines."""

    name = "sarif"

    def __init__(self, results: Sequence[_Result]) -> None:
        self._results = tuple(results)

    @classmethod
    def from_files(cls, paths: Sequence[Path]) -> SarifEvidence:
        """Read and check every file now; raise ``InputError`` naming a file that is not SARIF."""
        results: list[_Result] = []
        for path in paths:
            what = f"SARIF file {path}"
            data = read_path(Path(path), MAX_SARIF_BYTES, what)
            try:
                results.extend(parse_sarif(json.loads(data)))
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise InputError(f"{what} is not valid SARIF 2.1.0: {reason}") from exc
        return cls(results)

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        changed = added_lines(change)
        root = change.root.resolve() if change.root is not None else None
        evidence: list[Evidence] = []
        for result in self._results:
            path = _repo_path(result.uri, root, changed)
            if path is None:
                continue
            evidence.append(Evidence(
                analyzer=result.tool, rule=result.rule, path=path, start_line=result.start_line,
                end_line=result.end_line, severity=result.severity, message=result.message,
            ))  # fmt: skip
        return on_changed_lines(evidence, changed)


def parse_sarif(doc: Any) -> list[_Result]:
    """The located results of a SARIF log (raises ValueError, KeyError or TypeError when it is not one)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise ValueError("no 'runs' list at the top level")
    results: list[_Result] = []
    for run in doc["runs"]:
        driver = run["tool"]["driver"]
        tool = str(driver.get("name") or "sarif").strip().lower().replace(" ", "-") or "sarif"
        rules = _rules_by_id(run)
        bases = _uri_bases(run)
        for item in run.get("results") or []:
            located = _location(item, bases)
            if located is None:
                continue
            uri, start, end = located
            rule_id = str(item.get("ruleId") or (item.get("rule") or {}).get("id") or "unknown")
            rule = rules.get(rule_id, {})
            results.append(_Result(
                tool=tool, rule=rule_id, uri=uri, start_line=start, end_line=end,
                severity=_severity(item, rule), message=_message(item, rule),
            ))  # fmt: skip
    return results


def _rules_by_id(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rules = (run["tool"]["driver"].get("rules") or []) + [
        r for ext in run["tool"].get("extensions") or [] for r in ext.get("rules") or []
    ]
    return {str(r["id"]): r for r in rules if isinstance(r, dict) and "id" in r}


def _uri_bases(run: dict[str, Any]) -> dict[str, str]:
    bases = run.get("originalUriBaseIds") or {}
    return {str(k): str((v or {}).get("uri") or "") for k, v in bases.items() if isinstance(v, dict)}


def _location(item: dict[str, Any], bases: dict[str, str]) -> tuple[str, int, int] | None:
    for location in item.get("locations") or []:
        physical = location.get("physicalLocation") or {}
        artifact = physical.get("artifactLocation") or {}
        region = physical.get("region") or {}
        uri = artifact.get("uri")
        start = region.get("startLine")
        if not isinstance(uri, str) or not isinstance(start, int) or start < 1:
            continue
        end = region.get("endLine")
        base = bases.get(str(artifact.get("uriBaseId") or ""), "")
        if base and not urlparse(uri).scheme:
            uri = base.rstrip("/") + "/" + uri
        return uri, start, end if isinstance(end, int) and end >= start else start
    return None


def _severity(item: dict[str, Any], rule: dict[str, Any]) -> Severity:
    level = item.get("level") or (rule.get("defaultConfiguration") or {}).get("level") or "warning"
    if level in ("note", "none"):
        return "suggestion"
    if level == "error":
        try:
            score = float((rule.get("properties") or {}).get("security-severity") or 0)
        except (TypeError, ValueError):
            score = 0.0
        return "critical" if score >= CRITICAL_SECURITY_SEVERITY else "warning"
    return "warning"


def _message(item: dict[str, Any], rule: dict[str, Any]) -> str:
    text = str((item.get("message") or {}).get("text") or "").strip()
    if not text:
        text = str((rule.get("shortDescription") or {}).get("text") or rule.get("name") or "").strip()
    tags = [str(t) for t in (rule.get("properties") or {}).get("tags") or []]
    return f"{text} (tags: {', '.join(tags)})" if tags else text or "no message"


def _repo_path(uri: str, root: Path | None, changed: dict[str, frozenset[int]]) -> str | None:
    """The changed file ``uri`` names, relative to the repository, or None."""
    parsed = urlparse(uri)
    raw = unquote(parsed.path) if parsed.scheme in ("file", "") else ""
    if not raw:
        return None
    if parsed.scheme == "file" or raw.startswith("/"):
        if root is not None and Path(raw).is_relative_to(root):
            rel = Path(raw).relative_to(root).as_posix()
            return rel if rel in changed else None
        return _by_suffix(PurePosixPath(raw).parts, changed)
    rel = "/".join(p for p in PurePosixPath(raw).parts if p not in ("", "."))
    return rel if rel in changed else _by_suffix(PurePosixPath(raw).parts, changed)


def _by_suffix(parts: tuple[str, ...], changed: dict[str, frozenset[int]]) -> str | None:
    """The changed path that the most trailing components of ``parts`` name (ties: none)."""
    best: list[str] = []
    best_len = 0
    for path in changed:
        mine = PurePosixPath(path).parts
        if len(mine) <= len(parts) and parts[len(parts) - len(mine) :] == mine:
            if len(mine) > best_len:
                best, best_len = [path], len(mine)
            elif len(mine) == best_len:
                best.append(path)
    return best[0] if len(best) == 1 else None
