"""The plugin lifecycle as a third-party plugin sees it: bootstrap, configure, post_configure."""

from __future__ import annotations

from pathlib import Path

import pytest

from codejury.errors import ConfigError
from codejury.findings import Review
from codejury.testing.scripted import Final, Raw, Step, ToolCall, finding
from tests import plugin_example
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings

PATH = "app/auth/users.py"


async def test_plugin_reviewer_runs_with_its_own_tools_prompt_and_remote_model(tmp_path: Path) -> None:
    plugin_example.CALLS.clear()
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    scripts: dict[str, list[Step]] = {
        "licensing-remote": [
            ToolCall("read_file", {"path": PATH}),  # not permitted for this reviewer
            Final([finding(PATH, 9, "Copied from a GPL project", category="licensing")]),
        ],
        "coordinator": [Raw({"decisions": []})],
    }
    result, resolver, _ = await run_review(change, scripts, plugins=("tests.plugin_example",))
    assert isinstance(result, Review)
    assert plugin_example.CALLS == ["bootstrap", "configure", "post_configure"]
    assert "licensing" in [r.name for r in result.reviewers]
    lic = next(r for r in result.reviewers if r.name == "licensing")
    assert lic.model == "scripted:licensing-remote" and lic.status == "ok"
    model = resolver.models["licensing-remote"]
    assert "Flag copied code without a licence." in model.prompts[0]
    assert "British English" in resolver.models["security"].prompts[0]  # sections reach every reviewer
    # read_file is not among its tools: the call is refused and nothing is read
    assert len(model.tool_results) == 1 and "Unknown tool name: 'read_file'" in model.tool_results[0]
    assert "def find_user" not in model.tool_results[0]
    assert [f.title for f in result.findings] == ["Copied from a GPL project"]


async def test_a_failing_bootstrap_is_reported_and_the_review_goes_on(tmp_path: Path) -> None:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    warnings: list[str] = []
    result, _, _ = await run_review(change, {}, plugins=("tests.plugin_example",), warnings=warnings)
    assert isinstance(result, Review)
    assert any("tests.plugin_example" in w and "license server unreachable" in w for w in warnings)


async def test_a_failing_configure_stops_the_run_with_the_plugin_named(tmp_path: Path) -> None:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    settings = scripted_settings(plugins={"tests.plugin_example": {"explode": True}})
    with pytest.raises(ConfigError, match=r"plugin tests.plugin_example failed to configure: bad licensing"):
        await run_review(change, {}, plugins=("tests.plugin_example",), settings=settings)


async def test_an_unknown_plugin_module_is_a_config_error(tmp_path: Path) -> None:
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    with pytest.raises(ConfigError, match="no_such_plugin"):
        await run_review(change, {}, plugins=("no_such_plugin",))


async def test_builtins_are_registered_through_the_entry_point() -> None:
    from importlib.metadata import entry_points

    eps = [ep for ep in entry_points(group="codejury") if ep.name == "builtins"]
    assert eps and eps[0].value == "codejury.builtins"


# -- every stage reachable through the hooks ------------------------------------------------------

SMALL_OLD = "def total(xs):\n    return sum(xs)\n"
SMALL_NEW = "def total(xs):\n    # copied from elsewhere\n    return sum(xs)\n"


@pytest.mark.parametrize(("tiers", "runs"), [(None, False), (["trivial", "lite", "full"], True)])
async def test_a_plugin_reviewer_runs_on_the_trivial_tier_only_when_it_asks(
    tmp_path: Path, tiers: list[str] | None, runs: bool
) -> None:
    change = make_change(tmp_path, {"stats.py": (SMALL_OLD, SMALL_NEW)})
    own = {"tests.plugin_example": {"tiers": tiers}} if tiers else {}
    scripts = {"licensing-remote": [Final([finding("stats.py", 2, "Copied", category="licensing")])]}
    result, _, _ = await run_review(
        change, scripts, plugins=("tests.plugin_example",), settings=scripted_settings(plugins=own)
    )
    assert isinstance(result, Review) and result.tier == "trivial"
    assert ("licensing" in [r.name for r in result.reviewers]) is runs
    assert [f.title for f in result.findings] == (["Copied"] if runs else [])


def _cli(*args: str) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from codejury.cli import cli

    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_a_plugin_change_source_is_chosen_with_source(tmp_path: Path) -> None:
    import json

    plugin_example.CALLS.clear()
    code, out, err = _cli("review", "--plugin", "tests.plugin_example", "--source", "canned", "--repo", str(tmp_path),
                          "--dry-run", "--format", "json")  # fmt: skip
    assert code == 0, err
    assert f"canned source: repo={tmp_path}" in plugin_example.CALLS
    # --repo is no git repository: only the plugin's change (one added line) makes this a trivial plan
    assert json.loads(out)["tier"] == "trivial"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "canned"], "--source canned: no such change source; sources: diff, git"),
        (["--source", "git", "--diff", "x.diff"], "--diff cannot be combined with --source git"),
        (["--source", "diff"], "--source diff needs --diff FILE"),
    ],
)
def test_a_wrong_source_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    code, out, err = _cli("review", "--repo", str(tmp_path), "--dry-run", *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


def test_analyzers_and_recorders_are_registries_with_the_jsonl_log_built_in(tmp_path: Path) -> None:
    import asyncio
    import json

    from codejury.change.diffparse import parse_diff
    from codejury.change.types import ChangeSet
    from codejury.evidence import Evidence
    from codejury.plugins import collect_registry, make_plugin_manager

    pm = make_plugin_manager(["tests.plugin_example"])
    analyzers = collect_registry(pm, "codejury_register_analyzers")
    change = ChangeSet(files=tuple(parse_diff(plugin_example.CANNED_DIFF)))
    (evidence,) = asyncio.run(analyzers["todo"].analyze(change))
    assert evidence == Evidence(analyzer="todo", rule="T001", path="billing/invoice.py", start_line=2, end_line=2,
                                severity="suggestion", message="a TODO was added")  # fmt: skip
    recorders = collect_registry(pm, "codejury_register_recorders")
    assert list(recorders)[0] == "jsonl"
    log = tmp_path / "reviews.jsonl"
    recorder = recorders["jsonl"]({"path": str(log)})
    review = Review(verdict="approved", tier="trivial", summary="fine")
    recorder.record(review, [{"type": "review_started", "seq": 1}])
    recorder.close()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines[0] == {"type": "review_started", "seq": 1}
    assert lines[1]["type"] == "review" and lines[1]["review"]["verdict"] == "approved"
    with pytest.raises(ConfigError, match="'path'"):
        recorders["jsonl"]({})


def test_model_kinds_are_a_registry_and_an_unregistered_kind_is_named() -> None:
    from codejury.errors import ModelSetupError
    from codejury.models.providers import ProviderSpec
    from codejury.models.registry import BUILTIN_MODEL_KINDS, resolve_model
    from codejury.plugins import collect_registry, make_plugin_manager

    kinds = collect_registry(make_plugin_manager(), "codejury_register_model_kinds")
    assert kinds == BUILTIN_MODEL_KINDS
    providers = {"corp": ProviderSpec("corp", "header-gateway", base_url="http://127.0.0.1:9/v1")}
    with pytest.raises(ModelSetupError, match="kind 'header-gateway', which no plugin registered"):
        resolve_model("corp:m", providers, env={}, kinds=kinds)
