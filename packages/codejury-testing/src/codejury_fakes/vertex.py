"""A fake Vertex AI (Gemini ``generateContent`` / ``streamGenerateContent``) with its own OAuth token endpoint.

    with FakeVertex(project="acme-ml", location="europe-west4") as gcp:
        key_file.write_text(json.dumps(gcp.service_account_key()))  # token_uri: this server's /token
        gcp.script("gemini-2.5-pro", [ToolCallReply([("final_result", {...})])])
        # GOOGLE_APPLICATION_CREDENTIALS=key_file, [providers.vertex] base_url = gcp.origin

The service-account key is made here (an RSA key from ``cryptography``) and its ``token_uri`` points at ``/token``,
so google-auth runs its real JWT-bearer exchange: the fake checks the assertion's RS256 signature with the key's
public half, its issuer, audience, expiry and scope, and issues a short-lived access token. A model request needs
``Authorization: Bearer`` with a token it issued and has not expired (else 401 ``UNAUTHENTICATED``); another
project is 403 ``PERMISSION_DENIED`` and another location or an unknown model 404 ``NOT_FOUND``, as Vertex answers.
Error bodies are Google's ``{"error": {"code", "message", "status"}}``.

Workload identity federation (what google-github-actions/auth and GitLab's ``id_tokens`` give):
``external_account(token_file, ...)`` is the credentials file, its ``token_url`` this server's ``/v1/token`` (STS's
token exchange: the OIDC token ``trust_oidc`` names, for the pool's audience) and, with ``impersonate=True``, its
service account impersonated through ``:generateAccessToken``, as ``gcloud iam workload-identity-pools
create-cred-config`` writes it.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from typing import Any
from urllib.parse import parse_qs

from codejury_fakes.cloud_server import CloudServer, RawRequest, content, recorded
from codejury_fakes.provider_wire import ErrorReply, Reply, TextReply, Wire

__all__ = ["FakeVertex"]

_PATH = re.compile(
    r"^/v1(?:beta1)?/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)"
    r"/publishers/google/models/(?P<model>[^/:]+):(?P<op>generateContent|streamGenerateContent)$"
)
_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
_AUDIENCE = "https://oauth2.googleapis.com/token"  # what Google's token endpoint wants, wherever token_uri points
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


class FakeVertex(CloudServer):
    """Vertex AI for one project and location, the Gemini models ``allow_model`` names, and one service account."""

    thread_name = "fake-vertex"

    def __init__(self, *, project: str = "acme-ml", location: str = "us-central1", token_ttl_s: int = 3600) -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa

        super().__init__()
        self.project = project
        self.location = location
        self.token_ttl_s = token_ttl_s
        self.client_email = f"codejury@{project}.iam.gserviceaccount.com"
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._tokens: dict[str, float] = {}
        self._token_lock = threading.Lock()
        self._models: set[str] = set()
        self._oidc: dict[str, str] = {}
        self.audience = (
            f"//iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/ci/providers/{project}"
        )

    def trust_oidc(self, token: str) -> None:
        """Let the STS token exchange accept ``token`` (a CI job's OIDC token) for this pool's ``audience``."""
        with self._token_lock:
            self._oidc[token] = self.audience

    def external_account(self, token_file: str, *, impersonate: bool = True) -> dict[str, Any]:
        """A workload identity federation credentials file reading the OIDC token from ``token_file``."""
        info: dict[str, Any] = {
            "type": "external_account",
            "audience": self.audience,
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": f"{self.origin}/v1/token",
            "credential_source": {"file": token_file},
        }
        if impersonate:
            info["service_account_impersonation_url"] = (
                f"{self.origin}/v1/projects/-/serviceAccounts/{self.client_email}:generateAccessToken"
            )
        return info

    def allow_model(self, *models: str) -> None:
        """Publisher models served in this project and location; any other is ``NOT_FOUND``."""
        with self._lock:
            self._models.update(models)

    @property
    def issued_tokens(self) -> list[str]:
        """Every access token the token endpoint issued, oldest first."""
        with self._token_lock:
            return list(self._tokens)

    def expire_tokens(self) -> None:
        """Make every issued token expired (a request with one is 401 until google-auth fetches a new one)."""
        with self._token_lock:
            self._tokens = dict.fromkeys(self._tokens, 0.0)

    def service_account_key(self) -> dict[str, str]:
        """A service-account key file's content, its ``token_uri`` this server's ``/token``."""
        from cryptography.hazmat.primitives import serialization

        pem = self._key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        return {
            "type": "service_account",
            "project_id": self.project,
            "private_key_id": uuid.uuid4().hex,
            "private_key": pem,
            "client_email": self.client_email,
            "client_id": "1" * 21,
            "token_uri": f"{self.origin}/token",
        }

    def answer(self, request: RawRequest) -> Wire:
        if request.method == "POST" and request.path == "/token":
            return self._token(request)
        if request.method == "POST" and request.path == "/v1/token":
            return self._exchange(request)
        if request.method == "POST" and request.path.endswith(
            f"/serviceAccounts/{self.client_email}:generateAccessToken"
        ):
            return self._impersonate(request)
        match = _PATH.match(request.path)
        if request.method != "POST" or match is None:
            return self.refuse(request.path, 404, "NOT_FOUND", _error(404, "The requested URL was not found."))
        if not self._authorised(request.headers.get("authorization", "")):
            message = (
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
                "other valid authentication credential."
            )
            return self.refuse(request.path, 401, "UNAUTHENTICATED", _error(401, message))
        resource = (
            f"projects/{match['project']}/locations/{match['location']}/publishers/google/models/{match['model']}"
        )
        if match["project"] != self.project:
            message = (
                f"Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/{resource}'"
            )
            return self.refuse(request.path, 403, "PERMISSION_DENIED", _error(403, message + " (or it may not exist)."))
        with self._lock:
            known = match["model"] in self._models
        if match["location"] != self.location or not known:
            return self.refuse(request.path, 404, "NOT_FOUND", _error(404, f"Publisher Model `{resource}` not found."))
        body = json.loads(request.body or b"{}")
        tools = [f["name"] for t in body.get("tools") or () for f in t.get("functionDeclarations") or ()]
        stream = match["op"] == "streamGenerateContent"
        reply = self.scripted(recorded(request, body, match["model"], stream=stream), tools)
        return _render(reply, match["model"], stream=stream)

    def _token(self, request: RawRequest) -> Wire:
        """The OAuth 2.0 token endpoint: a JWT-bearer grant signed by the service account's key."""
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        refused = None
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            refused = ("unsupported_grant_type", "Invalid grant_type.")
        elif not self._valid_assertion(form.get("assertion", "")):
            refused = ("invalid_grant", "Invalid JWT Signature.")
        if refused is not None:
            body = {"error": refused[0], "error_description": refused[1]}
            return self.refuse(request.path, 400, refused[0], Wire.json(400, body))
        return Wire.json(200, {"access_token": self._issue(), "expires_in": self.token_ttl_s, "token_type": "Bearer"})

    def _exchange(self, request: RawRequest) -> Wire:
        """STS's token exchange: a trusted OIDC token for this pool's audience becomes a federated access token."""
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        with self._token_lock:
            audience = self._oidc.get(form.get("subject_token", ""))
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" or audience is None:
            body = {"error": "invalid_grant", "error_description": "The OIDC token could not be verified."}
            return self.refuse(request.path, 400, "invalid_grant", Wire.json(400, body))
        if form.get("audience") != audience:
            body = {"error": "invalid_target", "error_description": "The target service indicated is invalid."}
            return self.refuse(request.path, 400, "invalid_target", Wire.json(400, body))
        token = self._issue()
        kind = "urn:ietf:params:oauth:token-type:access_token"
        return Wire.json(
            200, {"access_token": token, "issued_token_type": kind, "token_type": "Bearer", "expires_in": 3600}
        )

    def _impersonate(self, request: RawRequest) -> Wire:
        """IAM Credentials' generateAccessToken: a federated token becomes the service account's access token."""
        if not self._authorised(request.headers.get("authorization", "")):
            return self.refuse(request.path, 401, "UNAUTHENTICATED", _error(401, "Request had invalid credentials."))
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + self.token_ttl_s))
        return Wire.json(200, {"accessToken": self._issue(), "expireTime": expires})

    def _issue(self) -> str:
        token = "ya29.fake-" + uuid.uuid4().hex
        with self._token_lock:
            self._tokens[token] = time.time() + self.token_ttl_s
        return token

    def _valid_assertion(self, assertion: str) -> bool:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        try:
            head, claims, signature = assertion.split(".")
            self._key.public_key().verify(
                _unb64(signature), f"{head}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
            header, payload = json.loads(_unb64(head)), json.loads(_unb64(claims))
        except (ValueError, InvalidSignature):
            return False
        return (
            header.get("alg") == "RS256"
            and payload.get("iss") == self.client_email
            and payload.get("aud") == _AUDIENCE
            and float(payload.get("exp", 0)) > time.time()
            and _SCOPE in str(payload.get("scope", "")).split()
        )

    def _authorised(self, header: str) -> bool:
        scheme, _, token = header.partition(" ")
        with self._token_lock:
            expires = self._tokens.get(token)
        return scheme == "Bearer" and expires is not None and expires > time.time()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _error(status: int, message: str) -> Wire:
    return Wire.json(status, {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}})


def _render(reply: Reply, model: str, *, stream: bool) -> Wire:
    reply = content(reply)
    if isinstance(reply, ErrorReply):
        wire = _error(reply.status, reply.message or _STATUS.get(reply.status, "Error."))
        if reply.retry_after is not None:
            wire.headers["retry-after"] = str(reply.retry_after)
        return wire
    parts: list[dict[str, Any]]
    if isinstance(reply, TextReply):
        parts = [{"text": reply.text}]
    else:
        parts = [{"functionCall": {"name": n, "args": a if isinstance(a, dict) else {}}} for n, a in reply.calls]
    body = {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": "MAX_TOKENS" if reply.finish == "length" else "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": reply.usage.input,
            "candidatesTokenCount": reply.usage.output,
            "totalTokenCount": reply.usage.input + reply.usage.output,
            "cachedContentTokenCount": reply.usage.cached_read,
        },
        "modelVersion": model,
        "responseId": uuid.uuid4().hex,
    }
    if not stream:
        return Wire.json(200, body)
    return Wire.sse([(None, body)])
