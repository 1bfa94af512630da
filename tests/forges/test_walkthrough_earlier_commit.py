"""A walkthrough an earlier push left in the description, when this push puts none there (``describe = false``, a
trivial change, ``describe_in = "comment"``): the summary comment says in one line which earlier commit that
walkthrough describes, so nobody reads it as this commit's."""

from __future__ import annotations

from pathlib import Path

import pytest
from codejury_fakes.github import FakeGitHub
from codejury_fakes.gitlab import FakeGitLab

from codejury.findings import Walkthrough
from codejury.forges.description import described_commit, walkthrough_block
from tests.forges.test_github_bot import ACTIONS
from tests.forges.test_github_bot import gh as gh  # noqa: F401  (the fixture)
from tests.forges.test_gitlab_bot import gl as gl  # noqa: F401  (the fixture)
from tests.forges.test_walkthrough_description import (
    NEW,
    OLD,
    PUSHED,
    _github_review,
    _gitlab_review,
    _gitlab_summary,
    _summary,
)

LATER = "5e1f0c2a9b7d4e3f8a6c1b0d2e4f6a8c0b1d3e5f"  # a later commit: the fakes' own ids share their first digits
TRIVIAL = OLD.replace("value_3 = 3\n", "value_3 = 33\n")  # the push leaves one changed line: a trivial change


def line_about_it(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if "describes an earlier commit" in line]


def test_the_commit_is_read_from_codejurys_block_only() -> None:
    block = walkthrough_block(Walkthrough(summary="Adds the settings."), "0123456789abcdef0123")
    assert described_commit(f"Mine.\n\n{block}") == "0123456789ab"
    forged = block.replace("Adds the settings.", "Edited on the page.")  # its digest no longer matches
    assert described_commit(f"Mine.\n\n{forged}") == ""
    assert described_commit("<sub>codejury · walkthrough of commit `0123456789ab`</sub>") == ""  # no block


def github_summary(gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *lines: str, **how: str) -> str:  # noqa: F811
    code, err = _github_review(gh, monkeypatch, tmp_path, ACTIONS, *lines, **how)
    assert code == 0, err
    return _summary(gh)


@pytest.mark.parametrize(
    ("later", "files"),
    [({"describe": "false"}, PUSHED), ({}, TRIVIAL), ({"describe_in": "comment"}, PUSHED)],
    ids=["describe-false", "trivial-push", "in-the-comment-now"],
)
def test_github_says_which_commit_the_descriptions_walkthrough_describes(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    later: dict[str, str],
    files: str,
) -> None:
    gh.add_pr(number=21, author="alice", files={"values.py": (OLD, NEW)}, body="Adds the settings.")
    first = gh.pull(21).head_sha
    assert line_about_it(github_summary(gh, monkeypatch, tmp_path)) == []
    assert described_commit(gh.pull(21).body) == first[:12]
    # The same head again with describe = false: the block is this commit's, nothing to say.
    assert line_about_it(github_summary(gh, monkeypatch, tmp_path, "describe = false\n")) == []
    gh.push(21, {"values.py": (OLD, files)}, head_sha=LATER)
    lines = [f"describe = {later['describe']}\n"] if "describe" in later else []
    summary = github_summary(gh, monkeypatch, tmp_path, *lines, describe_in=later.get("describe_in", "description"))
    assert line_about_it(summary) == [
        f"The walkthrough in the description describes an earlier commit, `{first[:12]}`, not this one."
    ]
    assert described_commit(gh.pull(21).body) == first[:12]  # the block itself is left as the author sees it


def test_github_says_nothing_once_a_later_push_replaces_the_block(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    gh.add_pr(number=21, author="alice", files={"values.py": (OLD, NEW)}, body="Adds the settings.")
    github_summary(gh, monkeypatch, tmp_path)
    head = gh.push(21, {"values.py": (OLD, PUSHED)}, head_sha=LATER)
    assert line_about_it(github_summary(gh, monkeypatch, tmp_path)) == []
    assert described_commit(gh.pull(21).body) == head[:12]


def gitlab_summary(gl: FakeGitLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *lines: str) -> str:  # noqa: F811
    code, err = _gitlab_review(gl, monkeypatch, tmp_path, FakeGitLab.BOT_TOKEN, *lines)
    assert code == 0, err
    return _gitlab_summary(gl)


def test_gitlab_says_which_commit_the_descriptions_walkthrough_describes(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    gl.add_mr(1, 21, files={"values.py": (OLD, NEW)}, description="Adds the settings.")
    assert line_about_it(gitlab_summary(gl, monkeypatch, tmp_path)) == []
    first = described_commit(gl.mr(1, 21)["description"])
    assert first and not LATER.startswith(first)
    gl.push(1, 21, files={"values.py": (OLD, PUSHED)}, head_sha=LATER)
    summary = gitlab_summary(gl, monkeypatch, tmp_path, "describe = false\n")
    assert line_about_it(summary) == [
        f"The walkthrough in the description describes an earlier commit, `{first}`, not this one."
    ]
