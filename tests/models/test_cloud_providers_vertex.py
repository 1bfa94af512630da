"""Reviews on Vertex AI (``vertex:<model>``) with Google Application Default Credentials: google-auth's real
JWT-bearer exchange against a fake token endpoint, then Gemini requests that need the token it issued."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from codejury_fakes.provider_wire import ErrorReply, TextReply
from codejury_fakes.vertex import FakeVertex
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelHTTPError

from codejury.models import cloud_setup, registry
from codejury.models.pricing import PriceTable
from codejury.models.providers import BUILTIN_PROVIDERS, ProviderSpec
from codejury.resilience.errors import classify
from tests.models.cloud_review import DECIDE, PATH, SQLI, final, review, serving

PRO = "gemini-2.5-pro"
FLASH = "gemini-2.5-flash"
OLDER = "gemini-2.0-flash"
MODELS = (
    f'[models]\ntop = "vertex:{PRO}"\nstandard = "vertex:{FLASH}"\nlight = "vertex:{FLASH}"\n'
    f'[reviewers.security]\nmodel = "vertex:{OLDER}"\n'
)


@pytest.fixture
def gcp(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeVertex]:
    with serving(FakeVertex(project="acme-ml", location="europe-west4"), monkeypatch) as fake:
        fake.allow_model(PRO, FLASH, OLDER)
        fake.script(PRO, [DECIDE])
        fake.script(FLASH, [final([])])
        yield fake


def setup(tmp_path: Path, gcp: FakeVertex, **more: str) -> tuple[str, dict[str, str]]:
    """What google-github-actions/auth leaves a job: a credentials file, the project; and the fake as the endpoint."""
    key = tmp_path / "sa-key.json"
    key.write_text(json.dumps(gcp.service_account_key()))
    env = {
        "GOOGLE_APPLICATION_CREDENTIALS": str(key),
        "GOOGLE_CLOUD_PROJECT": gcp.project,
        "GOOGLE_CLOUD_LOCATION": gcp.location,
        **more,
    }
    return MODELS + f'[providers.vertex]\nkind = "vertex"\nbase_url = "{gcp.origin}"\n', env


def test_a_review_on_vertex_exchanges_the_service_account_for_a_token(tmp_path: Path, gcp: FakeVertex) -> None:
    gcp.script(OLDER, [final([SQLI], input=2000, output=100)])
    config, env = setup(tmp_path, gcp)
    run = review(tmp_path, config, env)
    assert run.code == 1, run.err
    assert run.review["verdict"] == "requested_changes"
    assert [(f["path"], f["start_line"]) for f in run.review["findings"]] == [(PATH, 10)]
    assert gcp.refusals == []
    assert gcp.issued_tokens  # the JWT-bearer grant ran, signed with the key's private half
    assert {r.model for r in gcp.requests} == {PRO, FLASH, OLDER}
    tokens = {r.headers["authorization"].removeprefix("Bearer ") for r in gcp.requests}
    assert tokens <= set(gcp.issued_tokens)
    security = run.reviewer("security")
    price = PriceTable().price(f"vertex:{OLDER}")
    assert price is not None and price.input > 0  # genai-prices' google prices
    assert security["cost_usd"] == pytest.approx((2000 * price.input + 100 * price.output) / 1_000_000)
    private_key = gcp.service_account_key()["private_key"].splitlines()[1]
    for secret in (private_key, *gcp.issued_tokens):
        assert secret not in run.out + run.err + run.events


def test_resource_exhausted_fails_back_to_the_older_model(tmp_path: Path, gcp: FakeVertex) -> None:
    gcp.script(OLDER, [ErrorReply(429, message="Resource exhausted. Please try again later.")])
    gcp.script("gemini-1.5-pro", [final([SQLI])])
    gcp.allow_model("gemini-1.5-pro")
    config, env = setup(tmp_path, gcp)
    config += f'[failback]\n"vertex:{OLDER}" = "vertex:gemini-1.5-pro"\n'
    run = review(tmp_path, config, env, "--fail-on", "never")
    assert run.code == 0, run.err
    assert run.failbacks() == [(f"vertex:{OLDER}", "vertex:gemini-1.5-pro")]
    assert any(f["title"] == SQLI["title"] for f in run.review["findings"])


def test_another_project_is_permission_denied_and_another_location_not_found(tmp_path: Path, gcp: FakeVertex) -> None:
    config, env = setup(tmp_path, gcp, GOOGLE_CLOUD_PROJECT="someone-elses")
    run = review(tmp_path, config, env)
    assert run.code == 3 and run.out == ""
    assert {(r.status, r.code) for r in gcp.refusals} == {(403, "PERMISSION_DENIED")}
    assert "model API error 403" in run.err
    registry.clear_model_cache()
    (tmp_path / "b").mkdir()
    config, env = setup(tmp_path / "b", gcp, GOOGLE_CLOUD_LOCATION="us-east1")
    review(tmp_path / "b", config, env)
    assert (404, "NOT_FOUND") in {(r.status, r.code) for r in gcp.refusals}
    assert gcp.requests == []


def test_a_key_the_token_endpoint_does_not_know_gets_no_token(tmp_path: Path, gcp: FakeVertex) -> None:
    config, env = setup(tmp_path, gcp)
    key = json.loads((tmp_path / "sa-key.json").read_text())
    with FakeVertex(project=gcp.project) as stranger:  # a key of another service account: its signature does not verify
        key["private_key"] = stranger.service_account_key()["private_key"]
    (tmp_path / "sa-key.json").write_text(json.dumps(key))
    run = review(tmp_path, config, env)
    assert run.code == 3 and run.out == ""
    assert {r.code for r in gcp.refusals} == {"invalid_grant"}
    assert gcp.issued_tokens == [] and gcp.requests == []
    assert "RefreshError" in run.err and "BEGIN PRIVATE KEY" not in run.err + run.events
    assert key["private_key"].splitlines()[1] not in run.err + run.events


def test_a_token_the_server_no_longer_honours_is_401(
    tmp_path: Path, gcp: FakeVertex, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, env = setup(tmp_path, gcp)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    providers = {**BUILTIN_PROVIDERS, "vertex": ProviderSpec("vertex", "vertex", base_url=gcp.origin)}
    model = registry.resolve_model(f"vertex:{FLASH}", providers, env=env).model
    gcp.script(FLASH, [TextReply("fine")])

    async def ask_twice() -> tuple[str, BaseException | None]:
        try:
            first = (await Agent(model).run("hello")).output  # a token is fetched and works
            gcp.expire_tokens()  # google-auth still believes it good for an hour
            try:
                await Agent(model).run("hello")
            except ModelHTTPError as exc:
                return first, exc
            return first, None
        finally:
            await registry.close_cached_models()

    first, refused = asyncio.run(ask_twice())
    assert first == "fine"
    assert isinstance(refused, ModelHTTPError) and refused.status_code == 401
    assert classify(refused).kind == "fatal"  # no failback: another model of the account has the same token
    assert gcp.refusals[-1].code == "UNAUTHENTICATED"


def test_no_project_or_no_location_is_one_line_before_any_request(tmp_path: Path, gcp: FakeVertex) -> None:
    config, env = setup(tmp_path, gcp)
    for missing, words in (("GOOGLE_CLOUD_PROJECT", "no Google Cloud project"), ("GOOGLE_CLOUD_LOCATION", "location")):
        registry.clear_model_cache()
        run = review(tmp_path, config, {k: v for k, v in env.items() if k != missing})
        assert run.code != 0 and run.out == "", run.err
        assert len(run.err.strip().splitlines()) == 1, run.err
        assert words in run.err and missing in run.err
    assert gcp.requests == [] and gcp.issued_tokens == []


def test_the_project_and_location_from_the_config_file_are_used(tmp_path: Path, gcp: FakeVertex) -> None:
    gcp.script(OLDER, [final([])])
    config, env = setup(tmp_path, gcp)
    config += f'project = "{gcp.project}"\nregion = "{gcp.location}"\n'
    env = {"GOOGLE_APPLICATION_CREDENTIALS": env["GOOGLE_APPLICATION_CREDENTIALS"]}
    run = review(tmp_path, config, env, "--fail-on", "never")
    assert run.code == 0, run.err
    assert gcp.refusals == [] and gcp.requests


def test_without_the_extra_the_model_is_one_line_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cloud_setup, "_importable", lambda module: not module.startswith("google."))
    run = review(tmp_path, MODELS, {"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1"})
    assert run.code != 0 and run.out == ""
    assert run.err.strip().endswith("vertex: install codejury[vertex]"), run.err
    assert len(run.err.strip().splitlines()) == 1, run.err


@pytest.mark.parametrize("impersonate", [True, False])
def test_a_ci_job_s_oidc_token_is_exchanged_through_workload_identity_federation(
    tmp_path: Path, gcp: FakeVertex, impersonate: bool
) -> None:
    """What google-github-actions/auth writes, or a GitLab job with id_tokens and a create-cred-config file: no key,
    the job's OIDC token exchanged at STS (and for the service account's token when it impersonates one)."""
    oidc = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJyZXBvOmFjbWUvYXBwIn0.c2ln"
    gcp.trust_oidc(oidc)
    token_file = tmp_path / "oidc-token"
    token_file.write_text(oidc)
    config, env = setup(tmp_path, gcp)
    (tmp_path / "wif.json").write_text(json.dumps(gcp.external_account(str(token_file), impersonate=impersonate)))
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(tmp_path / "wif.json")
    gcp.script(OLDER, [final([SQLI])])
    run = review(tmp_path, config, env, "--fail-on", "never")
    assert run.code == 0, run.err
    assert gcp.refusals == [] and gcp.requests
    assert {r.headers["authorization"].removeprefix("Bearer ") for r in gcp.requests} <= set(gcp.issued_tokens)
    for secret in (oidc, *gcp.issued_tokens):
        assert secret not in run.out + run.err + run.events


def test_an_oidc_token_the_pool_does_not_trust_gets_no_access(tmp_path: Path, gcp: FakeVertex) -> None:
    token_file = tmp_path / "oidc-token"
    token_file.write_text("a-token-of-another-repository")
    config, env = setup(tmp_path, gcp)
    (tmp_path / "wif.json").write_text(json.dumps(gcp.external_account(str(token_file))))
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(tmp_path / "wif.json")
    run = review(tmp_path, config, env)
    assert run.code == 3 and run.out == ""
    assert {r.code for r in gcp.refusals} == {"invalid_grant"} and gcp.requests == []
    assert "a-token-of-another-repository" not in run.err + run.events


def test_no_application_default_credentials_is_one_line_before_any_request(
    tmp_path: Path, gcp: FakeVertex, monkeypatch: pytest.MonkeyPatch
) -> None:
    from google.auth.compute_engine import _metadata

    monkeypatch.setattr(_metadata, "is_on_gce", lambda request=None: False)  # this machine is not on Google Cloud
    config, env = setup(tmp_path, gcp)
    del env["GOOGLE_APPLICATION_CREDENTIALS"]
    run = review(tmp_path, config, env)
    assert run.code == 2 and run.out == ""
    assert len(run.err.strip().splitlines()) == 1, run.err
    assert "vertex: no Google Application Default Credentials: set GOOGLE_APPLICATION_CREDENTIALS" in run.err
    assert gcp.requests == [] and gcp.issued_tokens == []
