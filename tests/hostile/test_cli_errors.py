"""Hostile input at the command line: a paid-for review is never lost, and nothing ends in a traceback.

Class 6 (a finished review lost at the end): every path the review will be written to is checked
before any model is called, and a write that fails afterwards (a full disk) still prints the
review on stdout and exits 2. Class 11 (tracebacks and misleading errors): bad flags are one line
and exit 2; an unexpected exception anywhere is one line and exit 5, never 1 ("review blocked").

The reviews run in a subprocess against the fake OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from codejury_fakes.provider_server import FakeProviderServer, ToolCallReply

from tests.engine_helpers import AUTH_NEW, AUTH_OLD, unified_diff
from tests.hostile.conftest import Run, run_codejury

PATH = "app/auth/users.py"
KEY_ENV = {"TEAMGW_KEY": "gw-secret-key-4242"}
LONG_NAME = "d" * 5000  # ENAMETOOLONG: one component past NAME_MAX, the whole past PATH_MAX
UNREACHABLE = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-unused-0000000000000000"}
BOOM_PLUGIN = """
from codejury.hookspecs import hookimpl

@hookimpl
def codejury_register_renderers(register):
    raise ZeroDivisionError("the plugin divided by zero")
"""


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        srv.script("*", [ToolCallReply([("final_result", {"findings": []})])])
        yield srv


@pytest.fixture
def served(tmp_path: Path, server: FakeProviderServer) -> list[str]:
    """Arguments for a real review of a small diff, every model served by ``server``."""
    repo = tmp_path / "repo"
    (repo / "app/auth").mkdir(parents=True)
    (repo / PATH).write_text(AUTH_NEW)
    config = tmp_path / "codejury.toml"
    config.write_text(
        "analyzers = false\n"  # output paths and exit codes, not the analyzers' hits on this diff
        f'[providers.teamgw]\nbase_url = "{server.openai_base_url}"\napi_key_env = "TEAMGW_KEY"\n'
        '[models]\ntop = "teamgw:big"\nstandard = "teamgw:mid"\nlight = "teamgw:small"\n'
    )
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff(PATH, AUTH_OLD, AUTH_NEW))
    return ["review", "--diff", str(diff), "--repo", str(repo), "--config", str(config), "--format", "json"]


def review(args: list[str], cwd: Path, **kwargs: object) -> Run:
    return run_codejury(args, cwd=cwd, env={**KEY_ENV, **kwargs.pop("env", {})}, **kwargs)  # type: ignore[arg-type]


# -- class 6: the output is checked before any model is paid for -------------------------------------


@pytest.mark.parametrize(
    ("flag", "target", "needle"),
    [
        ("-o", "missing/dir/review.md", "does not exist"),
        ("-o", ".", "is a directory"),
        ("-o", f"{LONG_NAME}/review.md", "too long"),
        ("--events", "missing/dir/events.jsonl", "does not exist"),
        ("--events", ".", "is a directory"),
    ],
)
def test_an_unwritable_output_stops_the_review_before_any_model_call(
    tmp_path: Path, served: list[str], server: FakeProviderServer, flag: str, target: str, needle: str
) -> None:
    run = review([*served, flag, target], tmp_path)
    run.assert_one_line_error(2, needle)
    assert server.requests == [], "a model was paid for a review that could not be written"
    assert run.stdout == ""
    assert not (tmp_path / "missing").exists()
    run.assert_bounded(wall_s=30)


def test_a_read_only_output_file_stops_the_review_before_any_model_call(
    tmp_path: Path, served: list[str], server: FakeProviderServer
) -> None:
    read_only = Path("/proc/version")  # read-only for every user, root included
    if not read_only.exists():
        pytest.skip("no /proc on this system")
    run = review([*served, "-o", str(read_only)], tmp_path)
    run.assert_one_line_error(2, "--output /proc/version")
    assert server.requests == []


def test_a_full_disk_after_the_review_still_prints_it_and_exits_2(
    tmp_path: Path, served: list[str], server: FakeProviderServer
) -> None:
    run = review([*served, "-o", "/dev/full"], tmp_path)  # every write fails with ENOSPC
    run.assert_one_line_error(2, "/dev/full", "no space left on device", "printed on stdout")
    assert json.loads(run.stdout)["verdict"] == "approved"
    assert server.requests, "the review ran"


def test_an_event_log_on_a_full_disk_does_not_fail_the_review(
    tmp_path: Path, served: list[str], server: FakeProviderServer
) -> None:
    out = tmp_path / "review.json"
    run = review([*served, "--events", "/dev/full", "-o", str(out)], tmp_path)
    run.assert_one_line_error(2, "--events /dev/full", "no space left on device")
    result = json.loads(out.read_text())
    assert result["verdict"] == "approved"
    assert all(r["status"] == "ok" for r in result["reviewers"]), "recording must never fail a reviewer"


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs filled to the last block (needs the right to mount; skipped without it)."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"x" * 4096):
                pass
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_review_to_a_disk_that_fills_up_is_printed_instead(
    tmp_path: Path, served: list[str], server: FakeProviderServer, full_tmpfs: Path
) -> None:
    target = full_tmpfs / "review.json"
    run = review([*served, "-o", str(target)], tmp_path)
    run.assert_one_line_error(2, str(target), "no space left on device")
    assert json.loads(run.stdout)["verdict"] == "approved"


# -- class 11: bad flags are one line and exit 2 ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--plugin", ""], ["--plugin", "module name"]),
        (["--plugin", ".relative"], ["--plugin", "'.relative'"]),
        (["--plugin", "no_such_package.plugin"], ["cannot import plugin module", "no_such_package"]),
        (["--url", ""], ["--url", "empty"]),
        (["--url", "  "], ["--url", "empty"]),
        (["--repo", f"/tmp/{LONG_NAME}"], ["--repo", "file name too long"]),
        (["--repo", "/no/such/checkout"], ["--repo", "no such directory"]),
        (["--diff", f"/tmp/{LONG_NAME}"], ["diff file", "file name too long"]),
        (["--diff", f"{'d' * 300}.diff"], ["diff file", "file name too long"]),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(tmp_path: Path, args: list[str], needles: list[str]) -> None:
    run = run_codejury(["review", "--dry-run", *args], cwd=tmp_path, env=UNREACHABLE)
    run.assert_one_line_error(2, *needles)
    assert max(len(line) for line in run.stderr.splitlines()) < 400, "a 5,000-character path is shortened"
    run.assert_bounded(wall_s=30)


def test_a_plugin_module_with_no_hooks_is_harmless(tmp_path: Path) -> None:
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff(PATH, AUTH_OLD, AUTH_NEW))
    run = run_codejury(["review", "--dry-run", "--diff", str(diff), "--plugin", "os.path"], cwd=tmp_path)
    assert run.rc == 0, run.stderr
    assert "Traceback" not in run.stderr and PATH in run.stdout


def test_a_file_name_too_long_for_this_disk_is_reviewed_with_the_rest(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    """Git can name a file with a 300-byte component; no checkout here can hold it, so it is read from
    the diff alone, and every analyzer still runs on the files that are there."""
    repo = tmp_path / "repo"
    (repo / "app/auth").mkdir(parents=True)
    (repo / PATH).write_text(AUTH_NEW)
    config = tmp_path / "codejury.toml"
    config.write_text(
        f'[providers.teamgw]\nbase_url = "{server.openai_base_url}"\napi_key_env = "TEAMGW_KEY"\n'
        '[models]\ntop = "teamgw:big"\nstandard = "teamgw:mid"\nlight = "teamgw:small"\n'
    )
    far = "d" * 300 + "/settings.py"
    key = "AKIA" + "2OGYBAH6QWERTY7Z"  # split so no scanner flags this test file itself
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff(PATH, AUTH_OLD, AUTH_NEW) + unified_diff(far, "", f'AWS_KEY = "{key}"\n'))
    args = ["review", "--diff", str(diff), "--repo", str(repo), "--config", str(config), "--format", "json"]
    run = review(args, cwd=tmp_path)
    assert run.rc in (0, 1), run.stderr
    assert "Traceback" not in run.stderr and "too long" not in run.stderr.lower(), run.stderr
    findings = json.loads(run.stdout)["findings"]
    assert {f["path"] for f in findings} == {PATH, far}, "the secret in the long-named file, ruff's hits in the other"
    run.assert_bounded(wall_s=60)


def test_a_diff_piped_without_diff_dash_says_how_to_read_it(tmp_path: Path) -> None:
    diff = unified_diff(PATH, AUTH_OLD, AUTH_NEW).encode()
    run = run_codejury(["review", "--dry-run"], cwd=tmp_path, stdin=diff)
    run.assert_one_line_error(2, "not a git repository", "use --diff -")


def test_an_empty_stdin_outside_a_repository_gets_no_stdin_hint(tmp_path: Path) -> None:
    run = run_codejury(["review", "--dry-run"], cwd=tmp_path)  # stdin is /dev/null, as in most CI jobs
    run.assert_one_line_error(2, "not a git repository")
    assert "--diff -" not in run.stderr


def test_a_diff_piped_into_a_repository_with_nothing_to_review_says_how_to_read_it(tmp_path: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "T"}
    env |= {"GIT_COMMITTER_EMAIL": "t@x", "HOME": str(tmp_path)}
    (tmp_path / "a.py").write_text("x = 1\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=tmp_path, env=env, check=True)
    run = run_codejury(["review", "--dry-run"], cwd=tmp_path, stdin=unified_diff(PATH, "", "y = 2\n").encode())
    run.assert_one_line_error(2, "nothing to review", "use --diff -")


# -- class 11: an unexpected exception is one line and exit 5 ----------------------------------------


@pytest.fixture
def boom_plugin(tmp_path: Path) -> dict[str, str]:
    """A plugin whose hook raises an exception no one planned for."""
    (tmp_path / "boom_plugin.py").write_text(BOOM_PLUGIN)
    return {"PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def test_an_unexpected_exception_in_a_plugin_is_one_line_and_exit_5(
    tmp_path: Path, served: list[str], boom_plugin: dict[str, str]
) -> None:
    run = review([*served, "--plugin", "boom_plugin"], tmp_path, env=boom_plugin)
    run.assert_one_line_error(5, "internal error", "ZeroDivisionError", "the plugin divided by zero", "CODEJURY_DEBUG")
    assert len(run.stderr.strip().splitlines()) == 1
    run.assert_bounded(wall_s=60)


def test_codejury_debug_shows_the_traceback_of_an_internal_error(
    tmp_path: Path, served: list[str], boom_plugin: dict[str, str]
) -> None:
    run = review([*served, "--plugin", "boom_plugin"], tmp_path, env={**boom_plugin, "CODEJURY_DEBUG": "1"})
    assert run.rc == 5
    assert "Traceback" in run.stderr and "boom_plugin.py" in run.stderr
    assert run.stderr.rstrip().splitlines()[-1].startswith("codejury: internal error: ZeroDivisionError")
