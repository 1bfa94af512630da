"""Reviews on Amazon Bedrock (``bedrock:<model id>``) through boto3's own credential chain and endpoint override,
against a Bedrock Runtime on loopback that checks every SigV4 signature and refuses what AWS refuses."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from codejury_fakes.bedrock import FakeBedrock
from codejury_fakes.provider_wire import ErrorReply

from codejury.models import cloud_setup, registry
from codejury.models.pricing import PriceTable, genai_price
from codejury.models.providers import BUILTIN_PROVIDERS, ProviderSpec
from tests.models.cloud_review import DECIDE, PATH, SQLI, cloud_env, final, review, serving

SONNET = "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"
HAIKU = "eu.anthropic.claude-haiku-4-5-20251001-v1:0"
OLDER = "eu.anthropic.claude-3-7-sonnet-20250219-v1:0"
OPUS = "eu.anthropic.claude-opus-4-5-20251101-v1:0"
MODELS = (
    f'[models]\ntop = "bedrock:{OPUS}"\nstandard = "bedrock:{HAIKU}"\nlight = "bedrock:{HAIKU}"\n'
    f'[reviewers.security]\nmodel = "bedrock:{SONNET}"\n'
)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeBedrock]:
    with serving(FakeBedrock(region="eu-west-1"), monkeypatch) as fake:
        fake.allow_model(SONNET, HAIKU, OLDER, OPUS)
        fake.script(OPUS, [DECIDE])
        fake.script(HAIKU, [final([])])
        yield fake


def env_of(aws: FakeBedrock, **more: str) -> dict[str, str]:
    """A CI job's environment after configure-aws-credentials: keys and region; boto3 pointed at the fake."""
    return {**aws.credentials_env(), "AWS_REGION": aws.region, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": aws.origin, **more}


def test_a_review_on_bedrock_signs_every_request_and_blocks_on_a_critical(tmp_path: Path, aws: FakeBedrock) -> None:
    aws.script(SONNET, [final([SQLI], input=3000, output=120)])
    run = review(tmp_path, MODELS, env_of(aws))
    assert run.code == 1, run.err  # --fail-on requested_changes
    assert run.review["verdict"] == "requested_changes"
    assert [(f["path"], f["start_line"]) for f in run.review["findings"]] == [(PATH, 10)]
    assert aws.refusals == []  # every request carried a signature AWS would accept
    assert {r.model for r in aws.requests} == {SONNET, HAIKU, OPUS}
    assert all(r.path.endswith("/converse-stream") for r in aws.requests)
    security = run.reviewer("security")
    assert (security["model"], security["input_tokens"], security["output_tokens"]) == (f"bedrock:{SONNET}", 3000, 120)
    expected = PriceTable().price(f"bedrock:{SONNET}")
    assert expected is not None
    assert security["cost_usd"] == pytest.approx((3000 * expected.input + 120 * expected.output) / 1_000_000)
    assert aws.secret_access_key not in run.out + run.err + run.events
    assert all(aws.secret_access_key not in str(r.headers) + str(r.body) for r in aws.requests)


def test_throttling_fails_back_to_the_next_model_of_the_chain(tmp_path: Path, aws: FakeBedrock) -> None:
    aws.script(SONNET, [ErrorReply(429)])  # ThrottlingException, every time
    aws.script(OLDER, [final([SQLI])])
    config = MODELS + f'[failback]\n"bedrock:{SONNET}" = "bedrock:{OLDER}"\n'
    run = review(tmp_path, config, env_of(aws), "--fail-on", "never")
    assert run.code == 0, run.err
    assert (f"bedrock:{SONNET}", f"bedrock:{OLDER}") in run.failbacks()
    assert any(f["title"] == SQLI["title"] for f in run.review["findings"])
    assert all(r["status"] == "ok" for r in run.review["reviewers"])


def test_an_unknown_model_id_is_refused_as_aws_does_and_fails_back(tmp_path: Path, aws: FakeBedrock) -> None:
    typo = "eu.anthropic.claude-sonet-4-5-20250929-v1:0"
    aws.script(SONNET, [final([])])
    config = MODELS.replace(f'model = "bedrock:{SONNET}"', f'model = "bedrock:{typo}"')
    config += f'[failback]\n"bedrock:{typo}" = "bedrock:{SONNET}"\n'
    run = review(tmp_path, config, env_of(aws), "--fail-on", "never")
    assert run.code == 0, run.err
    assert [(r.status, r.code) for r in aws.refusals] == [(400, "ValidationException")]
    assert run.failbacks() == [(f"bedrock:{typo}", f"bedrock:{SONNET}")]


def test_a_wrong_secret_key_is_refused_by_signature_and_said_in_one_line(tmp_path: Path, aws: FakeBedrock) -> None:
    wrong = "not-the-secret-" + aws.secret_access_key[:8]
    run = review(tmp_path, MODELS, env_of(aws, AWS_SECRET_ACCESS_KEY=wrong))
    assert run.code == 3, run.err  # no reviewer succeeded: nothing is published as an approval
    assert run.out == ""
    assert {r.code for r in aws.refusals} == {"InvalidSignatureException"}
    assert run.failbacks() == []  # another model will not fix an authentication error
    assert "security failed after" in run.err and "model API error 403 (ModelAuthenticationError)" in run.err
    assert wrong not in run.err + run.events and aws.secret_access_key not in run.err


def test_an_unknown_access_key_and_a_scope_for_another_region_are_refused(tmp_path: Path, aws: FakeBedrock) -> None:
    stranger = {"AWS_ACCESS_KEY_ID": "AKIAUNKNOWN000000000", "AWS_SECRET_ACCESS_KEY": aws.secret_access_key}
    review(tmp_path / "a", MODELS, env_of(aws, **stranger))
    registry.clear_model_cache()
    # Signed for us-east-1 but sent to the eu-west-1 endpoint: the credential scope names the wrong region.
    run = review(tmp_path / "b", MODELS, env_of(aws, AWS_REGION="us-east-1"))
    codes = [r.code for r in aws.refusals]
    assert "UnrecognizedClientException" in codes and "InvalidSignatureException" in codes
    assert aws.requests == []
    assert "model API error 403 (ModelAuthenticationError)" in run.err


def test_a_session_token_from_a_role_is_sent_and_checked(tmp_path: Path, aws: FakeBedrock) -> None:
    aws.session_token = "IQoJb3JpZ2luX2VjEFAKE" + "x" * 40  # temporary credentials, as an assumed role gives
    aws.script(SONNET, [final([])])
    run = review(tmp_path, MODELS, env_of(aws))
    assert run.code == 0, run.err
    assert aws.refusals == [] and aws.requests
    assert all(r.headers.get("x-amz-security-token") == aws.session_token for r in aws.requests)
    assert aws.session_token not in run.out + run.err + run.events


def test_no_region_is_one_line_before_any_request(tmp_path: Path, aws: FakeBedrock) -> None:
    env = {**aws.credentials_env(), "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": aws.origin}
    run = review(tmp_path, MODELS, env)
    assert run.code != 0 and run.out == ""
    assert run.err.strip().splitlines() == [next(line for line in run.err.splitlines() if "no AWS region" in line)], (
        run.err
    )
    assert "set AWS_REGION (or [providers.bedrock] region" in run.err and "Traceback" not in run.err
    assert aws.requests == [] and aws.refusals == []


def test_the_region_from_the_config_file_is_used(tmp_path: Path, aws: FakeBedrock) -> None:
    aws.script(SONNET, [final([])])
    config = MODELS + f'[providers.bedrock]\nkind = "bedrock"\nregion = "{aws.region}"\n'
    env = {**aws.credentials_env(), "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": aws.origin}
    run = review(tmp_path, config, env, "--fail-on", "never")
    assert run.code == 0, run.err
    assert aws.refusals == [] and aws.requests


def test_without_the_extra_the_model_is_one_line_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cloud_setup, "_importable", lambda module: not module.startswith(("boto3", "botocore")))
    run = review(tmp_path, MODELS, {"AWS_REGION": "eu-west-1"})
    assert run.code != 0 and run.out == ""
    assert "bedrock: install codejury[bedrock]" in run.err
    assert len(run.err.strip().splitlines()) == 1, run.err


def test_dry_run_prices_bedrock_models_from_genai_prices_and_names_problems(tmp_path: Path) -> None:
    run = review(tmp_path, MODELS, {"AWS_REGION": "eu-west-1"}, "--dry-run")
    assert run.code == 0, run.err
    plan = run.review
    assert plan["model_problems"] == {}
    assert plan["estimated_cost_usd"] > 0
    missing = review(tmp_path / "b", MODELS, {}, "--dry-run")
    problems = missing.review["model_problems"]
    assert set(problems) == {f"bedrock:{SONNET}", f"bedrock:{HAIKU}", f"bedrock:{OPUS}"}
    assert all("no AWS region" in why for why in problems.values())


def test_bedrock_ids_are_priced_by_genai_prices_with_their_regional_prefix() -> None:
    table = PriceTable()
    price = table.price(f"bedrock:{SONNET}")
    assert price is not None and price.input > 0 and price.output > price.input
    assert table.unpriced([f"bedrock:{SONNET}", "bedrock:acme.in-house-model-v1:0"]) == [
        "bedrock:acme.in-house-model-v1:0"
    ]
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    unprefixed = "bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert genai_price(f"bedrock:{SONNET}", now) == genai_price(unprefixed, now)


ROLE = "arn:aws:iam::123456789012:role/codejury-review"


def web_identity_env(tmp_path: Path, aws: FakeBedrock, oidc_token: str) -> dict[str, str]:
    """What a CI job with an OIDC token and a role has: the token in a file, the role; STS and Bedrock on the fake."""
    token_file = tmp_path / "oidc-token"
    token_file.write_text(oidc_token)
    return {
        "AWS_ROLE_ARN": ROLE,
        "AWS_WEB_IDENTITY_TOKEN_FILE": str(token_file),
        "AWS_REGION": aws.region,
        "AWS_ENDPOINT_URL_STS": aws.origin,
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": aws.origin,
    }


def test_a_ci_job_s_oidc_token_becomes_a_role_s_credentials(tmp_path: Path, aws: FakeBedrock) -> None:
    """GitLab's id_tokens (or GitHub's OIDC token) in a file, and the role: botocore's web identity provider asks
    STS for temporary credentials, and every Bedrock request is signed with them."""
    oidc = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwcm9qZWN0X3BhdGg6YWNtZS9hcHAifQ.c2lnbmF0dXJl"
    aws.trust(ROLE, oidc)
    aws.script(SONNET, [final([])])
    run = review(tmp_path, MODELS, web_identity_env(tmp_path, aws, oidc), "--fail-on", "never")
    assert run.code == 0, run.err
    assert aws.refusals == [] and aws.requests
    issued = aws.temporary_credentials
    assert issued  # STS gave the role's credentials for the token
    for request in aws.requests:
        key_id = request.headers["authorization"].split("Credential=", 1)[1].split("/", 1)[0]
        assert request.headers["x-amz-security-token"] == issued[key_id][1]
    for secret_text in (oidc, *(part for pair in issued.values() for part in pair)):
        assert secret_text not in run.out + run.err + run.events


def test_a_role_that_does_not_trust_the_token_is_refused_by_sts(tmp_path: Path, aws: FakeBedrock) -> None:
    aws.trust(ROLE, "the-token-the-role-trusts")
    run = review(tmp_path, MODELS, web_identity_env(tmp_path, aws, "a-token-from-another-project"))
    assert run.code == 3 and run.out == ""
    assert {r.code for r in aws.refusals} == {"InvalidIdentityToken"} and aws.requests == []
    assert "a-token-from-another-project" not in run.err + run.events


def test_the_eval_judge_keeps_the_cloud_settings_of_the_config() -> None:
    from codejury.config import Settings
    from codejury.config_schema import ProviderTable
    from codejury.eval.session import _providers

    settings = Settings(providers={"bedrock": ProviderTable(kind="bedrock", region="ap-southeast-2")})
    bedrock = _providers(settings)["bedrock"]
    assert (bedrock.kind, bedrock.region) == ("bedrock", "ap-southeast-2")


@pytest.mark.parametrize("trusted", [True, False])
def test_a_bedrock_endpoint_behind_a_private_ca_is_trusted_through_ssl_cert_file(
    tmp_path: Path, aws: FakeBedrock, trusted: bool
) -> None:
    import ssl

    from tests.test_tls import write_certificates

    ca, cert, key = write_certificates(tmp_path)
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)
    aws._httpd.socket = served.wrap_socket(aws._httpd.socket, server_side=True)  # HTTPS from the first connection
    aws.script(SONNET, [final([])])
    env = env_of(aws, AWS_ENDPOINT_URL_BEDROCK_RUNTIME=aws.origin.replace("http://", "https://"))
    if trusted:
        env["SSL_CERT_FILE"] = str(ca)
    run = review(tmp_path, MODELS, env, "--fail-on", "never")
    if trusted:
        assert run.code == 0, run.err
        assert aws.requests and aws.refusals == []
    else:
        assert run.code == 3 and aws.requests == []  # the handshake failed: nothing reached the endpoint


def test_no_aws_credentials_at_all_is_one_line_before_any_request(tmp_path: Path, aws: FakeBedrock) -> None:
    run = review(tmp_path, MODELS, {"AWS_REGION": aws.region, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": aws.origin})
    assert run.code == 2 and run.out == ""
    assert run.err.strip().splitlines() == [
        "codejury: bedrock: no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
        "or AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE"
    ]
    assert aws.requests == [] and aws.refusals == []


def test_a_model_built_in_one_environment_is_not_reused_in_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service process reviews for several configurations: another key or endpoint builds another client."""
    env = {"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIAONE", "AWS_SECRET_ACCESS_KEY": "one"}
    for name, value in cloud_env(tmp_path, env).items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    registry.clear_model_cache()
    first = registry.resolve_model(f"bedrock:{SONNET}", registry_providers(), env=env)
    assert registry.resolve_model(f"bedrock:{SONNET}", registry_providers(), env=dict(env)) is first
    for change in ({"AWS_SECRET_ACCESS_KEY": "two"}, {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "http://127.0.0.1:9"}):
        assert registry.resolve_model(f"bedrock:{SONNET}", registry_providers(), env={**env, **change}) is not first
    registry.clear_model_cache()


def registry_providers() -> dict[str, ProviderSpec]:
    return dict(BUILTIN_PROVIDERS)
