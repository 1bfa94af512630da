"""Whole reviews on a real local model through llama.cpp, through the command a user runs.

The review with no model configured runs on the embedded model (``qwen2.5-coder-1.5b``, what a user gets); the
others check the plumbing (tiers, panels, the prompt cache, the user's contract) on the dev extra's small model of
the same family (``local:qwen2.5-coder-0.5b``): the same loader, server and capability profile, a third of the cost.
Slow (seconds to a minute or two each on 2 cores); select them with ``-m embedded``. ``make test`` runs them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from codejury.change.diffparse import parse_diff
from codejury.findings import Finding
from codejury.judge.verdict import decide_verdict
from codejury.render.jsonout import REVIEW_JSON_SCHEMA
from tests.models.test_local import llama_log_lines

pytestmark = pytest.mark.embedded

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples/demo"
CODEJURY = Path(sys.executable).parent / "codejury"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "T",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "T",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def _embedded_available() -> None:
    pytest.importorskip("xllamacpp", reason="the embedded model needs the 'local' extra")


def run_codejury(*args: str, cwd: Path, model: str | None = None) -> tuple[dict[str, Any], str]:
    """``codejury review ARGS`` with no model configured (the embedded model), or on ``local:MODEL``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEJURY_")}
    if model is not None:
        env["CODEJURY_MODEL"] = f"local:{model}"
    out = cwd / "review.json"
    proc = subprocess.run(
        [str(CODEJURY), "review", "--format", "json", "--output", str(out), "--fail-on", "never", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert llama_log_lines(proc.stderr) == [], proc.stderr  # llama.cpp's own log stays off the terminal
    return json.loads(out.read_text()), proc.stderr


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        check=True,
        text=True,
        capture_output=True,
        env={**os.environ, **GIT_ENV, "HOME": str(repo)},
    ).stdout


def assert_user_contract(review: dict[str, Any], diff: str) -> None:
    """What a user relies on: the schema, findings on lines of the diff, the verdict per the rubric."""
    jsonschema.validate(review, REVIEW_JSON_SCHEMA)
    assert any(r["status"] == "ok" for r in review["reviewers"])
    changed = {f.path: set(f.new_side_lines) for f in parse_diff(diff)}
    for f in review["findings"]:
        assert f["path"] in changed, f
        assert changed[f["path"]] & set(range(f["start_line"], f["end_line"] + 1)), f
    findings = [Finding.model_validate(f) for f in review["findings"]]
    assert review["verdict"] == decide_verdict(findings, break_glass=False, judged=review["judged"])
    assert review["usage"]["input_tokens"] > 0 and review["usage"]["output_tokens"] > 0
    assert review["usage"]["cost_usd"] == 0


def demo_base(tmp_path: Path) -> Path:
    """A repository whose branch ``main`` holds the demo shop before the change."""
    repo = tmp_path / "repo"
    shutil.copytree(DEMO / "base", repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def test_trivial_review_of_a_diff_file(tmp_path: Path) -> None:
    repo = demo_base(tmp_path)
    shutil.copy(DEMO / "change/shop/search.py", repo / "shop/search.py")
    git(repo, "add", "-A")
    diff = git(repo, "diff", "--cached", "HEAD")
    assert 0 < diff.count("\n+") <= 12
    (tmp_path / "change.diff").write_text(diff)
    review, stderr = run_codejury("--diff", str(tmp_path / "change.diff"), "--repo", str(repo), cwd=tmp_path)
    assert "embedded local model" in stderr
    assert review["tier"] == "trivial"
    # The generalist, plus the checks grounding ran on its findings (the embedded model is weak).
    assert [r["name"] for r in review["reviewers"] if not r["name"].endswith(":check")] == ["generalist"]
    assert_user_contract(review, diff)


def lite_branch(tmp_path: Path) -> Path:
    """A repository whose branch ``feature`` is a lite-tier change to the demo shop."""
    repo = demo_base(tmp_path)
    git(repo, "checkout", "-q", "-b", "feature")
    shutil.copy(DEMO / "change/shop/orders.py", repo / "shop/orders.py")
    git(repo, "commit", "-qam", "Add an order report")
    return repo


def test_lite_review_of_a_branch(tmp_path: Path, small_local_model: str) -> None:
    repo = lite_branch(tmp_path)
    review, stderr = run_codejury(cwd=repo, model=small_local_model)
    assert review["tier"] == "lite"
    # A local model is weak: the lite tier's specialists are one generalist call (weak_panel = "single").
    assert [r["name"] for r in review["reviewers"] if ":" not in r["name"]] == ["generalist"]
    assert "one generalist call instead" in stderr
    assert_user_contract(review, git(repo, "diff", "main...feature"))
    # The walkthrough of a weak model's review is listed from the diff, with no model call: the definitions the
    # change adds and changes, and the commit's subject as the author's words.
    walkthrough = review["walkthrough"]
    assert [f["path"] for g in walkthrough["groups"] for f in g["files"]] == ["shop/orders.py"]
    assert walkthrough["source"] == "diff" and walkthrough["usage"]["output_tokens"] == 0
    assert "adds `orders_report`" in walkthrough["summary"] and "“Add an order report”" in walkthrough["summary"]


def test_lite_review_of_a_branch_by_a_panel_sharing_the_prompt_cache(tmp_path: Path, small_local_model: str) -> None:
    repo = lite_branch(tmp_path)
    # weak_panel = "panel": one call per reviewer, one after another on one slot, prompts ordered
    # [rules][change][focus]: every reviewer after the first finds the shared part in llama.cpp's cache
    # and pays only for its own. No grounding checks here (verify = "off"): they have a prefix of their own,
    # and the lite review above runs them on a local model. Two of the lite tier's three reviewers are
    # enough to show the second reading the first one's prefix: the performance reviewer is switched off, and so
    # is the walkthrough.
    config = tmp_path / "panel.toml"
    config.write_text(
        'weak_panel = "panel"\nverify = "off"\ndescribe = false\n\n[reviewers.performance]\nenabled = false\n',
        encoding="utf-8",
    )
    review, stderr = run_codejury("--config", str(config), cwd=repo, model=small_local_model)
    assert review["tier"] == "lite"
    assert "tier lite: code_quality, documentation (2 reviewers)" in stderr
    assert [r["name"] for r in review["reviewers"] if ":" not in r["name"]] == [
        "code_quality",
        "documentation",
    ]
    assert not [r for r in review["reviewers"] if r["name"].endswith(":check")]
    assert_user_contract(review, git(repo, "diff", "main...feature"))
    first, *later = [r for r in review["reviewers"] if r["status"] == "ok" and ":" not in r["name"]]
    assert later, review["reviewers"]
    for r in later:
        assert r["cache_read_tokens"] > r["input_tokens"] // 3, r
