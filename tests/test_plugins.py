"""The plugin lifecycle as a third-party plugin sees it: bootstrap, configure, post_configure."""

from __future__ import annotations

from pathlib import Path

import pytest

from codejury.errors import ConfigError
from codejury.findings import Review
from tests import plugin_example
from tests.engine_helpers import AUTH_NEW, AUTH_OLD, make_change, run_review, scripted_settings
from tests.fakes.scripted import Final, Raw, ToolCall, finding

PATH = "app/auth/users.py"


async def test_plugin_reviewer_runs_with_its_own_tools_prompt_and_remote_model(tmp_path: Path) -> None:
    plugin_example.CALLS.clear()
    change = make_change(tmp_path, {PATH: (AUTH_OLD, AUTH_NEW)})
    scripts = {
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
