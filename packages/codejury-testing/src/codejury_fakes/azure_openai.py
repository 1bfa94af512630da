"""A fake Azure OpenAI resource: chat completions per deployment, refusing what Azure refuses.

    with FakeAzureOpenAI() as az:
        az.deploy("gpt-4o-prod")
        az.script("gpt-4o-prod", [ToolCallReply([("final_result", {...})])])
        env = {"AZURE_OPENAI_ENDPOINT": az.origin, "AZURE_OPENAI_API_KEY": az.api_key, "OPENAI_API_VERSION": "v"}

Azure's wire format is OpenAI's Chat Completions at ``POST /openai/deployments/{deployment}/chat/completions
?api-version=...``, so the replies are ``FakeProviderServer``'s (scripted by deployment name: the SDK sends it as
the body's ``model``). Before any reply: no ``api-version`` is 404 "Resource not found", a wrong ``api-key`` (or a
Microsoft Entra bearer token it did not issue) is 401, a deployment the resource does not have is 404
``DeploymentNotFound``, each with Azure's error body.
"""

from __future__ import annotations

import re
import threading
import uuid
from urllib.parse import parse_qs

from codejury_fakes.provider_server import FakeProviderServer, RecordedRequest
from codejury_fakes.provider_wire import Wire

__all__ = ["FakeAzureOpenAI"]

_PATH = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/chat/completions$")
_NOT_DEPLOYED = (
    "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, "
    "please wait a moment and try again."
)
_DENIED = (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an "
    "active subscription and use a correct regional API endpoint for your resource."
)


class FakeAzureOpenAI(FakeProviderServer):
    """One Azure OpenAI resource: its key (``api_key``), its Entra tokens (``issue_entra_token``), its deployments."""

    thread_name = "fake-azure-openai"

    def __init__(self) -> None:
        super().__init__()
        self.api_key = uuid.uuid4().hex
        self._deployments: set[str] = set()
        self._entra_tokens: set[str] = set()
        self._refused: list[tuple[str, int, str]] = []
        self._refused_lock = threading.Lock()

    def deploy(self, *names: str) -> None:
        """Deployments this resource has; the model string names one (``azure:NAME``)."""
        with self._lock:
            self._deployments.update(names)

    def issue_entra_token(self) -> str:
        """A Microsoft Entra access token for this resource (what ``az account get-access-token`` prints)."""
        token = "eyJ0eXAiOiJKV1QifQ.fake-entra." + uuid.uuid4().hex
        with self._lock:
            self._entra_tokens.add(token)
        return token

    @property
    def refusals(self) -> list[tuple[str, int, str]]:
        """``(path, status, code)`` of every refused request, oldest first."""
        with self._refused_lock:
            return list(self._refused)

    def _dispatch(self, request: RecordedRequest) -> Wire:
        match = _PATH.match(request.path)
        if match is None or "api-version" not in parse_qs(request.query):
            return self._refuse(request, 404, "404", "Resource not found")
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        with self._lock:
            allowed = request.headers.get("api-key") == self.api_key or bearer in self._entra_tokens
            deployed = match["deployment"] in self._deployments
        if not allowed:
            return self._refuse(request, 401, "401", _DENIED)
        if not deployed:
            return self._refuse(request, 404, "DeploymentNotFound", _NOT_DEPLOYED)
        return super()._dispatch(request)

    def _refuse(self, request: RecordedRequest, status: int, code: str, message: str) -> Wire:
        with self._refused_lock:
            self._refused.append((request.path, status, code))
        return Wire.json(status, {"error": {"code": code, "message": message}})
