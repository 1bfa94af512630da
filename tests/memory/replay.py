"""Merge requests of one repository reviewed on the fake GitLab, one after another, with the scripted model.

``Replay`` drives whole ``codejury review --url ... --publish`` runs (``tests.forges.scripted_cli``) into one
review store, so that what a writer dismissed on one merge request is what the next ones read back.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from codejury_fakes.gitlab import FakeGitLab

from codejury.forges.gitlab import adapter as gitlab_mod
from codejury.forges.gitlab.api import GitLabAPI
from codejury.forges.markers import parse_finding
from codejury.forges.publish import finding_title
from tests.forges.scripted_cli import analyzers_off, scripted_review


class Replay:
    """Reviews on the fake GitLab recorded in ``store`` (``sqlite:///``), analyzers off unless asked."""

    def __init__(self, gl: FakeGitLab, monkeypatch: pytest.MonkeyPatch, folder: Path, store: str) -> None:
        self.gl = gl
        self.monkeypatch = monkeypatch
        self.folder = folder
        monkeypatch.setenv("CODEJURY_GITLAB_TOKEN", FakeGitLab.BOT_TOKEN)
        monkeypatch.setenv("CODEJURY_GITLAB_URL", gl.url)
        monkeypatch.setenv("CODEJURY_RECORD_URL", store)

    def url(self, iid: int) -> str:
        return f"{self.gl.url}/acme/widgets/-/merge_requests/{iid}"

    def review(self, iid: int, findings: Sequence[dict[str, Any]], *flags: str) -> tuple[int, str, str]:
        """One ``codejury review --url MR --publish`` (markdown on stdout)."""
        config = analyzers_off(self.folder)
        code, out, err, _ = scripted_review(
            self.monkeypatch, ["--url", self.url(iid), "--publish", *config, *flags], findings
        )
        return code, out, err

    def threads(self, iid: int) -> dict[tuple[str, int], dict[str, Any]]:
        """The bot's inline threads on MR ``iid`` by (title, new-side line) of the finding each opened with."""
        out: dict[tuple[str, int], dict[str, Any]] = {}
        for d in self.gl.discussions(1, iid):
            first = d["notes"][0]
            if first["author"]["username"] == FakeGitLab.BOT and parse_finding(first["body"]) and first.get("position"):
                out[(finding_title(first["body"]), int(first["position"]["new_line"]))] = d
        return out

    def summary(self, iid: int) -> str:
        notes = [n for n in self.gl.notes(1, iid) if n["author"]["username"] == FakeGitLab.BOT]
        return next((n["body"] for n in notes if "## codejury review" in n["body"]), "")


@contextmanager
def fake_gitlab(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitLab]:
    monkeypatch.setattr(gitlab_mod, "GitLabAPI", functools.partial(GitLabAPI, backoff_s=0.001))
    with FakeGitLab() as server:
        yield server
