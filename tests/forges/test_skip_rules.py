"""Skip rules on a forge: a skipped pull or merge request calls no model and is published as not reviewed, with
the rule (a neutral check on GitHub), and a review a writer asked for runs anyway."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from codejury_fakes.github import FakeGitHub
from codejury_fakes.gitlab import FakeGitLab

from codejury import session
from codejury.testing.scripted import Final, Raw, ScriptedResolver
from tests.forges.scripted_cli import MODEL_FLAGS, scripted_review
from tests.forges.test_github_bot import ACTIONS, B, pr_url
from tests.forges.test_github_bot import gh as gh  # noqa: F401  (the fixture)
from tests.forges.test_github_bot import summary as github_summary
from tests.forges.test_gitlab_bot import gl as gl  # noqa: F401  (the fixture)
from tests.forges.test_gitlab_bot import summary as gitlab_summary
from tests.forges.test_gitlab_bot import url


def config(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "skip.toml"
    path.write_text(f"analyzers = false\n\n[skip]\n{text}", encoding="utf-8")
    return ["--config", str(path)]


def test_a_labelled_pull_request_is_not_reviewed_and_its_check_is_neutral(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    gh.set_labels(7, ["skip-review"])
    monkeypatch.setenv("GITHUB_TOKEN", ACTIONS)
    monkeypatch.setenv("CODEJURY_GITHUB_URL", gh.api_url)
    flags = ["--url", pr_url(gh), "--publish", *config(tmp_path, 'labels = ["skip-review"]\n')]
    code, _, err, resolver = scripted_review(monkeypatch, flags, [B])
    assert code == 0, err
    assert resolver.models["reviewer"].calls == 0 and resolver.models["coordinator"].calls == 0
    [check] = gh.check_runs()
    assert check.conclusion == "neutral"
    body = github_summary(gh)
    assert "Not reviewed" in body and "skipped by [skip] labels: the label skip-review" in body
    assert "not reviewed: skipped by [skip] labels" in err


def test_a_merge_request_by_a_skipped_author_is_not_reviewed(
    gl: FakeGitLab,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("CODEJURY_GITLAB_TOKEN", FakeGitLab.BOT_TOKEN)
    monkeypatch.setenv("CODEJURY_GITLAB_URL", gl.url)
    flags = ["--url", url(gl), "--publish", *config(tmp_path, 'authors = ["ali*"]\n')]
    code, _, err, resolver = scripted_review(monkeypatch, flags, [B])
    assert code == 0, err
    assert resolver.models["reviewer"].calls == 0, err
    body = gitlab_summary(gl)["body"]
    assert "skipped by [skip] authors: alice matches ali*" in body
    assert gl.approvals(1, 7) == []


def test_a_review_a_writer_asked_for_runs_whatever_the_rules(
    gh: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    gh.set_labels(7, ["skip-review"])
    env = {"GITHUB_TOKEN": ACTIONS, "CODEJURY_GITHUB_URL": gh.api_url, "CODEJURY_RECORD_URL": "none"}
    [config_flag, path] = config(tmp_path, 'labels = ["skip-review"]\n')
    assert config_flag == "--config"
    resolver = ScriptedResolver({"reviewer": [Final([B])], "coordinator": [Raw({"decisions": []})]})

    async def forced() -> str:
        plugins = session.load_plugins(("codejury.testing.scripted",))
        async with session.Session(plugins, warn=lambda _: None, progress=None) as reviews:
            flags = session.ReviewFlags(
                url=pr_url(gh), publish=True, forced=True, config_file=Path(path), fmt="json",
                output=tmp_path / "review.json", model=MODEL_FLAGS[MODEL_FLAGS.index("--model") + 1],
                model_for=("coordinator=scripted:coordinator",), plugins=("codejury.testing.scripted",),
            )  # fmt: skip
            outcome = await reviews.review(env, flags)
        return str(getattr(outcome.result, "verdict", ""))

    with resolver.active():
        verdict = asyncio.run(forced())
    assert verdict == "approved_with_comments"
    assert resolver.models["reviewer"].calls >= 1
    assert [c.conclusion for c in gh.check_runs()] == ["success"]
