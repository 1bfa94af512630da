"""The command line: dry runs, output formats, exit codes and one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
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
    # No provider configured: the embedded model, weak, reviews with one generalist call in place of the
    # security, performance, code quality and documentation reviewers (weak_panel = "single").
    assert names == ["generalist", "agents_md"]  # agents_md: the repository has agent instructions
    assert all(r["files"] == ["app/auth/users.py"] for r in plan["reviewers"])
    skipped = {s["path"]: s["reason"] for s in plan["skipped_files"]}
    assert set(skipped) == {"docs/notes.md", "uv.lock"}  # repo config exclude + lock file
    assert plan["estimated_input_tokens"] > 0
    assert "embedded" in err  # says which model it would use (or what to install for it), in one line


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
    assert review["verdict"] == "not_reviewed" and review["findings"] == [] and review["reviewers"] == []
    assert review["skipped_files"] == [{"path": "logo.png", "reason": "binary file"}]
    assert "Nothing was reviewed" in review["summary"] and "logo.png: binary file" in review["summary"]


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


# -- start-up, internal errors, dry-run checks, progress ---------------------------------------------


def test_fail_on_choices_are_the_config_ones() -> None:
    from codejury import cli as cli_module
    from codejury.config import FAIL_ON_CHOICES

    assert cli_module.FAIL_ON_CHOICES == FAIL_ON_CHOICES


def heavy_modules_after(args: list[str], heavy: tuple[str, ...]) -> tuple[subprocess.CompletedProcess[str], str]:
    """``codejury ARGS`` in a fresh interpreter: the run, and the exit code then those of ``heavy`` it imported."""
    probe = (
        "import sys\nfrom codejury.cli import cli\ncode = 0\n"
        f"try:\n    cli.main({args!r})\nexcept SystemExit as exc:\n    code = exc.code\n"
        f"print(code, sorted(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    *_, last = done.stderr.splitlines() or [""]
    return done, last


@pytest.mark.parametrize("args", [["--help"], ["review", "--help"]])
def test_help_imports_no_provider_sdk_nor_the_pipeline(args: list[str]) -> None:
    heavy = ("openai", "anthropic", "pydantic_ai", "pydantic", "codejury.pipeline", "rich", "asyncio")
    done, loaded = heavy_modules_after(args, heavy)
    assert "Usage:" in done.stdout and "Exit codes:" in done.stdout or args == ["--help"]
    assert done.stderr.strip() == loaded == "0 []", done.stderr


@pytest.mark.parametrize("args", [["--url", ""], ["--plugin", ".relative"], ["--repo", "/no/such/checkout"]])
def test_a_bad_flag_is_refused_before_the_model_layer_is_imported(args: list[str]) -> None:
    heavy = ("openai", "anthropic", "pydantic_ai", "codejury.session", "codejury.pipeline")
    done, loaded = heavy_modules_after(["review", "--dry-run", *args], heavy)
    assert loaded == "2 []", done.stderr
    [error, _] = done.stderr.splitlines()  # the refusal in one line, then the probe's own line
    assert error.startswith("codejury: ")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--diff", "{diff}", "--config", "{bad}"], "verify must be"),
        (["--diff", "{missing}"], "not found"),
        (["--url", "https://github.com/octo/app/issues/7"], "is not a GitHub pull request URL"),
    ],
)
def test_bad_input_read_by_the_composition_root_is_refused_before_the_model_layer_is_imported(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    # A bad configuration, a missing diff, a URL of no merge request: answered in a fraction of the second
    # that importing pydantic-ai and the provider SDKs takes.
    bad = tmp_path / "bad.toml"
    bad.write_text('verify = "bogus"\n', encoding="utf-8")
    diff = tmp_path / "change.diff"
    diff.write_text("--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n", encoding="utf-8")
    args = [a.format(bad=bad, diff=diff, missing=tmp_path / "missing.diff") for a in args]
    heavy = ("openai", "anthropic", "pydantic_ai", "codejury.pipeline")
    done, loaded = heavy_modules_after(["review", *args], heavy)
    assert loaded == "2 []", done.stderr
    [error, _] = done.stderr.splitlines()
    assert error.startswith("codejury: ") and needle in error, error


def test_an_unexpected_exception_exits_5_with_one_line(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from codejury import pipeline

    async def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("reviewers\nsecond line")

    monkeypatch.setattr(pipeline, "review", broken)
    monkeypatch.delenv("CODEJURY_DEBUG", raising=False)
    code, out, err = invoke("review", "--dry-run", cwd=repo)
    assert code == 5 and out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("codejury: internal error: KeyError: ") and "second line" in last
    assert "CODEJURY_DEBUG=1" in last and "Traceback" not in err

    monkeypatch.setenv("CODEJURY_DEBUG", "1")
    code, _, err = invoke("review", "--dry-run", cwd=repo)
    assert code == 5 and "Traceback" in err and "in broken" in err


def test_dry_run_names_every_model_that_cannot_run(repo: Path) -> None:
    code, out, err = invoke(
        "review", "--dry-run", "--format", "json", "--model", "openai:gpt-5-mini",
        "--model-for", "security=nosuch:model-x", cwd=repo,
    )  # fmt: skip
    assert code == 0, err
    problems = json.loads(out)["model_problems"]
    assert problems["openai:gpt-5-mini"] == "OPENAI_API_KEY is not set"
    assert problems["nosuch:model-x"].startswith("unknown provider 'nosuch'")

    code, out, _ = invoke(
        "review", "--dry-run", "--format", "markdown", "--model", "anthropic:claude-haiku-4-5", cwd=repo
    )
    assert code == 0 and "Cannot run here" in out and "ANTHROPIC_API_KEY is not set" in out


def test_a_usable_model_has_no_problem_in_the_plan(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000000000")
    code, out, err = invoke("review", "--dry-run", "--format", "json", "--model", "openai:gpt-5-mini", cwd=repo)
    assert code == 0, err
    assert json.loads(out)["model_problems"] == {}


def test_without_the_local_extra_the_notice_says_what_to_install(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from codejury.models import readiness

    monkeypatch.setattr(readiness, "_installed", lambda name: False)
    code, out, err = invoke("review", "--dry-run", "--format", "json", cwd=repo)
    assert code == 0, err
    assert "using the embedded local model" not in err
    assert "not installed (llama-cpp-python)" in err or "runtime is not installed" in err
    assert "pip install 'codejury[local]'" in err and "CODEJURY_MODEL" in err
    problem = json.loads(out)["model_problems"]["local:qwen2.5-coder-1.5b"]
    assert "runtime is not installed" in problem


def test_a_review_prints_a_line_per_stage_on_stderr_and_only_the_review_on_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codejury_fakes.provider_server import FakeProviderServer, ToolCallReply
    from pydantic_ai import models

    from codejury.models import registry

    finding = {
        "category": "security", "severity": "warning", "path": "app/auth/users.py", "start_line": 10,
        "end_line": 10, "title": "Query built from input", "body": "Use parameters.", "confidence": 0.9,
    }  # fmt: skip
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)
    registry.clear_model_cache()
    with FakeProviderServer() as server:
        server.script("sec", [ToolCallReply([("final_result", {"findings": [finding]})])])
        server.script("big", [ToolCallReply([("final_result", {"decisions": []})])])
        server.script("*", [ToolCallReply([("final_result", {"findings": []})])])
        config = tmp_path / "codejury.toml"
        config.write_text(
            "analyzers = false\n"  # the progress lines of the panel, not the analyzers' checks
            f'[providers.gw]\nbase_url = "{server.openai_base_url}"\napi_key_env = "GW_KEY"\n'
            '[models]\ntop = "gw:big"\nstandard = "gw:mid"\nlight = "gw:small"\n'
            '[reviewers.security]\nmodel = "gw:sec"\n'
            + "".join(f'[prices."gw:{m}"]\ninput = 1.0\noutput = 1.0\n' for m in ("big", "mid", "sec", "small"))
        )
        diff = tmp_path / "change.diff"
        diff.write_text(unified_diff("app/auth/users.py", AUTH_OLD, AUTH_NEW))
        result = CliRunner(env={"GW_KEY": "gw-key-123456789"}).invoke(
            cli,
            ["review", "--diff", str(diff), "--config", str(config), "--format", "json", "--fail-on", "never"],
            catch_exceptions=False,
        )
    registry.clear_model_cache()
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["findings"]  # stdout is the review and nothing else
    lines = result.stderr.splitlines()
    assert not [line for line in lines if "discussion" in line]  # a local review expects none: nothing to say
    assert lines[0] == "codejury: tier full: security, performance, code_quality, documentation (4 reviewers)"
    assert "codejury: security started (gw:sec)" in lines
    assert "codejury: documentation started (gw:small)" in lines
    done = [line for line in lines if line.startswith("codejury: security done in ")]
    assert len(done) == 1 and done[0].endswith(" s (1 finding)")
    assert "codejury: coordinator started (gw:big): judging 1 finding" in lines
    assert any(line.startswith("codejury: coordinator done in ") for line in lines)
    assert lines.index("codejury: security started (gw:sec)") < lines.index(done[0])
