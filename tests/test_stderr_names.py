"""A file name on stderr shows its invisible characters: a bidi override or a zero-width space in a changed
file's name is written as ``<U+202E>``, as published text shows it, never passed to the terminal to reorder
or hide what the line says."""

from __future__ import annotations

from pathlib import Path

import pytest

from codejury.cli_io import shown_path, visible_text
from codejury.session import progress_on_stderr, warn_on_stderr
from tests.test_cli import git, invoke, repo

__all__ = ["repo"]  # the fixture: a feature branch over a small repository

BIDI_NAME = "data/report\u202e\u200byp.csv"  # shows as "report" + "py.csv" reversed, a zero-width space inside


def test_a_changed_files_name_on_stderr_shows_its_invisible_characters(repo: Path) -> None:
    target = repo / BIDI_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"a,b\n" * (9 * 1024 * 1024 // 4 + 1))  # over the size cap: named on stderr as left out
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Add a report")
    code, _, err = invoke("review", "--dry-run", "--format", "json", cwd=repo)
    assert code == 0, err
    assert "data/report<U+202E><U+200B>yp.csv" in err
    assert "\u202e" not in err and "\u200b" not in err


@pytest.mark.parametrize("say", [warn_on_stderr, progress_on_stderr])
def test_every_line_on_stderr_writes_controls_out(say: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert callable(say)
    say("skipped a\u2066b\u2069.py and \x1b[2Jc.py")
    err = capsys.readouterr().err
    assert "a<U+2066>b<U+2069>.py" in err and "<U+001B>[2Jc.py" in err and "\x1b" not in err


def test_shown_path_writes_controls_out_and_keeps_other_text() -> None:
    assert shown_path("caf\u00e9/\u202egnp.py") == "caf\u00e9/<U+202E>gnp.py"
    assert shown_path("a\ncodejury: approved.py") == "a<U+000A>codejury: approved.py"  # one line, always
    assert visible_text("tab\tand\nnewline \u4e2d") == "tab\tand\nnewline \u4e2d"
