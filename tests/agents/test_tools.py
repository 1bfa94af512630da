"""Read-only repository tools: confinement, limits, and the bare-diff mode."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from codejury.agents.agent_tools import as_agent_tools
from codejury.agents.tools import TOOL_NAMES, RepoTools

PATCHES = {
    "src/app.py": "    1 + import os\n    2 + print(os.environ['TOKEN'])\n",
    "README.md": "   3 + Hello\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\nprint(os.environ['TOKEN'])\n")
    (root / "README.md").write_text("Hello\n")
    (root / "lines.txt").write_text("".join(f"line {i}\n" for i in range(1, 1001)))
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\nsecret = yes\n")
    (tmp_path / "outside.txt").write_text("outside secret\n")
    return root


@pytest.fixture
def tools(repo: Path) -> RepoTools:
    return RepoTools(repo, PATCHES, max_read_bytes=4_000, max_read_lines=50, max_grep_matches=5)


@pytest.mark.parametrize(
    ("path", "cause"),
    [
        ("/etc/passwd", "absolute paths are not allowed"),
        ("../outside.txt", "'..' is not allowed"),
        ("src/../../outside.txt", "'..' is not allowed"),
        (".git/config", ".git directory is off limits"),
        ("src/../.git/config", "'..' is not allowed"),
        ("./.git/config", ".git directory is off limits"),
    ],
)
def test_read_file_refuses_escapes(tools: RepoTools, path: str, cause: str) -> None:
    answer = tools.read_file(path)
    assert answer.startswith("error: ")
    assert cause in answer
    assert "secret" not in answer


def test_symlink_leaving_the_root_is_refused(repo: Path, tools: RepoTools) -> None:
    os.symlink(repo.parent / "outside.txt", repo / "escape.txt")
    os.symlink(repo.parent, repo / "parent")
    assert tools.read_file("escape.txt").startswith("error: path leaves the repository")
    assert tools.read_file("parent/outside.txt").startswith("error: path leaves the repository")
    assert tools.list_files("parent").startswith("error: path leaves the repository")
    assert tools.grep("outside") == "no matches for 'outside'"


def test_symlink_into_git_is_refused(repo: Path, tools: RepoTools) -> None:
    os.symlink(repo / ".git" / "config", repo / "cfg")
    assert tools.read_file("cfg").startswith("error: ")


def test_symlink_inside_the_root_is_followed(repo: Path, tools: RepoTools) -> None:
    os.symlink(repo / "src" / "app.py", repo / "alias.py")
    assert tools.read_file("alias.py") == "    1 | import os\n    2 | print(os.environ['TOKEN'])"


def test_missing_file_names_the_changed_files(tools: RepoTools) -> None:
    answer = tools.read_file("src/nope.py")
    assert answer == "error: no such file: src/nope.py; changed files are: README.md, src/app.py"


def test_deleted_changed_file_points_to_read_patch(repo: Path, tools: RepoTools) -> None:
    (repo / "README.md").unlink()
    assert "use read_patch" in tools.read_file("README.md")


def test_read_file_numbers_lines_and_reads_ranges(tools: RepoTools) -> None:
    assert tools.read_file("./src//app.py", 2, 2) == "    2 | print(os.environ['TOKEN'])"
    assert tools.read_file("lines.txt", 998).splitlines() == [
        "  998 | line 998",
        "  999 | line 999",
        " 1000 | line 1000",
    ]


def test_read_file_caps_lines_and_says_how_to_continue(tools: RepoTools, repo: Path) -> None:
    (repo / "mid.txt").write_text("x\n" * 120)
    lines = tools.read_file("mid.txt").splitlines()
    assert len(lines) == 51
    assert lines[49] == "   50 | x"
    assert lines[50] == "… more lines follow; call read_file with start_line=51 to read further"
    assert len(tools.read_file("mid.txt", 10, 500).splitlines()) == 51


def test_read_file_range_errors(tools: RepoTools) -> None:
    assert tools.read_file("src/app.py", 5).startswith("error: src/app.py has only 2 lines")
    assert tools.read_file("src/app.py", 0).startswith("error: start_line")
    assert tools.read_file("src/app.py", 3, 2).startswith("error: start_line")
    assert tools.read_file("src").startswith("error: src is a directory")
    assert tools.read_file("").startswith("error: ")


def test_oversized_file_needs_a_line_range(tools: RepoTools) -> None:
    assert (
        tools.read_file("lines.txt")
        == "error: file too large (8893 bytes); read a line range with start_line and end_line"
    )
    assert (
        tools.read_file("lines.txt", 500, 501) == "  500 | line 500\n  501 | line 501\n"
        "… more lines follow; call read_file with start_line=502 to read further"
    )


def test_binary_file_is_refused(repo: Path, tools: RepoTools) -> None:
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert tools.read_file("logo.png") == "error: binary file: logo.png"
    assert tools.grep("PNG") == "no matches for 'PNG'"


def test_non_utf8_text_is_decoded_with_replacement(repo: Path, tools: RepoTools) -> None:
    (repo / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    assert tools.read_file("latin1.txt") == "    1 | caf\ufffd"


def test_empty_file(repo: Path, tools: RepoTools) -> None:
    (repo / "empty.txt").write_text("")
    assert tools.read_file("empty.txt") == "(empty.txt is empty)"


def test_read_patch(tools: RepoTools) -> None:
    assert tools.read_patch("src/app.py") == PATCHES["src/app.py"]
    assert tools.read_patch("./src/app.py") == PATCHES["src/app.py"]
    assert tools.read_patch("lines.txt").startswith("error: 'lines.txt' is not a changed file; changed files are:")


def test_list_files_skips_git_and_marks_directories(tools: RepoTools) -> None:
    assert tools.list_files() == "README.md\nlines.txt\nsrc/"
    assert tools.list_files("src") == "src/app.py"
    assert tools.list_files(".git").startswith("error: ")
    assert tools.list_files("/").startswith("error: absolute")
    assert tools.list_files("README.md").startswith("error: not a directory")


def test_grep_finds_lines_with_path_and_number(tools: RepoTools) -> None:
    assert tools.grep(r"environ\[") == "src/app.py:2: print(os.environ['TOKEN'])"
    assert tools.grep("Hello", "*.md") == "README.md:1: Hello"
    assert tools.grep("Hello", "src/*") == "no matches for 'Hello'"
    assert tools.grep("secret") == "no matches for 'secret'"  # .git is never searched


def test_grep_rejects_a_bad_regex(tools: RepoTools) -> None:
    answer = tools.grep("def (unclosed")
    assert answer.startswith("error: invalid regular expression 'def (unclosed'")


def test_grep_caps_matches_and_says_so(tools: RepoTools) -> None:
    small = RepoTools(tools.root, PATCHES, max_grep_matches=5)
    lines = small.grep(r"^line \d+$").splitlines()
    assert len(lines) == 6
    assert lines[0] == "lines.txt:1: line 1"
    assert lines[-1] == "… stopped at 5 matches; narrow the pattern or path_glob"


def test_grep_skips_files_over_the_size_limit(tools: RepoTools) -> None:
    assert tools.grep(r"^line 7$") == "no matches for '^line 7$'"


def test_grep_stops_after_scanning_too_many_files(repo: Path) -> None:
    for i in range(30):
        (repo / f"f{i:02}.txt").write_text("needle\n")
    capped = RepoTools(repo, PATCHES, max_grep_files=10, max_grep_matches=1000)
    answer = capped.grep("needle").splitlines()
    assert answer[-1] == "… search stopped after 10 files (limit reached); results are incomplete"
    assert len(answer) < 11


def test_without_a_checkout_only_patches_are_available() -> None:
    bare = RepoTools(None, PATCHES)
    assert bare.read_file("src/app.py") == (
        "error: no repository checkout; only the patches are available: use read_patch"
    )
    assert bare.list_files() == "(no repository checkout: only the changed files are known)\nREADME.md\nsrc/app.py"
    assert bare.list_files("src").endswith("\nsrc/app.py")
    assert bare.grep("TOKEN") == (
        "(no repository checkout: matches in the patches, with their patch line numbers)\n"
        "src/app.py:     2 + print(os.environ['TOKEN'])"
    )
    assert bare.grep("Hello", "*.py") == "no matches for 'Hello'"
    assert bare.read_patch("README.md") == PATCHES["README.md"]


def test_agent_tools_follow_the_allowed_set(tools: RepoTools) -> None:
    expected = {"read_file", "read_patch", "grep", "list_files", "search_code", "find_references", "get_pr_discussion"}
    assert expected == TOOL_NAMES
    assert [t.name for t in as_agent_tools(tools, TOOL_NAMES)] == [
        "grep",
        "list_files",
        "read_file",
        "read_patch",
    ]
    assert [t.name for t in as_agent_tools(tools, frozenset({"read_patch", "shell"}))] == ["read_patch"]
    read_file = next(t for t in as_agent_tools(tools, TOOL_NAMES) if t.name == "read_file")
    schema = read_file.tool_def.parameters_json_schema
    assert set(schema["properties"]) == {"path", "start_line", "end_line"}
    assert all(p.get("description") for p in schema["properties"].values())


async def test_agent_calls_a_tool_and_sees_its_refusal_as_text(tools: RepoTools) -> None:
    seen: list[str] = []

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": "../outside.txt"})])
        seen.append(str(returns[0].content))
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(script), tools=as_agent_tools(tools, TOOL_NAMES), output_type=str)
    await agent.run("review")
    assert seen == ["error: '..' is not allowed in paths: ../outside.txt"]


def test_a_catastrophic_pattern_on_the_patches_is_refused_in_time() -> None:
    bare = RepoTools(None, {"a.txt": "    1 + " + "x" * 3000 + "\n"}, time_budget_s=60.0)
    answer = bare.grep("(x+x+)+y")
    assert answer.startswith("error: the pattern '(x+x+)+y' took too long on one line (a.txt:1)")


def test_over_long_patterns_and_globs_are_refused(tools: RepoTools) -> None:
    assert tools.grep("a" * 1001).startswith("error: pattern too long (1001 characters")
    assert tools.grep("a", "*" * 501).startswith("error: path_glob too long")


def test_a_stopped_call_ends_at_its_next_check(tools: RepoTools) -> None:
    from codejury.agents.bounded import Budget

    budget = Budget(60)
    budget.stop()
    assert tools.grep("line", budget=budget) == (
        "no matches for 'line' (search stopped after 0 files (time limit reached); results are incomplete)"
    )
    assert tools.read_file("lines.txt", 1, 5, budget=budget) == (
        "error: stopped at line 0: the time limit of this call was reached"
    )
