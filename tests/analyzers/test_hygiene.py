"""Unused added imports and a missing final newline: the leftovers a linter catches, on added lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from codejury.analyzers import AnalyzerSkipped, domain_for
from codejury.analyzers.hygiene import HygieneAnalyzer, code_only, js_imported_names
from tests.analyzers.helpers import hits, make_change

TS_OLD = 'import * as path from "path"\nimport fs from "fs/promises"\n\nexport const a = path.join("a")\n'
TS_NEW = (
    'import * as path from "path"\n'
    'import fs from "fs/promises"\n'
    'import { match } from "assert"\n'
    'import {\n  readText,\n  type Encoding,\n  detect as sniff,\n} from "./text"\n'
    'import React, { useState } from "react"\n'
    "\n"
    'export const a = path.join("a") // a match for the old one\n'
    'export const b = (e: Encoding) => readText(`exact ${"match"} of ${e}`).match(/x/)\n'
    "export const C = () => <div>{useState(0)}</div>\n"
)


async def test_an_added_import_nothing_uses_is_a_suggestion_on_its_lines(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"src/extract.tsx": (TS_OLD, TS_NEW)})
    evidence = await HygieneAnalyzer().analyze(change)
    # `fs` is unused too, but its import is not part of this change; `match` only appears in a comment,
    # a string and as a method name; `sniff` nowhere; React is what the classic JSX transform calls.
    assert hits(evidence) == {("unused-import", "src/extract.tsx", 3), ("unused-import", "src/extract.tsx", 4)}
    by_line = {e.start_line: e for e in evidence}
    assert by_line[4].end_line == 8 and by_line[4].message.startswith("`sniff` is imported but never used")
    assert by_line[3].severity == "suggestion" and domain_for(by_line[3]) == "code_quality"


async def test_java_imports_count_uses_in_code_and_javadoc_but_not_in_strings(tmp_path: Path) -> None:
    old = "package a;\n\nclass A {}\n"
    new = (
        "package a;\n\n"
        "import com.microsoft.playwright.options.WaitForSelectorState;\n"
        "import com.microsoft.playwright.Page;\n"
        "import java.util.List;\n"
        "import static java.util.Objects.requireNonNull;\n\n"
        "/** Fills a field; see {@link List}. */\n"
        "class A {\n"
        '  String s = "WaitForSelectorState";\n'
        "  void f(Page page) { requireNonNull(page); }\n}\n"
    )
    evidence = await HygieneAnalyzer().analyze(make_change(tmp_path, {"src/A.java": (old, new)}))
    assert hits(evidence) == {("unused-import", "src/A.java", 3)}


async def test_a_source_file_left_without_its_final_newline_is_flagged_where_the_change_ends_it(
    tmp_path: Path,
) -> None:
    change = make_change(
        tmp_path,
        {
            "scripts/download.js": ("", "const a = 1;\nexport default a;"),
            "README.md": ("", "# title\nno newline"),  # prose and data are not flagged
            "tests/samples/main.js": ("", "export {};"),  # fixtures often end this way on purpose
            "lib/ok.js": ("", "export {};\n"),
        },
    )
    evidence = await HygieneAnalyzer().analyze(change)
    assert hits(evidence) == {("no-final-newline", "scripts/download.js", 2)}


async def test_an_unchanged_last_line_is_not_the_changes_problem(tmp_path: Path) -> None:
    old = "const a = 1;\nexport default a;"
    new = "// header\nconst a = 1;\nexport default a;"
    evidence = await HygieneAnalyzer().analyze(make_change(tmp_path, {"lib/a.js": (old, new)}))
    assert evidence == []


async def test_a_change_without_a_tree_is_a_skip_with_its_reason(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"a.ts": ("", "export {};\n")}, with_root=False)
    with pytest.raises(AnalyzerSkipped, match="no head-side tree"):
        await HygieneAnalyzer().analyze(change)


def test_code_only_blanks_strings_and_comments_but_keeps_template_expressions_and_doc_comments() -> None:
    text = 'a("match") // match\nb(`x ${match} y ${ {k: 1}.k }`) /* match */ /** {@link Match} */\n'
    kept = code_only(text)
    assert len(kept) == len(text) and kept.count("\n") == 2
    assert kept.count("match") == 1 and "{@link Match}" in kept and "{k: 1}.k" in kept


async def test_a_quote_or_backtick_in_a_regular_expression_hides_no_use_after_it(tmp_path: Path) -> None:
    old = 'import { a } from "./a"\n\nexport const x = a\n'
    new = (
        'import { a } from "./a"\n'
        'import { parseMentions } from "./mentions"\n'
        'import { unused } from "./unused"\n'
        "\n"
        "export const x = a\n"
        "export function strip(s: string) {\n"
        "  const fence = s.trimEnd().match(/```[a-z]+$/)\n"
        "  const quoted = s.split(/['\"]/).length / 2\n"
        "  return fence ? parseMentions(s, quoted) : s\n"
        "}\n"
    )
    evidence = await HygieneAnalyzer().analyze(make_change(tmp_path, {"src/strip.ts": (old, new)}))
    assert hits(evidence) == {("unused-import", "src/strip.ts", 3)}


def test_code_only_tells_a_regular_expression_from_a_division() -> None:
    text = "x = a / b / c; m = s.match(/`[/]x/) || /'/.test(t); y = d(2) / 2 // `\n"
    assert code_only(text) == "x = a / b / c; m = s.match(/     /) || / /.test(t); y = d(2) / 2     \n"


@pytest.mark.parametrize(
    ("clause", "names"),
    [
        ("React", ["React"]),
        ("* as path", ["path"]),
        ("{ a, b as c, type D }", ["a", "c", "D"]),
        ("React, { useState }", ["React", "useState"]),
    ],
)
def test_js_import_clauses_bind_their_local_names(clause: str, names: list[str]) -> None:
    assert js_imported_names(clause) == names
