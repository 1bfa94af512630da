"""The cloud providers' extras are documented where a CI user picks extras: the action's ``extras`` input and the
component's note on building an image (``--build-arg EXTRAS=...``); each named extra is one the package has."""

from __future__ import annotations

import tomllib

from codejury.models.providers import PROVIDER_KINDS
from tests.ci_packaging.helpers import ROOT, component_documents, load_action


def provider_extras() -> dict[str, list[str]]:
    """The package's extras named after a provider kind, with what each installs."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    return {name: deps for name, deps in extras.items() if name in PROVIDER_KINDS}


def test_the_clouds_that_need_an_sdk_have_an_extra() -> None:
    extras = provider_extras()
    assert extras["bedrock"] and extras["vertex"]  # boto3; google-genai and google-auth


def test_the_actions_extras_input_names_every_provider_extra_that_installs_something() -> None:
    description = " ".join(load_action()["inputs"]["extras"]["description"].split())
    for name, deps in provider_extras().items():
        if deps:
            assert f"`{name}` adds" in description, name
    assert "docs/providers.md" in description


def test_the_components_image_note_names_the_provider_build_args() -> None:
    header, _, _ = component_documents()
    note = " ".join(header["spec"]["inputs"]["image"]["description"].split())
    for name, deps in provider_extras().items():
        if deps:
            assert f"EXTRAS={name}" in note, name
