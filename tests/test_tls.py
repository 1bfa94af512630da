"""Model providers over HTTPS: the certificate is verified against the CA store, a team's own CA is trusted through
SSL_CERT_FILE, and an unknown certificate is refused before any prompt leaves the machine. Every HTTP client of a
process shares one TLS context (codejury/tls.py), so these hold for each of them."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

from codejury_fakes import FakeProviderServer, ToolCallReply
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

NEW = "def total(xs):\n    return sum(xs) + 1\n"
CONFIG = """
[providers.corp]
kind = "openai-compatible"
base_url = "{base_url}"
api_key_env = "CORP_KEY"

[models]
top = "corp:judge"
standard = "corp:standard"
light = "corp:light"
"""
OFF_BY_ONE = {
    "category": "bug",
    "severity": "warning",
    "path": "calc.py",
    "start_line": 2,
    "end_line": 2,
    "confidence": 0.9,
    "title": "The total is off by one",
    "body": "Return sum(xs).",
}


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def write_certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A team CA, and a certificate for 127.0.0.1 it signed: (ca.pem, server.pem, server.key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("Team CA"))
        .issuer_name(_name("Team CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


def review_over_https(tmp_path: Path, *, trusted_ca: Path | None) -> tuple[subprocess.CompletedProcess[str], int]:
    """``codejury review`` of a one-line diff against a provider served over HTTPS; the run and how many
    requests the provider received."""
    ca, cert, key = write_certificates(tmp_path)
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)
    with FakeProviderServer() as provider:
        httpd = provider._httpd  # the loopback server, wrapped in TLS before its first connection
        httpd.socket = served.wrap_socket(httpd.socket, server_side=True)
        provider.script("*", [ToolCallReply([("final_result", {"findings": [OFF_BY_ONE]})])])
        provider.script("judge", [ToolCallReply([("final_result", {"decisions": []})])])
        base_url = provider.openai_base_url.replace("http://", "https://")
        config = tmp_path / "codejury.toml"
        config.write_text(CONFIG.format(base_url=base_url), encoding="utf-8")
        diff = tmp_path / "change.diff"
        diff.write_text(
            "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def total(xs):\n"
            "-    return sum(xs)\n+    return sum(xs) + 1\n",
            encoding="utf-8",
        )
        (tmp_path / "calc.py").write_text(NEW, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEJURY_", "SSL_CERT_"))}
        env["CORP_KEY"] = "corp-key-0123456789"
        if trusted_ca is not None:
            env["SSL_CERT_FILE"] = str(ca)
        run = subprocess.run(
            [sys.executable, "-m", "codejury.cli", "review", "--config", str(config), "--diff", str(diff)]
            + ["--repo", str(tmp_path), "--format", "json", "--fail-on", "never"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        return run, len(provider.requests)


def test_a_provider_behind_the_teams_own_ca_is_reached_when_ssl_cert_file_names_it(tmp_path: Path) -> None:
    run, requests = review_over_https(tmp_path, trusted_ca=tmp_path / "ca.pem")
    assert run.returncode == 0, run.stderr
    review = json.loads(run.stdout)
    assert requests > 0
    assert [f["title"] for f in review["findings"]] == ["The total is off by one"]
    assert review["verdict"] != "not_reviewed"


def test_a_certificate_no_trusted_ca_signed_is_refused_and_no_prompt_is_sent(tmp_path: Path) -> None:
    run, requests = review_over_https(tmp_path, trusted_ca=None)
    assert requests == 0  # the handshake failed: no request, so no prompt and no key, reached the server
    # One line that names the cause and the fix, not "connection failed or dropped".
    assert "corp:standard: TLS certificate not trusted (unable to get local issuer certificate; " in run.stderr
    assert "set SSL_CERT_FILE" in run.stderr
    assert run.returncode != 0 and "approved" not in run.stdout
