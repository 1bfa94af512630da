"""The Redactor: which secret values a run knows, the forms they are caught in, and what is left alone."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from types import SimpleNamespace
from urllib.parse import quote

import pytest

from codejury.findings import Finding, Review, ReviewerReport
from codejury.record.events import EventLog
from codejury.secrets import REDACTED, Redactor, provider_key_values, redact_env, secret_values

TOKEN = "tok-4f9a1c7e2b8d6053"


def finding(title: str, body: str = "Explain.", suggestion: str | None = None) -> Finding:
    return Finding(
        id="f1",
        reviewer="security",
        category="secrets",
        severity="critical",
        path="app.py",
        start_line=3,
        end_line=3,
        title=title,
        body=body,
        suggestion=suggestion,
        confidence=0.9,
    )


def test_credential_variables_are_known_by_name_and_short_values_are_not() -> None:
    env = {
        "OPENAI_API_KEY": "sk-proj-aaaaaaaaaaaa",
        "DEPLOY_TOKEN": TOKEN,
        "db_password": "correct horse battery",
        "CI_JOB_TOKEN": "glcbt-64-abcdef123456",
        "SIGNING_SECRET": "1234567",  # 7 characters: too short to scrub without wrecking text
        "HOME": "/home/someone-long-enough",
        "MY_LLM_CREDENTIAL": "cred-0123456789",
    }
    found = secret_values(env)
    assert sorted(found) == sorted(["sk-proj-aaaaaaaaaaaa", TOKEN, "correct horse battery", "glcbt-64-abcdef123456"])
    # a provider's api_key_env is a secret whatever its name
    providers = {"gw": SimpleNamespace(api_key_env="MY_LLM_CREDENTIAL"), "local": SimpleNamespace(api_key_env=None)}
    assert "cred-0123456789" in provider_key_values(providers, env)


@pytest.mark.parametrize(
    "leak",
    [
        f"the key is {TOKEN}.",
        f"https://oauth2:{TOKEN}@gitlab.example.com/acme/app.git",
        json.dumps({"token": TOKEN}),
        f"Authorization: Basic {base64.b64encode(f'x-access-token:{TOKEN}'.encode()).decode()}",
        f"auth: {base64.b64encode(f'u:{TOKEN}'.encode()).decode()}",
        f"data: {base64.b64encode(TOKEN.encode()).decode()}",
        f"urlsafe: {base64.urlsafe_b64encode(f'ab{TOKEN}'.encode()).decode()}",
    ],
    ids=["sentence", "url", "json", "basic-auth", "docker-auth", "k8s-secret", "urlsafe-base64"],
)
def test_a_known_secret_is_caught_in_every_form_a_file_or_model_carries_it(leak: str) -> None:
    out = Redactor([TOKEN]).redact(leak)
    assert REDACTED in out
    assert TOKEN not in out
    for prefix in (b"", b"u:", b"ab", b"x-access-token:"):
        assert base64.b64encode(prefix + TOKEN.encode()).decode() not in out


def test_special_characters_are_caught_escaped_and_url_encoded() -> None:
    password = 'p@ss w/rd:"42"!'
    redactor = Redactor([password])
    url = f"postgres://app:{quote(password, safe='')}@db/prod"
    assert redactor.redact(url) == f"postgres://app:{REDACTED}@db/prod"
    assert redactor.redact(json.dumps({"pw": password})) == json.dumps({"pw": REDACTED})


def test_short_values_and_ordinary_text_are_left_alone() -> None:
    redactor = Redactor(["1234567", "true", TOKEN])
    text = "retry 1234567 times when true; risk-assessment-of-the-whole-module"
    assert redactor.redact(text) is text


def test_a_longer_secret_containing_a_shorter_one_is_replaced_whole() -> None:
    inner = "abcdefgh1234"
    outer = inner + "-and-more-9876"
    assert Redactor([inner, outer]).redact(f"x {outer} y {inner}") == f"x {REDACTED} y {REDACTED}"


def test_a_review_is_scrubbed_in_every_string_and_the_original_is_untouched() -> None:
    review = Review(
        verdict="requested_changes",
        tier="full",
        summary=f"Found {TOKEN}",
        findings=[finding(f"Key {TOKEN} committed", f"It reads {TOKEN}", f'KEY = "{TOKEN}"')],
        reviewers=[ReviewerReport(name="security", model="gw:x", status="failed", error=f"401 for key {TOKEN}")],
        dropped_findings={f"reason {TOKEN}": 1},
    )
    clean = Redactor([TOKEN]).scrub(review)
    assert TOKEN not in clean.model_dump_json()
    assert clean.findings[0].title == f"Key {REDACTED} committed"
    assert clean.findings[0].suggestion == f'KEY = "{REDACTED}"'
    assert clean.reviewers[0].error == f"401 for key {REDACTED}"
    assert clean.dropped_findings == {f"reason {REDACTED}": 1}
    assert TOKEN in review.findings[0].title  # a copy: the caller's object is not changed
    untouched = Review(verdict="approved", tier="lite", summary="fine", findings=[finding("Nothing secret")])
    assert Redactor([TOKEN]).scrub(untouched) is untouched


def test_dataclasses_tuples_and_named_tuples_are_walked() -> None:
    @dataclass(frozen=True)
    class Part:
        content: object
        kind: str = "user"

    value = [Part((f"a {TOKEN}", 3)), Part({"k": [TOKEN]}), {"n": 1.5}]
    clean = Redactor([TOKEN]).scrub(value)
    assert clean[0] == Part((f"a {REDACTED}", 3))
    assert clean[1] == Part({"k": [REDACTED]})
    assert clean[2] is value[2]


def test_secrets_added_later_reach_the_event_log_that_shares_the_redactor() -> None:
    redactor = Redactor()
    log = EventLog(None, run_id="r", secrets=["first-secret-1234"], redactor=redactor)
    redactor.add([TOKEN])  # the pipeline learns a provider key after the log was opened
    log.emit("agent_failed", error=f"401: key {TOKEN} rejected; first-secret-1234")
    assert log.events[0]["error"] == f"401: key {REDACTED} rejected; {REDACTED}"


def test_redact_env_scrubs_the_process_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", TOKEN)
    assert redact_env(f"forge said: bad token {TOKEN}") == f"forge said: bad token {REDACTED}"
