"""Reviews on Azure OpenAI (``azure:<deployment>``): the endpoint, API version and key (or a Microsoft Entra token)
from the environment, against a resource on loopback that refuses what Azure refuses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from codejury_fakes.azure_openai import FakeAzureOpenAI
from codejury_fakes.provider_wire import ErrorReply
from codejury_fakes.routing_server import RoutingServer

from codejury.models.pricing import PriceTable
from tests.models.cloud_review import DECIDE, SQLI, final, review, serving

VERSION = "2024-10-21"
MODELS = (
    '[models]\ntop = "azure:gpt-4o"\nstandard = "azure:gpt-4.1-mini"\nlight = "azure:gpt-4.1-mini"\n'
    '[reviewers.security]\nmodel = "azure:sec-reviewer"\n'
)


@pytest.fixture
def az(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAzureOpenAI]:
    with serving(FakeAzureOpenAI(), monkeypatch) as fake:
        fake.deploy("gpt-4o", "gpt-4.1-mini", "sec-reviewer", "sec-reviewer-previous")
        fake.script("gpt-4o", [DECIDE])
        fake.script("gpt-4.1-mini", [final([])])
        yield fake


def env_of(az: FakeAzureOpenAI, **more: str) -> dict[str, str]:
    return {
        "AZURE_OPENAI_ENDPOINT": az.origin,
        "AZURE_OPENAI_API_KEY": az.api_key,
        "OPENAI_API_VERSION": VERSION,
        **more,
    }


def test_a_review_on_azure_names_deployments_and_sends_the_key(tmp_path: Path, az: FakeAzureOpenAI) -> None:
    az.script("sec-reviewer", [final([SQLI], input=1000, output=50)])
    run = review(tmp_path, MODELS, env_of(az))
    assert run.code == 1, run.err
    assert run.review["verdict"] == "requested_changes"
    assert az.refusals == []
    assert {r.path for r in az.requests} == {
        f"/openai/deployments/{d}/chat/completions" for d in ("gpt-4o", "gpt-4.1-mini", "sec-reviewer")
    }
    assert all(r.query == f"api-version={VERSION}" and r.headers["api-key"] == az.api_key for r in az.requests)
    assert az.api_key not in run.out + run.err + run.events
    # A deployment named after its model is priced from genai-prices' azure prices; one named otherwise is unpriced.
    mini = next(r for r in run.review["reviewers"] if r["model"] == "azure:gpt-4.1-mini")
    assert mini["cost_usd"] > 0
    assert run.reviewer("security")["cost_usd"] == 0
    assert "no known price for azure:sec-reviewer" in run.err
    assert PriceTable().unpriced(["azure:gpt-4o", "azure:sec-reviewer"]) == ["azure:sec-reviewer"]


def test_a_deployment_the_resource_lacks_is_refused_and_fails_back(tmp_path: Path, az: FakeAzureOpenAI) -> None:
    az.script("sec-reviewer-previous", [final([SQLI])])
    config = MODELS.replace('"azure:sec-reviewer"', '"azure:sec-reviewr"')
    config += '[failback]\n"azure:sec-reviewr" = "azure:sec-reviewer-previous"\n'
    run = review(tmp_path, config, env_of(az), "--fail-on", "never")
    assert run.code == 0, run.err
    assert ("/openai/deployments/sec-reviewr/chat/completions", 404, "DeploymentNotFound") in az.refusals
    assert run.failbacks() == [("azure:sec-reviewr", "azure:sec-reviewer-previous")]
    assert any(f["title"] == SQLI["title"] for f in run.review["findings"])


def test_a_throttled_deployment_fails_back(tmp_path: Path, az: FakeAzureOpenAI) -> None:
    az.script("sec-reviewer", [ErrorReply(429, retry_after="60")])  # longer than a retry waits: fail back
    az.script("sec-reviewer-previous", [final([SQLI])])
    config = MODELS + '[failback]\n"azure:sec-reviewer" = "azure:sec-reviewer-previous"\n'
    run = review(tmp_path, config, env_of(az), "--fail-on", "never")
    assert run.code == 0, run.err
    assert run.failbacks() == [("azure:sec-reviewer", "azure:sec-reviewer-previous")]


def test_a_wrong_key_is_401_and_never_shown(tmp_path: Path, az: FakeAzureOpenAI) -> None:
    wrong = "0123456789abcdef0123456789abcdef"
    run = review(tmp_path, MODELS, env_of(az, AZURE_OPENAI_API_KEY=wrong))
    assert run.code == 3 and run.out == ""
    assert {(status, code) for _, status, code in az.refusals} == {(401, "401")}
    assert "model API error 401" in run.err and run.failbacks() == []
    assert wrong not in run.err + run.events


def test_a_microsoft_entra_token_is_sent_as_a_bearer_token(tmp_path: Path, az: FakeAzureOpenAI) -> None:
    az.script("sec-reviewer", [final([])])
    token = az.issue_entra_token()
    env = env_of(az, AZURE_OPENAI_AD_TOKEN=token)
    del env["AZURE_OPENAI_API_KEY"]
    run = review(tmp_path, MODELS, env, "--fail-on", "never")
    assert run.code == 0, run.err
    assert az.refusals == [] and az.requests
    assert all(r.headers.get("authorization") == f"Bearer {token}" and "api-key" not in r.headers for r in az.requests)
    assert token not in run.out + run.err + run.events


def test_without_an_api_version_the_service_says_resource_not_found(tmp_path: Path, az: FakeAzureOpenAI) -> None:
    """What Azure answers a request without api-version: the v1 API's path is the only one that takes none."""
    import httpx2

    answer = httpx2.post(
        f"{az.origin}/openai/deployments/gpt-4o/chat/completions", headers={"api-key": az.api_key}, json={}
    )
    assert (answer.status_code, answer.json()["error"]["message"]) == (404, "Resource not found")


@pytest.mark.parametrize(
    ("missing", "words"),
    [
        ("OPENAI_API_VERSION", "no Azure OpenAI API version: set OPENAI_API_VERSION"),
        ("AZURE_OPENAI_ENDPOINT", "no Azure OpenAI endpoint: set AZURE_OPENAI_ENDPOINT"),
        ("AZURE_OPENAI_API_KEY", "no Azure OpenAI credentials: set AZURE_OPENAI_API_KEY"),
    ],
)
def test_a_missing_setting_is_one_line_before_any_request(
    tmp_path: Path, az: FakeAzureOpenAI, missing: str, words: str
) -> None:
    env = {k: v for k, v in env_of(az).items() if k != missing}
    run = review(tmp_path, MODELS, env)
    assert run.code != 0 and run.out == ""
    assert len(run.err.strip().splitlines()) == 1 and words in run.err, run.err
    assert az.api_key not in run.err
    assert az.requests == [] and az.refusals == []


def test_the_api_version_and_endpoint_from_the_config_file_are_used(tmp_path: Path, az: FakeAzureOpenAI) -> None:
    az.script("sec-reviewer", [final([])])
    config = (
        MODELS + f'[providers.azure]\nkind = "azure"\nbase_url = "{az.origin}"\napi_version = "2025-04-01-preview"\n'
    )
    run = review(tmp_path, config, {"AZURE_OPENAI_API_KEY": az.api_key}, "--fail-on", "never")
    assert run.code == 0, run.err
    assert {r.query for r in az.requests} == {"api-version=2025-04-01-preview"}


def test_the_routing_document_moves_a_reviewer_to_another_deployment(tmp_path: Path, az: FakeAzureOpenAI) -> None:
    az.script("sec-reviewer", [ErrorReply(500)])
    az.script("sec-reviewer-previous", [final([SQLI])])
    with RoutingServer() as routing:
        routing.body = json.dumps({"reviewers": {"security": "azure:sec-reviewer-previous"}}).encode()
        url = f"{routing.origin}/routing.json"
        run = review(tmp_path, MODELS, env_of(az), "--remote-config", url, "--fail-on", "never")
    assert run.code == 0, run.err
    assert run.reviewer("security")["model"] == "azure:sec-reviewer-previous"
    assert az.requests_for("sec-reviewer") == []
    assert any(f["title"] == SQLI["title"] for f in run.review["findings"])
