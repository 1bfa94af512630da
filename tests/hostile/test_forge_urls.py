"""Defect class 11, forge part: a ``--url`` that is not a merge request says what was expected.

A GitHub URL that is not a pull request used to fall through to GitLab and be called "not a GitLab
merge request URL"; ``--url ''`` was taken as no URL at all and reviewed the local checkout. Now
every URL that no registered forge claims is one line naming both shapes, exit 2, before any
request is sent; a pull request URL without its token names the variables to set. More shapes are
checked in-process in ``tests/forges/test_registry.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.conftest import run_codejury

BOTH = ("github pull request url", "/pull/n", "gitlab merge request url", "/-/merge_requests/n")


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/octo/app/issues/7",  # a GitHub URL, but not a pull request
        "https://gitlab.example.com/acme/widgets/-/issues/3",  # a GitLab URL, but not a merge request
        "ftp://gitlab.example.com/acme/widgets/-/merge_requests/3",
    ],
)
def test_a_url_no_forge_claims_names_both_shapes(tmp_path: Path, url: str) -> None:
    env = {"CODEJURY_GITLAB_TOKEN": "glpat-unused-token", "GITHUB_TOKEN": "ghs_unused_token"}
    run = run_codejury(["review", "--url", url], cwd=tmp_path, env=env)
    run.assert_one_line_error(2, "--url", *BOTH)
    assert "not a gitlab merge request url:" not in run.stderr.lower()
    run.assert_bounded(wall_s=60)


@pytest.mark.parametrize("url", ["", "   "])
def test_an_empty_url_is_refused_not_taken_for_no_url(tmp_path: Path, url: str) -> None:
    run = run_codejury(["review", "--url", url], cwd=tmp_path)
    run.assert_one_line_error(2, "--url")
    assert run.stdout == ""  # nothing was reviewed in its place


def test_a_pull_request_url_without_a_github_token_names_the_variables(tmp_path: Path) -> None:
    env = {"CODEJURY_GITLAB_TOKEN": "glpat-only-gitlab-here"}
    run = run_codejury(["review", "--url", "https://github.com/octo/app/pull/7"], cwd=tmp_path, env=env)
    run.assert_one_line_error(2, "GITHUB_TOKEN", "CODEJURY_GITHUB_TOKEN")
    assert "gitlab" not in run.stderr.lower()


def test_publish_outside_a_merge_request_run_says_what_it_needs(tmp_path: Path) -> None:
    run = run_codejury(["review", "--publish"], cwd=tmp_path)
    run.assert_one_line_error(2, "--url URL", "merge_request_event", "pull_request")
