"""detect-secrets on the added lines: live keys are criticals, placeholders and test keys are not."""

from __future__ import annotations

from pathlib import Path

from codejury.analyzers.secret_scan import SecretScanner
from tests.analyzers.helpers import make_change

LIVE = "sk_live_" + "51Hx9QpLk2VbN8mWq3RtYz7AcD4eF"  # split so no scanner flags this test file itself
AWS = "AKIA" + "2OGYBAH6QWERTY7Z"
KEY_BLOCK = "-----BEGIN " + "RSA PRIVATE KEY-----"


async def test_a_live_key_on_an_added_line_is_critical_and_not_repeated(tmp_path: Path) -> None:
    old = f'OLD_KEY = "{AWS}"\n'
    new = old + f'PAYMENT_API_KEY = "{LIVE}"\n'
    change = make_change(tmp_path, {"shop/payments.py": (old, new)}, with_root=False)
    evidence = await SecretScanner().analyze(change)
    assert [(e.path, e.start_line, e.severity, e.rule) for e in evidence] == [
        ("shop/payments.py", 2, "critical", "stripe-access-key")
    ], "the AWS key on the unchanged line 1 is not the change's"
    assert "sk_live" not in evidence[0].message  # not even its first characters


async def test_provider_formats_in_any_text_file_are_critical(tmp_path: Path) -> None:
    files = {
        "deploy/env.yaml": ("", f"aws_access_key_id: {AWS}\n"),
        "config/key.pem": ("", f"{KEY_BLOCK}\nMIIEowIBAAKCAQEA\n"),
        "src/client.ts": ("", f'const apiKey = process.env.KEY ?? "{LIVE}";\n'),
    }
    evidence = await SecretScanner().analyze(make_change(tmp_path, files))
    assert {(e.path, e.start_line, e.severity) for e in evidence} == {
        ("deploy/env.yaml", 1, "critical"),
        ("config/key.pem", 1, "critical"),
        ("src/client.ts", 1, "critical"),
    }


async def test_placeholders_test_keys_and_plain_hashes_are_dropped(tmp_path: Path) -> None:
    new = (
        'AWS_EXAMPLE = "AKIAIOSFODNN7EXAMPLE"\n'
        'STRIPE = "sk_test_' + '51Hx9QpLk2VbN8mWq3RtYz7AcD4eF"\n'
        'password = "changeme"\n'
        'api_key = "your_api_key_here"\n'
        'DIGEST = "8f3a9c2b7e1d4f6a0b5c9e2d7f1a3b6c"\n'
        'DSN = "postgres://user:pass@localhost/db"\n'
    )
    assert await SecretScanner().analyze(make_change(tmp_path, {"settings.py": ("", new)})) == []


async def test_a_generated_looking_credential_is_a_warning_and_a_test_fixture_key_too(tmp_path: Path) -> None:
    files = {
        "app/settings.py": ("", 'SECRET_KEY = "q8Zr3Lx7Pn2Vb9Kd4Tm6"\n'),
        "tests/fixtures/creds.py": ("", f'KEY = "{LIVE}"\n'),
    }
    evidence = await SecretScanner().analyze(make_change(tmp_path, files))
    assert {(e.path, e.severity) for e in evidence} == {
        ("app/settings.py", "warning"),
        ("tests/fixtures/creds.py", "warning"),
    }
