"""``codejury learn`` on the command line: the file it writes, what it says when there is nothing to learn, and
one line and exit 2 for bad input or a forge that refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from codejury_fakes.github import FakeGitHub
from codejury_fakes.gitlab import FakeGitLab
from codejury_fakes.gitlab.repository import opened_merge_requests

from codejury.cli import cli
from codejury.memory.learn import LEARNED_PATH as LEARNED
from tests.memory.replay import fake_gitlab
from tests.memory.seed import remember

REPO = "gitlab.example.com/acme/widgets"


def learn(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["learn", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_learn_writes_the_rules_file_with_counts_and_links(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    for change, who in (("!7", "bob"), ("!8", "alice"), ("!9", "bob")):
        remember(store, REPO, change, "generalist:magic number", "shape-a", by=who, path="tests/test_a.py")
    remember(store, REPO, "!9", "ruff:S101", "shape-b", path="tests/test_b.py")  # one merge request: not a rule
    out_file = tmp_path / "learned.md"
    code, out, err = learn("--repo", REPO, "--store", store, "--output", str(out_file))
    assert code == 0, err
    assert out == f"wrote 1 learned rule(s) to {out_file}: review them, then commit the file to apply them\n"
    text = out_file.read_text()
    assert 'Do not report "Magic number" (generalist) in tests/: dismissed 3 times in 3 merge requests' in text
    assert f"[!9](https://{REPO}/-/merge_requests/9) by bob: won't fix; [!8](https://{REPO}/-/merge_requests/8)" in text
    assert "S101" not in text


def test_learn_with_nothing_repeated_writes_nothing(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    remember(store, REPO, "!1", "generalist:magic number", "shape-a")
    code, out, _ = learn("--repo", REPO, "--store", store, "--output", str(tmp_path / "learned.md"))
    assert code == 0 and out.startswith("nothing to propose: no rule was dismissed or fixed in 2 merge requests")
    assert not (tmp_path / "learned.md").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((), "which repository?"),
        (("--propose", "ftp://example.com/acme/widgets"), "--propose expects the project's URL"),
        (("--repo", REPO, "--store", "mysql://x/y"), "--store expects"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], said: str) -> None:
    code, out, err = learn(*args)
    assert code == 2 and out == "" and said in err and err.count("\n") == 1


def test_a_token_without_write_access_is_refused_and_nothing_opens(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    with fake_gitlab(monkeypatch) as gl:
        monkeypatch.setenv("CODEJURY_GITLAB_URL", gl.url)
        monkeypatch.setenv("CODEJURY_GITLAB_TOKEN", FakeGitLab.REPORTER_TOKEN)
        repository = f"{gl.url.split('://')[1]}/acme/widgets"
        for change in ("!1", "!2"):
            remember(store, repository, change, "generalist:magic number", "shape-a")
        code, out, err = learn("--propose", f"{gl.url}/acme/widgets", "--store", store)
        assert code == 2 and out == "" and "403" in err and err.count("\n") == 1
        assert FakeGitLab.REPORTER_TOKEN not in err and opened_merge_requests(gl, 1) == []


def test_learn_proposes_a_pull_request_on_github_over_the_rules_already_there(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    for name in ("GITHUB_TOKEN", "CODEJURY_GITHUB_TOKEN", "GITHUB_SERVER_URL", "GITHUB_API_URL"):
        monkeypatch.delenv(name, raising=False)
    with FakeGitHub("acme/widgets") as gh:
        gh.add_token("ghs_writes", kind="actions", permissions={"contents": "write"})
        gh.add_token("ghs_reads", kind="actions")  # contents: read, as a workflow's token is by default
        gh.set_branch("main", {LEARNED: "# Rules we wrote by hand\n"})
        monkeypatch.setenv("CODEJURY_GITHUB_URL", gh.api_url)
        project = f"{gh.api_url}/acme/widgets"
        for change in ("#1", "#2"):
            remember(store, project.split("://")[1], change, "generalist:magic number", "shape-a", by="bob")
        monkeypatch.setenv("GITHUB_TOKEN", "ghs_reads")
        code, out, err = learn("--propose", project, "--store", store)
        assert code == 2 and out == "" and "403" in err and err.count("\n") == 1 and "ghs_reads" not in err
        monkeypatch.setenv("GITHUB_TOKEN", "ghs_writes")
        code, out, err = learn("--propose", project, "--store", store)
        assert code == 0 and out.startswith("opened #1 with 1 learned rule(s)"), err
        assert learn("--propose", project, "--store", store)[1].startswith("already proposed")
        [branch] = [name for (_, name) in gh._branches if name.startswith("codejury/learned-rules-")]
        text = (gh.branch_files(branch) or {})[LEARNED]
        assert f"[#2]({project}/pull/2) by bob: won't fix; [#1]({project}/pull/1) by bob: won't fix" in text
        assert gh.branch_files("main") == {LEARNED: "# Rules we wrote by hand\n"}  # nothing applies unmerged


def test_since_reaches_back_past_the_memory_window(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'reviews.sqlite3'}"
    for change in ("!1", "!2"):
        remember(store, REPO, change, "generalist:magic number", "shape-a", days_ago=400)
    out_file = tmp_path / "learned.md"
    assert learn("--repo", REPO, "--store", store, "--output", str(out_file))[1].startswith("nothing to propose")
    code, out, _ = learn("--repo", REPO, "--store", store, "--output", str(out_file), "--since", "all")
    assert (
        code == 0 and out.startswith("wrote 1 learned rule(s)") and "recorded since 1970-01-01" in out_file.read_text()
    )
