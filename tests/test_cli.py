"""The command line: dry runs, output formats, exit codes and one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from codejury.cli import cli
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, unified_diff

GIT_ENV = {
    "GIT_AUTHOR_NAME": "T",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "T",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> None:
    import os

    subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        env={**os.environ, **GIT_ENV, "HOME": str(repo)},
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose feature branch adds a SQL lookup to app/auth/users.py."""
    root = tmp_path / "repo"
    (root / "app/auth").mkdir(parents=True)
    (root / "app/auth/users.py").write_text(AUTH_OLD)
    (root / "AGENTS.md").write_text("Use db.fetch_user for lookups.\n")
    (root / ".codejury.toml").write_text('exclude = ["docs/**"]\n')
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Initial")
    git(root, "checkout", "-q", "-b", "feature")
    (root / "app/auth/users.py").write_text(AUTH_NEW)
    (root / "docs").mkdir()
    (root / "docs/notes.md").write_text("notes\n")
    (root / "uv.lock").write_text("version = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Add user lookup")
    return root


def invoke(*args: str, cwd: Path | None = None, input: str | None = None) -> tuple[int, str, str]:
    runner = CliRunner()
    if cwd is not None:
        import os

        old = Path.cwd()
        os.chdir(cwd)
        try:
            result = runner.invoke(cli, list(args), input=input, catch_exceptions=False)
        finally:
            os.chdir(old)
    else:
        result = runner.invoke(cli, list(args), input=input, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_dry_run_json_prints_the_plan_of_the_current_branch(repo: Path) -> None:
    code, out, err = invoke("review", "--dry-run", "--format", "json", cwd=repo)
    assert code == 0, err
    plan = json.loads(out)
    assert set(plan) >= {"tier", "reviewers", "skipped_files", "estimated_input_tokens", "estimated_cost_usd"}
    assert plan["tier"] == "full"
    names = [r["name"] for r in plan["reviewers"]]
    assert "coordinator" not in names
    assert names[:4] == ["security", "performance", "code_quality", "documentation"]
    assert "agents_md" in names  # the repository has agent instructions
    assert all(r["files"] == ["app/auth/users.py"] for r in plan["reviewers"])
    skipped = {s["path"]: s["reason"] for s in plan["skipped_files"]}
    assert set(skipped) == {"docs/notes.md", "uv.lock"}  # repo config exclude + lock file
    assert plan["estimated_input_tokens"] > 0
    assert "embedded local model" in err  # says which model it would use, in one line


def test_dry_run_markdown_with_an_explicit_model(repo: Path) -> None:
    code, out, err = invoke(
        "review",
        "--dry-run",
        "--format",
        "markdown",
        "--model",
        "openai:gpt-5-mini",
        "--model-for",
        "security=anthropic:claude-opus-4-5",
        cwd=repo,
    )
    assert code == 0, err
    assert "anthropic:claude-opus-4-5" in out and "openai:gpt-5-mini" in out
    assert "uv.lock" in out


def test_diff_from_stdin_without_a_repository(tmp_path: Path) -> None:
    diff = unified_diff("app/auth/users.py", AUTH_OLD, AUTH_NEW)
    code, out, err = invoke("review", "--diff", "-", "--dry-run", "--format", "json", input=diff)
    assert code == 0, err
    assert json.loads(out)["reviewers"][0]["files"] == ["app/auth/users.py"]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["--diff", "-"], "this is not a diff\n", "diff"),
        (["--diff", "-"], "", "empty"),
        (["--diff", "missing.diff"], None, "missing.diff"),
        (["--diff", "-", "--base", "main"], "x", "--diff cannot be combined"),
        (["--diff", "-", "--model-for", "security"], unified_diff("a.py", "", "x = 1\n"), "NAME=VALUE"),
    ],
)
def test_bad_input_exits_2_with_a_one_line_cause(
    tmp_path: Path, args: list[str], stdin: str | None, message: str
) -> None:
    code, out, err = invoke("review", "--dry-run", *args, cwd=tmp_path, input=stdin)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codejury: ") and message in lines[0]


def test_outside_a_git_repository_is_a_clear_error(tmp_path: Path) -> None:
    code, _, err = invoke("review", "--dry-run", cwd=tmp_path)
    assert code == 2 and "git" in err.lower()


def test_unknown_ref_is_a_clear_error(repo: Path) -> None:
    code, _, err = invoke("review", "--dry-run", "--base", "no-such-branch", cwd=repo)
    assert code == 2 and "no-such-branch" in err


def test_missing_api_key_names_the_variable_and_exits_2(repo: Path) -> None:
    code, out, err = invoke("review", "--model", "openai:gpt-5-mini", cwd=repo)
    assert code == 2 and out == ""
    assert "OPENAI_API_KEY" in err


def test_invalid_repo_config_is_reported_with_its_file(repo: Path) -> None:
    git(repo, "checkout", "-q", "main")
    (repo / ".codejury.toml").write_text("fail_on = 'sometimes'\n")
    git(repo, "commit", "-qam", "bad config")
    git(repo, "checkout", "-q", "feature")
    git(repo, "rebase", "-q", "main")
    code, _, err = invoke("review", "--dry-run", "--base", "main", cwd=repo)
    assert code == 2 and ".codejury.toml" in err and "fail_on" in err


def test_config_in_the_change_itself_is_ignored(repo: Path) -> None:
    (repo / ".codejury.toml").write_text('exclude = ["app/**"]\n')
    git(repo, "commit", "-qam", "try to skip my own files")
    code, out, err = invoke("review", "--dry-run", "--format", "json", cwd=repo)
    assert code == 0, err
    plan = json.loads(out)
    assert "app/auth/users.py" not in {s["path"] for s in plan["skipped_files"]}


def test_help_lists_the_review_flags() -> None:
    code, out, _ = invoke("review", "--help")
    assert code == 0
    for flag in ("--working-tree", "--diff", "--dry-run", "--fail-on", "--break-glass", "--events", "--model-for"):
        assert flag in out


def test_binary_only_change_is_reviewed_as_nothing_to_review(repo: Path) -> None:
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    git(repo, "add", "logo.png")
    git(repo, "commit", "-qm", "logo")
    code, out, err = invoke("review", "--base", "HEAD~1", "--format", "json", cwd=repo)
    assert code == 0, err
    review = json.loads(out)
    assert review["verdict"] == "approved" and review["findings"] == [] and review["reviewers"] == []
    assert review["skipped_files"] == [{"path": "logo.png", "reason": "binary file"}]
    assert "No reviewable files" in review["summary"]


def test_a_5_mb_single_file_change_is_planned_quickly(tmp_path: Path) -> None:
    big = "".join(f"value_{i} = compute({i}, 'padding text to make the line longer')\n" for i in range(80_000))
    assert len(big) > 5_000_000
    diff = unified_diff("app/generated_values.py", "", big)
    code, out, err = invoke("review", "--diff", "-", "--dry-run", "--format", "json", input=diff)
    assert code == 0, err
    plan = json.loads(out)
    assert plan["tier"] == "full"
    assert plan["estimated_input_tokens"] > 1_000_000  # the plan shows what it would cost


def test_non_utf8_bytes_in_a_diff_do_not_break_the_review(tmp_path: Path) -> None:
    diff = (
        b"diff --git a/legacy.py b/legacy.py\nindex 1111111..2222222 100644\n--- a/legacy.py\n+++ b/legacy.py\n"
        b"@@ -1 +1,2 @@\n # caf\xe9\n+name = 'na\xefve \xff'\n"
    )
    path = tmp_path / "latin1.diff"
    path.write_bytes(diff)
    code, out, err = invoke("review", "--diff", str(path), "--dry-run", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["reviewers"][0]["files"] == ["legacy.py"]
