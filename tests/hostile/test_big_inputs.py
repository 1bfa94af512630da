"""Class 4: size caps that could be bypassed. Every read from outside is capped while it is read.

Devices and FIFOs report a size of 0 and never end; sparse files are huge but cost nothing to
make; a committed file is read by git, not by us. Each run must end with one error line (or a
plan that lists what it left out), under 500 MB, in bounded time.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.conftest import run_codejury

DIFF = b"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
WALL_S = 30.0


def sparse(path: Path, size: int) -> Path:
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


@pytest.fixture
def endless_fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO fed without end by a writer thread, until the reader goes away."""
    fifo = tmp_path / "endless.fifo"
    os.mkfifo(fifo)
    stop = threading.Event()

    def feed() -> None:
        try:
            fd = os.open(fifo, os.O_WRONLY)
        except OSError:
            return
        chunk = b"+" * 65536
        try:
            while not stop.is_set():
                os.write(fd, chunk)
        except OSError:  # the reader went away: that is the point
            pass
        finally:
            os.close(fd)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    yield fifo
    stop.set()
    if writer.is_alive():  # nobody opened the FIFO: let the writer's open() return
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    writer.join(timeout=5)


def test_dev_zero_as_the_diff(tmp_path: Path) -> None:
    run = run_codejury(["review", "--diff", "/dev/zero", "--dry-run"], cwd=tmp_path)
    run.assert_one_line_error(2, "diff file /dev/zero", "20 MB limit")
    run.assert_bounded(WALL_S)


def test_an_endless_fifo_as_the_diff(tmp_path: Path, endless_fifo: Path) -> None:
    run = run_codejury(["review", "--diff", str(endless_fifo), "--dry-run"], cwd=tmp_path)
    run.assert_one_line_error(2, "endless.fifo", "20 MB limit")
    run.assert_bounded(WALL_S)


@pytest.mark.waits
@pytest.mark.parametrize("source", ["--diff", "--config"])
def test_a_fifo_nobody_writes_to_ends_after_the_read_timeout(tmp_path: Path, source: str) -> None:
    silent = tmp_path / "silent.fifo"
    os.mkfifo(silent)
    diff = tmp_path / "change.diff"
    diff.write_bytes(DIFF)
    args = ["--diff", str(silent)] if source == "--diff" else ["--diff", str(diff), "--config", str(silent)]
    run = run_codejury(["review", *args, "--dry-run"], cwd=tmp_path, env={"CODEJURY_READ_TIMEOUT_S": "1"}, timeout_s=30)
    run.assert_one_line_error(2, "silent.fifo", "sent nothing for 1 s")
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    run.assert_bounded(10.0)


@pytest.mark.waits
def test_a_diff_on_stdin_from_a_stalled_writer_ends_after_the_read_timeout(tmp_path: Path) -> None:
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to hand a pipe's read end to the child as its stdin")
    read_end, write_end = os.pipe()  # the writer end stays open and silent until the run is over
    try:
        stalled = Path(f"/proc/self/fd/{read_end}")
        run = run_codejury(["review", "--diff", "-", "--dry-run"], cwd=tmp_path, stdin_path=stalled,
                           env={"CODEJURY_READ_TIMEOUT_S": "1"}, timeout_s=30)  # fmt: skip
    finally:
        os.close(read_end)
        os.close(write_end)
    run.assert_one_line_error(2, "the diff on stdin", "sent nothing for 1 s")
    run.assert_bounded(10.0)


def test_a_sparse_2_gb_diff_file(tmp_path: Path) -> None:
    big = sparse(tmp_path / "huge.diff", 2 << 30)
    run = run_codejury(["review", "--diff", str(big), "--dry-run"], cwd=tmp_path)
    run.assert_one_line_error(2, "huge.diff", "2,147,483,648 bytes", "20 MB limit")
    run.assert_bounded(WALL_S)


def test_endless_stdin_with_diff_dash(tmp_path: Path) -> None:
    run = run_codejury(["review", "--diff", "-", "--dry-run"], cwd=tmp_path, stdin_path=Path("/dev/zero"))
    run.assert_one_line_error(2, "diff on stdin", "20 MB limit")
    run.assert_bounded(WALL_S)


@pytest.mark.parametrize("source", ["/dev/zero", "fifo", "sparse"])
def test_an_endless_or_huge_config_file(tmp_path: Path, request: pytest.FixtureRequest, source: str) -> None:
    diff = tmp_path / "change.diff"
    diff.write_bytes(DIFF)
    if source == "fifo":
        config = str(request.getfixturevalue("endless_fifo"))
    elif source == "sparse":
        config = str(sparse(tmp_path / "huge.toml", 2 << 30))
    else:
        config = source
    run = run_codejury(["review", "--diff", str(diff), "--config", config, "--dry-run"], cwd=tmp_path)
    run.assert_one_line_error(2, f"config file {config}", "1 MB limit")
    run.assert_bounded(WALL_S)


@pytest.mark.parametrize("field", ["-1,{n} +1,1", "-1,1 +{n},1"])
def test_a_5000_digit_hunk_count(tmp_path: Path, field: str) -> None:
    diff = tmp_path / "digits.diff"
    diff.write_bytes(b"--- a/x.py\n+++ b/x.py\n@@ " + field.format(n="9" * 5000).encode() + b" @@\n-a\n+b\n")
    run = run_codejury(["review", "--diff", str(diff), "--dry-run"], cwd=tmp_path)
    run.assert_one_line_error(2, "malformed diff at line 3", "5000 digits")
    assert "set_int_max_str_digits" not in run.stderr
    run.assert_bounded(WALL_S)


def git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "A",
        "GIT_COMMITTER_EMAIL": "a@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=repo, env=env, check=True, capture_output=True)


def test_a_154_mb_committed_file_in_git_mode(tmp_path: Path) -> None:
    """Committed text far over the cap: diffed as binary, left out of the export, never held whole."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def f():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "app.py").write_text("def f():\n    return 2\n")
    line = b"INSERT INTO t VALUES (1, 'generated row of a data dump nobody reads');\n"
    with (repo / "dump.sql").open("wb") as fh:  # streamed: the test holds one line at a time
        for _ in range(154 * 1024 * 1024 // len(line)):
            fh.write(line)
    git(repo, "-c", "core.compression=1", "add", "-A")
    git(repo, "commit", "-q", "-m", "add a dump")
    run = run_codejury(["review", "--dry-run", "--format", "json"], cwd=repo, timeout_s=120)
    assert run.rc == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert "dump.sql (too large: 154 MB, over the 8 MB limit)" in run.stderr
    assert '"dump.sql"' in run.stdout  # listed among the skipped files of the plan
    run.assert_bounded(90.0)
