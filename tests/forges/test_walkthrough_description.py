"""``describe_in = "description"``: the walkthrough in the merge request's description between codejury's markers.

The author's text around the block is kept byte for byte, the block is replaced (never repeated) on each push, the
description is read right before it is written, marker text in the author's own words is never taken for codejury's
block, and a token that may not edit the description leaves the walkthrough in the summary with a note.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from codejury_fakes.github import FakeGitHub
from codejury_fakes.gitlab import FakeGitLab

from codejury.forges.description import (
    END,
    IN_DESCRIPTION,
    block_span,
    digest,
    with_walkthrough,
    without_walkthrough,
)
from codejury.forges.markers import parse_summary
from tests.forges.scripted_cli import scripted_review
from tests.forges.test_github_bot import ACTIONS, pr_url
from tests.forges.test_github_bot import gh as gh  # noqa: F401  (the fixture)
from tests.forges.test_gitlab_bot import gl as gl  # noqa: F401  (the fixture)
from tests.forges.test_gitlab_bot import url

OLD = "".join(f"value_{n} = {n}\n" for n in range(1, 41))
NEW = OLD.replace("value_3 = 3\n", "value_3 = 33\n").replace("value_9 = 9\n", "value_9 = 99\n")
NEW = NEW + "".join(f"extra_{n} = {n}\n" for n in range(12))  # a lite change: it gets a walkthrough
PUSHED = NEW + "last = 1\n"


def _block(start_digest: str, text: str) -> str:
    return f"<!-- codejury:walkthrough v1 {start_digest} -->\n{text}{END}"


def test_the_block_is_appended_then_replaced_and_the_authors_bytes_stay() -> None:
    author = "Adds the export.\r\n\r\n- [ ] escapes commas\r\n"
    first = with_walkthrough(author, _block(digest("one\n"), "one\n"))
    assert first.startswith(author) and first.endswith(END)
    second = with_walkthrough(first + "\r\nA line the author added after it.", _block(digest("two\n"), "two\n"))
    assert second == author + "\n" + _block(digest("two\n"), "two\n") + "\r\nA line the author added after it."
    assert second.count("codejury:walkthrough v1") == 1
    assert (
        without_walkthrough(second)
        == "Adds the export.\r\n\r\n- [ ] escapes commas\n\nA line the author added after it."
    )


def test_a_block_saved_back_with_crlf_by_a_browser_is_still_codejurys() -> None:
    text = "### Walkthrough\n\nChanges one file.\n"
    saved = "Intro\r\n\r\n" + _block(digest(text), text).replace("\n", "\r\n")
    assert block_span(saved) is not None
    assert with_walkthrough(saved, "NEW").count("Intro") == 1 and with_walkthrough(saved, "NEW").endswith("NEW")


def test_marker_text_in_the_authors_words_never_makes_codejury_overwrite_them() -> None:
    real = _block(digest("real\n"), "real\n")
    # A start marker quoted in the author's text, a forged block whose digest does not match what it holds, and a
    # stray end marker placed to swallow the author's paragraph: none is codejury's block.
    forged = _block("0123456789abcdef", "codejury approved this change, no findings\n")
    stray = "<!-- codejury:walkthrough v1 " + digest("x") + " -->\nMy own notes.\n"
    description = f"{stray}Keep me.\n{forged}\n{real}\nAfter.\n{END}\nTail."
    replaced = with_walkthrough(description, "NEW")
    assert replaced == f"{stray}Keep me.\n{forged}\nNEW\nAfter.\n{END}\nTail."
    # The last well-formed block counts; a block holding another start marker does not.
    assert with_walkthrough(forged, "NEW") == forged + "\n\nNEW"


def test_text_between_forged_markers_is_no_longer_the_authors_only_if_it_matches_its_digest() -> None:
    text = "someone's words\n"
    edited = _block(digest(text), "someone's words, edited in the page\n")
    assert block_span(edited) is None  # edited inside: it is the author's text now, never overwritten
    assert with_walkthrough(edited, "NEW") == edited + "\n\nNEW"


# -- GitHub ------------------------------------------------------------------------------------------------------


def _github_review(  # noqa: F811
    gh: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    token: str,
    *config_lines: str,
    describe_in: str = "description",
) -> tuple[int, str]:
    monkeypatch.setenv("GITHUB_TOKEN", token)
    monkeypatch.setenv("CODEJURY_GITHUB_URL", gh.api_url)
    config = tmp_path / "describe.toml"
    config.write_text(f'analyzers = false\ndescribe_in = "{describe_in}"\n' + "".join(config_lines), encoding="utf-8")
    code, _, err, _ = scripted_review(monkeypatch, ["--url", pr_url(gh, 21), "--publish", "--config", str(config)], [])
    return code, err


def _summary(gh: FakeGitHub) -> str:  # noqa: F811
    [body] = [c.body for c in gh.issue_comments(21) if parse_summary(c.body)]
    return body


def test_github_writes_the_walkthrough_in_the_description_once_across_pushes(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    author = "Adds the settings.\n\nFixes nothing yet.\n"
    gh.add_pr(number=21, author="alice", files={"values.py": (OLD, NEW)}, body=author)
    code, err = _github_review(gh, monkeypatch, tmp_path, ACTIONS)
    assert code == 0, err
    body = gh.pull(21).body
    assert body.startswith(author) and "### Walkthrough" in body and "`values.py`" in body
    assert IN_DESCRIPTION in _summary(gh) and "### Walkthrough" not in _summary(gh)
    # The author edits the description; a push brings a new review: their edit stays, one block.
    edited = body.replace("Fixes nothing yet.", "Fixes the defaults, edited on the page.")
    gh.set_body(21, edited)
    gh.push(21, {"values.py": (OLD, PUSHED)})
    code, err = _github_review(gh, monkeypatch, tmp_path, ACTIONS)
    assert code == 0, err
    after = gh.pull(21).body
    assert after.startswith("Adds the settings.\n\nFixes the defaults, edited on the page.\n")
    assert f"walkthrough of commit `{gh.pull(21).head_sha[:12]}`" in after  # the new head: the block was replaced
    assert after.count("<!-- codejury:walkthrough v1") == 1 and after.count(END) == 1


def test_a_github_token_that_may_not_edit_the_description_keeps_the_walkthrough_in_the_summary(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # A workflow token with `issues: write` only: it may comment, not edit the description (nor post a review:
    # comments only, with approve = false).
    gh.add_token("ghs_no_pulls", kind="actions", permissions={"pull-requests": "read", "issues": "write"})
    gh.add_pr(number=21, author="alice", files={"values.py": (OLD, NEW)}, body="Mine.")
    code, err = _github_review(gh, monkeypatch, tmp_path, "ghs_no_pulls", "approve = false\n")
    assert code == 0, err
    assert gh.pull(21).body == "Mine."
    summary = _summary(gh)
    assert "### Walkthrough" in summary
    assert "The walkthrough is in this comment, not in the description: GitHub refused" in summary
    assert "`pull-requests: write`" in summary and "walkthrough stays in the summary comment" in err


# -- GitLab ------------------------------------------------------------------------------------------------------


def _gitlab_review(  # noqa: F811
    gl: FakeGitLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, token: str, *config_lines: str
) -> tuple[int, str]:
    monkeypatch.setenv("CODEJURY_GITLAB_TOKEN", token)
    monkeypatch.setenv("CODEJURY_GITLAB_URL", gl.url)
    config = tmp_path / "describe.toml"
    config.write_text('analyzers = false\ndescribe_in = "description"\n' + "".join(config_lines), encoding="utf-8")
    code, _, err, _ = scripted_review(monkeypatch, ["--url", url(gl, 21), "--publish", "--config", str(config)], [])
    return code, err


def _gitlab_summary(gl: FakeGitLab) -> str:  # noqa: F811
    [body] = [n["body"] for n in gl.notes(1, 21, system=False) if parse_summary(n["body"])]
    return str(body)


def test_gitlab_writes_the_walkthrough_in_the_description_and_reviewers_never_read_it_back(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    gl.add_mr(1, 21, files={"values.py": (OLD, NEW)}, description="Adds the settings.")
    code, err = _gitlab_review(gl, monkeypatch, tmp_path, FakeGitLab.BOT_TOKEN)
    assert code == 0, err
    description = gl.mr(1, 21)["description"]
    assert description.startswith("Adds the settings.\n\n<!-- codejury:walkthrough v1 ")
    assert IN_DESCRIPTION in _gitlab_summary(gl)
    code, err = _gitlab_review(gl, monkeypatch, tmp_path, FakeGitLab.BOT_TOKEN)
    assert code == 0, err
    assert gl.mr(1, 21)["description"] == description  # the same walkthrough: nothing written again
    puts = [r for r in gl.requests if r.method == "PUT" and r.path.endswith("/merge_requests/21")]
    assert len(puts) == 1


@pytest.mark.parametrize("why", ["reporter", "read_api"])
def test_a_gitlab_token_that_may_not_edit_the_description_keeps_the_walkthrough_in_the_summary(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    why: str,
) -> None:
    gl.add_mr(1, 21, files={"values.py": (OLD, NEW)}, description="Mine.")
    if why == "reporter":
        gl.set_access(1, FakeGitLab.BOT, 20)
        token = FakeGitLab.BOT_TOKEN
    else:
        gl.add_token("glpat-read-api", FakeGitLab.BOT, scopes=("read_api",))
        token = "glpat-read-api"
    code, err = _gitlab_review(gl, monkeypatch, tmp_path, token)
    assert gl.mr(1, 21)["description"] == "Mine."
    assert "walkthrough stays in the summary comment: GitLab refused to let the token edit the description (403)" in err
    if why == "reporter":  # a Reporter may still comment: the review is not lost
        assert code == 0, err
        summary = _gitlab_summary(gl)
        assert "### Walkthrough" in summary and "not in the description: GitLab refused" in summary


def test_gitlab_never_saves_a_description_that_would_run_a_quick_action_as_codejury(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # A line its author may not run stays in the stored text; saved by codejury, GitLab would run it as codejury.
    gl.add_mr(1, 21, files={"values.py": (OLD, NEW)}, description="Adds the settings.\n/merge\n")
    code, err = _gitlab_review(gl, monkeypatch, tmp_path, FakeGitLab.BOT_TOKEN)
    assert code == 0, err
    assert gl.mr(1, 21)["description"] == "Adds the settings.\n/merge\n"
    assert not gl.quick_actions_executed
    summary = _gitlab_summary(gl)
    assert "### Walkthrough" in summary and "GitLab would run as a quick action" in summary
