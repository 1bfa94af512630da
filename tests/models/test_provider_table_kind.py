"""A ``[providers.NAME]`` table without ``kind`` takes the kind of the built-in provider it is named after
(``[providers.bedrock] region = "eu-west-1"`` is Bedrock in that region); a table with a new name is an
OpenAI-compatible server, which needs a base_url."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from codejury_fakes.azure_openai import FakeAzureOpenAI
from codejury_fakes.bedrock import FakeBedrock
from codejury_fakes.vertex import FakeVertex

from codejury.config import Settings, merge_file_table
from codejury.contexts import Contributions
from codejury.errors import ConfigError
from codejury.lifecycle import assemble, configured_providers
from codejury.models.providers import BUILTIN_PROVIDERS
from tests.models.cloud_review import DECIDE, final, review, serving

HAIKU = "eu.anthropic.claude-haiku-4-5-20251001-v1:0"


def tiers(model: str) -> str:
    return f'[models]\ntop = "{model}"\nstandard = "{model}"\nlight = "{model}"\n'


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeBedrock]:
    with serving(FakeBedrock(region="eu-west-1"), monkeypatch) as fake:
        fake.allow_model(HAIKU)
        fake.script(HAIKU, [DECIDE, *[final([])] * 8])
        yield fake


def test_a_bedrock_table_with_only_a_region_reviews_on_bedrock_in_that_region(tmp_path: Path, aws: FakeBedrock) -> None:
    config = tiers(f"bedrock:{HAIKU}") + '[providers.bedrock]\nregion = "eu-west-1"\n'
    env = {**aws.credentials_env(), "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": aws.origin}  # no AWS_REGION
    run = review(tmp_path, config, env, "--fail-on", "never")
    assert run.code == 0, run.err
    assert "base_url" not in run.err
    assert aws.refusals == [] and {r.model for r in aws.requests} == {HAIKU}


def test_a_vertex_table_with_only_its_project_and_location_reviews_on_vertex(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(FakeVertex(project="acme-ml", location="europe-west4"), monkeypatch) as gcp:
        gcp.allow_model("gemini-2.5-flash")
        gcp.script("gemini-2.5-flash", [DECIDE, *[final([])] * 8])
        key = tmp_path / "sa-key.json"
        key.write_text(json.dumps(gcp.service_account_key()))
        table = f'[providers.vertex]\nproject = "acme-ml"\nregion = "europe-west4"\nbase_url = "{gcp.origin}"\n'
        run = review(
            tmp_path,
            tiers("vertex:gemini-2.5-flash") + table,
            {"GOOGLE_APPLICATION_CREDENTIALS": str(key)},
            "--fail-on",
            "never",
        )
        assert run.code == 0, run.err
        assert gcp.refusals == [] and gcp.requests


def test_an_azure_table_with_its_endpoint_and_version_reviews_on_azure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(FakeAzureOpenAI(), monkeypatch) as az:
        az.deploy("gpt-4o")
        az.script("gpt-4o", [DECIDE, *[final([])] * 8])
        table = f'[providers.azure]\nbase_url = "{az.origin}"\napi_version = "2024-10-21"\n'
        run = review(
            tmp_path, tiers("azure:gpt-4o") + table, {"AZURE_OPENAI_API_KEY": az.api_key}, "--fail-on", "never"
        )
        assert run.code == 0, run.err
        assert {r.query for r in az.requests} == {"api-version=2024-10-21"}


def settings_of(toml_table: dict[str, object]) -> Settings:
    return merge_file_table(Settings(), {"providers": toml_table}, ".codejury.toml")


@pytest.mark.parametrize("name", ["openai", "anthropic", "bedrock", "vertex", "azure", "ollama", "local"])
def test_a_table_named_after_a_built_in_provider_takes_its_kind(name: str) -> None:
    providers = configured_providers(settings_of({name: {"enabled": False}}), BUILTIN_PROVIDERS)
    assert providers[name].kind == BUILTIN_PROVIDERS[name].kind
    assert providers[name].base_url == BUILTIN_PROVIDERS[name].base_url  # ollama keeps its localhost server
    assert providers[name].enabled is False


def test_a_given_kind_wins_over_the_built_in_one() -> None:
    settings = settings_of({"ollama": {"kind": "openai", "base_url": "https://gw.example/v1"}})
    assert configured_providers(settings, BUILTIN_PROVIDERS)["ollama"].kind == "openai"


def test_a_table_with_a_new_name_is_an_openai_compatible_server_that_needs_a_base_url() -> None:
    gateway = settings_of({"gw": {"base_url": "https://gw.example/v1"}})
    assert configured_providers(gateway, BUILTIN_PROVIDERS)["gw"].kind == "openai-compatible"
    with pytest.raises(ConfigError, match=r"providers\.gw\.base_url is required for an openai-compatible provider"):
        assemble(settings_of({"gw": {"api_key_env": "GW_KEY"}}), Contributions(providers=dict(BUILTIN_PROVIDERS)))
