"""Every place a user sets a setting agrees with the one settings model: the reference page, the command-line
options (one declaration for review, serve, worker and eval), the GitHub Action's inputs and the GitLab
component's inputs."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from pydantic import BaseModel

from codejury.cli import cli
from codejury.config_docs import render_settings_reference
from codejury.config_schema import ENV_PREFIX, FileTable, env_name
from codejury.flags import EVAL_OPTIONS, FAIL_ON_CHOICES, OPTIONS, SERVICE_OPTIONS, SETTING_FLAGS, ReviewFlags

ROOT = Path(__file__).resolve().parents[1]

INPUTS: dict[str, tuple[str, str]] = {
    "config": ("flag", "config_file"),
    "fail_on": ("setting", "fail_on"),
    "max_inline": ("flag", "max_inline"),
    "tests": ("flag", "tests"),
    "sarif": ("flag", "fmt"),
    "extra_args": ("flags", "any review flag"),
    "version": ("runner", "the codejury release installed"),
    "extras": ("runner", "the package extras installed"),
    "python_version": ("runner", "the Python that runs codejury"),
    "stage": ("runner", "the GitLab stage of the job"),
    "image": ("runner", "the container image of the job"),
}
"""Input (``-`` read as ``_``) → what it sets: a setting, a ``codejury review`` flag, or the runner itself."""


def action_inputs() -> dict[str, Any]:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    return {name.replace("-", "_"): spec for name, spec in action["inputs"].items()}


def component_header_and_jobs() -> tuple[dict[str, Any], dict[str, Any]]:
    header, jobs = yaml.safe_load_all((ROOT / "templates" / "review.yml").read_text(encoding="utf-8"))
    return header, jobs


def setting_keys() -> set[str]:
    """Every dotted key of the model: top-level keys, and the keys of its tables."""
    keys = set()
    for name, info in FileTable.model_fields.items():
        keys.add(name)
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            keys |= {f"{name}.{sub}" for sub in info.annotation.model_fields}
    return keys


def test_every_action_and_component_input_maps_to_a_setting_or_a_review_flag() -> None:
    header, _ = component_header_and_jobs()
    flag_fields = {f.name for f in fields(ReviewFlags)}
    for where, inputs in (("action.yml", action_inputs()), ("templates/review.yml", header["spec"]["inputs"])):
        unmapped = sorted(set(inputs) - set(INPUTS))
        assert not unmapped, f"{where}: inputs that map to no setting or flag: {unmapped}"
        for name in inputs:
            kind, target = INPUTS[name]
            if kind == "setting":
                assert target in FileTable.model_fields, f"{where}: {name} names no setting"
            if kind == "flag":
                assert target in flag_fields and target in OPTIONS, f"{where}: {name} names no review flag"


def test_input_defaults_and_choices_are_the_models() -> None:
    header, _ = component_header_and_jobs()
    component = header["spec"]["inputs"]
    action = action_inputs()
    default_fail_on = FileTable.model_fields["fail_on"].default
    assert component["fail_on"]["default"] == action["fail_on"]["default"] == default_fail_on
    assert component["fail_on"]["options"] == list(FAIL_ON_CHOICES)
    assert all(level in action["fail_on"]["description"] for level in FAIL_ON_CHOICES)
    default_inline = OPTIONS["max_inline"].attrs["default"]
    assert default_inline == ReviewFlags().max_inline == component["max_inline"]["default"]
    assert int(action["max_inline"]["default"]) == default_inline


def test_no_variable_of_the_action_or_the_component_sets_a_setting_by_accident() -> None:
    """Every key has a ``CODEJURY_`` variable now: a runner's own variable must not be one of them."""
    _, jobs = component_header_and_jobs()
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    used = set(jobs["codejury-review"].get("variables", {}))
    for step in action["runs"]["steps"]:
        used |= set(step.get("env", {}))
    used |= set(re.findall(r"\b(CODEJURY_[A-Z_]+)=", (ROOT / "templates" / "review.yml").read_text(encoding="utf-8")))
    top_level = {env_name(key) for key in FileTable.model_fields}
    clashes = sorted(v for v in used if v.startswith(ENV_PREFIX) and v.split("__")[0] in top_level)
    assert not clashes, f"runner variables that would set a setting: {clashes}"


def test_the_reference_documents_every_setting_its_variable_and_every_review_option() -> None:
    page = render_settings_reference()
    for key in setting_keys():
        assert f"`{key.rpartition('.')[2]}`" in page, key
        assert f"`{env_name(key)}`" in page, f"{key}: its variable is not in docs/settings.md"
    for option in _options(cli.commands["review"]).values():
        assert f"`{option.opts[0]}`" in page, f"{option.opts[0]} is not in docs/settings.md"


def test_review_flags_that_set_a_setting_name_real_settings() -> None:
    flag_fields = {f.name for f in fields(ReviewFlags)}
    for name, (key, flag) in SETTING_FLAGS.items():
        assert name in flag_fields and key in FileTable.model_fields
        assert flag in OPTIONS[name].decls[0].split("/")


def _options(command: click.Command) -> dict[str, click.Option]:
    return {p.name: p for p in command.params if isinstance(p, click.Option) and p.name is not None}


def test_review_serve_worker_eval_and_search_declare_the_shared_options_once() -> None:
    review = _options(cli.commands["review"])
    assert list(review) == list(OPTIONS), "codejury review takes every review option, in OPTIONS' order"
    assert set(review) <= {f.name for f in fields(ReviewFlags)}, "every option fills a ReviewFlags field"
    shared = [("serve", SERVICE_OPTIONS), ("worker", SERVICE_OPTIONS), ("eval", EVAL_OPTIONS)]
    for command, names in [*shared, ("search", ("config_file", "plugins"))]:
        options = _options(cli.commands[command])
        for name in names:
            mine, theirs = options[name], review[name]
            assert (mine.opts, mine.help, mine.multiple, mine.default) == (
                theirs.opts,
                theirs.help,
                theirs.multiple,
                theirs.default,
            ), f"codejury {command} {mine.opts[0]}"


def test_the_service_store_reads_record_url_from_its_variable_or_the_kept_short_name(tmp_path: Path) -> None:
    from codejury.errors import ConfigError
    from codejury.service.commands import ServiceOptions, _store_and_queue_targets

    long, short = f"sqlite:///{tmp_path / 'long.db'}", f"sqlite:///{tmp_path / 'short.db'}"
    both = ServiceOptions(env={"CODEJURY_RECORD__URL": long, "CODEJURY_RECORD_URL": short})
    assert _store_and_queue_targets(both)[0].path == tmp_path / "long.db"  # the long name wins, as in a review
    only_short = ServiceOptions(env={"CODEJURY_RECORD_URL": short})
    assert _store_and_queue_targets(only_short)[0].path == tmp_path / "short.db"
    service = ServiceOptions(env={"CODEJURY_RECORD__URL": "https://reviews.example.com"})
    with pytest.raises(ConfigError, match="^CODEJURY_RECORD__URL names a review service"):
        _store_and_queue_targets(service)
