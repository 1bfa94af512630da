"""zizmor on the changed GitHub Actions workflows and actions: its regular persona, medium confidence and up.

zizmor's ``regular`` persona is the one its documentation describes as "minimal false positives";
of its findings those of ``medium`` or ``high`` confidence are kept: template injection from
attacker-controlled ``${{ github.event.* }}``, dangerous triggers (``pull_request_target``,
``workflow_run``), default or excessive permissions, unpinned actions, cache poisoning, and the
rest of its offline audits. The online audits (known-vulnerable actions, impostor commits) need the
GitHub API and are not run (``--offline``). The repository's own ``zizmor.yml`` is not read: our
configuration holds the unpinned-uses policy of zizmor's documentation (GitHub's own ``actions/*``
and ``github/*`` may be pinned to a tag; every other action to a commit hash). A finding is placed
on its primary location's first line; only findings on added lines are kept.

zizmor comes from its PyPI wheel (the program beside the Python interpreter, else on PATH); where it
is missing, a change with a workflow gets one line saying so.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from codejury.analyzers.base import AnalyzerFailed, added_lines, on_changed_lines, run_tool
from codejury.analyzers.shellcheck import is_workflow
from codejury.analyzers.toolkit import ProgramAnalyzer, relative, tool_json
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence
from codejury.findings import Severity

CONFIG = """\
rules:
  unpinned-uses:
    config:
      policies:
        "actions/*": ref-pin
        "github/*": ref-pin
        "*": hash-pin
"""
CRITICAL_AUDITS = frozenset({"template-injection"})
"""Code injection: attacker-controlled text run as the workflow's shell or script."""


def _severity(audit: str, severity: str) -> Severity:
    if audit in CRITICAL_AUDITS and severity == "High":
        return "critical"
    return "warning" if severity == "High" else "suggestion"


class ZizmorAnalyzer(ProgramAnalyzer):
    """zizmor's offline audits on changed workflows; ``binary`` overrides the lookup (tests)."""

    name = "zizmor"

    package = "zizmor"
    wants = staticmethod(is_workflow)

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        program = self.program_for(change)
        if program is None:
            return []
        binary, root, files = program
        with tempfile.TemporaryDirectory(prefix="codejury-zizmor-") as tmp:
            config = Path(tmp) / "zizmor.yml"
            config.write_text(CONFIG, encoding="utf-8")
            argv: list[str | Path] = [
                binary, "--offline", "--no-exit-codes", "--no-progress", "--persona", "regular",
                "--min-confidence", "medium", "--config", config, "--format", "json", "--", *files,
            ]  # fmt: skip
            run = await run_tool(argv, cwd=root, name=self.name, timeout_s=self.timeout_s)
        if run.returncode != 0:
            raise AnalyzerFailed(f"zizmor exited with {run.returncode}: {run.stderr_line()}")
        findings = tool_json(self.name, run.stdout, [])
        if not isinstance(findings, list):
            raise AnalyzerFailed("zizmor printed JSON that is not a list of findings")
        root = root
        evidence = [e for e in (self._evidence(f, root) for f in findings) if e is not None]
        return on_changed_lines(evidence, added_lines(change))

    def _evidence(self, finding: Any, root: Path) -> Evidence | None:
        try:
            if finding.get("ignored"):
                return None
            audit, desc = str(finding["ident"]), str(finding["desc"])
            severity = str(finding["determinations"]["severity"])
            primary = next(loc for loc in finding["locations"] if loc["symbolic"]["kind"] == "Primary")
            path = relative(root, str(primary["symbolic"]["key"]["Local"]["verbatim_path"]))
            line = int(primary["concrete"]["location"]["start_point"]["row"]) + 1
            note = str(primary["symbolic"].get("annotation") or "").strip()
        except (KeyError, TypeError, ValueError, StopIteration, AttributeError) as exc:
            raise AnalyzerFailed(f"zizmor printed a finding without an audit, a file or a line: {exc!r}") from exc
        if path is None:
            return None
        return Evidence(
            analyzer=self.name, rule=audit, path=path, start_line=line, end_line=line,
            severity=_severity(audit, severity), message=f"{desc}: {note}" if note else desc,
        )  # fmt: skip
