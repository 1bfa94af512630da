"""``codejury review`` with nothing to compare (on the default branch itself, a branch with no change) is no
bad input: one line says there is nothing to review, and the review is ``not_reviewed`` (exit 0; 1 under
``--fail-on unreviewed``), as the README documents for a change nothing was reviewed in. An empty diff file
is still bad input (exit 2): the command that wrote it likely failed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli import git, invoke
from tests.test_cli import repo as repo  # noqa: F401  (the fixture)


def test_on_the_default_branch_there_is_nothing_to_review_and_it_exits_0(repo: Path) -> None:  # noqa: F811
    git(repo, "checkout", "-q", "main")
    code, out, err = invoke("review", "--format", "json", cwd=repo)
    assert code == 0, err
    assert "codejury: nothing to review: main is the base branch itself, and nothing differs from it" in err
    review = json.loads(out)
    assert review["verdict"] == "not_reviewed" and review["findings"] == []
    assert review["summary"] == "Nothing to review: the change is empty (no file differs from its base)."

    code, out, err = invoke("review", "--fail-on", "unreviewed", cwd=repo)
    assert code == 1, err
    assert "Nothing to review" in out and "skipped files below" not in out


def test_a_branch_with_no_change_against_its_base_is_nothing_to_review(repo: Path) -> None:  # noqa: F811
    git(repo, "checkout", "-q", "-b", "idle", "main")
    code, out, err = invoke("review", "--format", "sarif", cwd=repo)
    assert code == 0, err
    assert "codejury: nothing to review: idle has no changes against main" in err
    assert "Nothing to review: the change is empty" in out  # SARIF carries it as a notice


def test_an_empty_diff_is_still_bad_input(tmp_path: Path) -> None:
    diff = tmp_path / "empty.diff"
    diff.write_text("")
    code, out, err = invoke("review", "--diff", str(diff))
    assert (code, out) == (2, "")
    assert err.strip() == "codejury: the change is empty: there is nothing to review"
