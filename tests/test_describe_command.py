"""``codejury describe``: the walkthrough of a change alone, without a review, from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from codejury_fakes.routing_server import RoutingServer
from pydantic_ai.exceptions import ModelHTTPError

from codejury.cli import cli
from codejury.render.jsonout import REVIEW_JSON_SCHEMA, schema_errors
from codejury.testing.scripted import Fail, Raw, ScriptedResolver, Step
from tests.engine_helpers import unified_diff

OLD = "def total(items):\n    return sum(items)\n"
NEW = (
    "def total(items):\n    return sum(i.price for i in items)\n\n\n"
    "def average(items):\n    return total(items) / len(items)\n"
)
DRAFT = {
    "summary": "Adds `average` beside `total`. It also adds a `Cache`.",
    "groups": [{"purpose": "Shop", "files": [{"path": "shop.py", "line": "New `average` of the prices."}]}],
    "diagram": "",
}


def describe(
    tmp_path: Path, *args: str, walkthrough: list[Step] | None = None, env: dict[str, str] | None = None
) -> Result:
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff("shop.py", OLD, NEW))
    resolver = ScriptedResolver({}, walkthroughs={"describer": walkthrough or [Raw(DRAFT)]})
    flags = ["--plugin", "codejury.testing.scripted", "--model", "scripted:describer", "--diff", str(diff)]
    with resolver.active():
        result = CliRunner(env={"CODEJURY_RECORD_URL": "none", **(env or {})}).invoke(cli, ["describe", *flags, *args])
    assert not resolver.models["describer"].prompts  # no reviewer ran: the walkthrough alone
    return result


def test_describe_prints_the_walkthrough_as_markdown(tmp_path: Path) -> None:
    result = describe(tmp_path)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("### Walkthrough\n\nAdds `average` beside `total`.\n")  # the Cache: not in the diff
    assert "| Shop | `shop.py` | New `average` of the prices. |" in result.stdout


def test_describe_prints_json_in_the_reviews_walkthrough_shape(tmp_path: Path) -> None:
    result = describe(tmp_path, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert schema_errors(data, REVIEW_JSON_SCHEMA["properties"]["walkthrough"]) == []
    assert data["unsupported"] == 1 and data["model"] == "scripted:describer"


def test_a_trivial_change_is_described_when_asked(tmp_path: Path) -> None:
    result = describe(tmp_path, "--config", str(_config(tmp_path, "describe = false\n")))
    assert result.exit_code == 0, result.stderr  # describe = false is about reviews: this command was asked


def test_describe_writes_the_output_file(tmp_path: Path) -> None:
    out = tmp_path / "walkthrough.md"
    result = describe(tmp_path, "--output", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    assert out.read_text(encoding="utf-8").startswith("### Walkthrough")


def test_a_model_that_fails_exits_3_with_one_line(tmp_path: Path) -> None:
    failure = Fail(ModelHTTPError(status_code=400, model_name="scripted:describer", body="bad request"))
    result = describe(tmp_path, walkthrough=[failure])
    assert result.exit_code == 3 and result.stdout == ""
    assert "walkthrough: not written, its model failed (" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--working-tree"], "--diff cannot be combined with --working-tree, --base or --head"),
        (["--format", "sarif"], "Invalid value for '--format'"),
    ],
)
def test_bad_flags_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = describe(tmp_path, *args)
    assert result.exit_code == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_the_kill_switch_refuses_it_with_exit_6(tmp_path: Path) -> None:
    with RoutingServer() as routing:
        routing.body = json.dumps({"kill_switch": True, "reason": "incident 42"}).encode()
        result = describe(tmp_path, "--remote-config", routing.url)
    assert result.exit_code == 6, result.stderr
    assert "refused:" in result.stderr and "incident 42" in result.stderr


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "codejury.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_on_a_weak_model_it_is_listed_from_the_diff_and_no_model_is_loaded(tmp_path: Path) -> None:
    """The embedded model's summaries were not reliable: describe lists the diff's definitions, and does not even
    start the model (on the embedded one, seconds of loading for nothing)."""
    diff = tmp_path / "change.diff"
    diff.write_text(unified_diff("shop.py", OLD, NEW))
    resolver = ScriptedResolver({}, walkthroughs={"describer": [Raw(DRAFT)]})
    flags = ["--plugin", "codejury.testing.scripted", "--model", "scripted:describer", "--diff", str(diff)]
    env = {"CODEJURY_RECORD_URL": "none", "CODEJURY_WEAK_MODELS": '["scripted:*"]'}
    with resolver.active():
        result = CliRunner(env=env).invoke(cli, ["describe", *flags])
    assert result.exit_code == 0, result.stderr
    assert resolver.resolved == [] and resolver.models["describer"].walkthrough == [Raw(DRAFT)]
    assert result.stdout.startswith(
        "### Walkthrough\n\nChanges 1 file (1 code): 5 lines added, 1 removed. "
        "In the code it adds `average`; changes `total`."
    )
    assert "Listed from the diff by codejury, without a model" in result.stdout
    assert "walkthrough: listed from the diff, without a model (scripted:describer is weak)" in result.stderr
