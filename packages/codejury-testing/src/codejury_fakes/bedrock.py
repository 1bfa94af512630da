"""A fake Amazon Bedrock Runtime on loopback: the Converse and ConverseStream APIs, refusing what AWS refuses.

    with FakeBedrock(region="eu-west-1") as aws:
        aws.allow_model("eu.anthropic.claude-sonnet-4-5-20250929-v1:0")
        aws.script("eu.anthropic.claude-sonnet-4-5-20250929-v1:0", [ToolCallReply([("final_result", {...})])])
        env = {**aws.credentials_env(), "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": aws.origin}

boto3 is pointed at it with botocore's own endpoint override (``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``), so the code
under test builds its client as it would for AWS. Every request's SigV4 signature is recomputed with the secret
of its access key (botocore's signer, over the bytes received), and refused as AWS refuses it: an unknown access
key or session token (403 ``UnrecognizedClientException``), a wrong signature (403
``InvalidSignatureException``), a credential scope for another region or service (403
``InvalidSignatureException``), an unknown model id (400 ``ValidationException``). Errors are JSON with the
``x-amzn-ErrorType`` header, as AWS sends them; ``ErrorReply(429)`` is a ``ThrottlingException``.

Web identity (what GitHub's and GitLab's OIDC tokens become): ``trust(role_arn, token)`` lets ``POST /`` with
STS's ``AssumeRoleWithWebIdentity`` exchange that token for temporary credentials, which the signature check
then accepts with their session token; point botocore's STS client at it with ``AWS_ENDPOINT_URL_STS``. Another
token is STS's 400 ``InvalidIdentityToken``, another role its 403 ``AccessDenied``.

A streamed answer is an ``application/vnd.amazon.eventstream`` (the binary framing AWS uses: prelude, headers,
payload, CRC32s).
"""

from __future__ import annotations

import json
import re
import struct
import time
import uuid
import zlib
from typing import Any
from urllib.parse import parse_qs, unquote

from codejury_fakes.cloud_server import CloudServer, RawRequest, content, recorded
from codejury_fakes.provider_wire import ErrorReply, Reply, TextReply, Wire

__all__ = ["FakeBedrock"]

_PATH = re.compile(r"^/model/(?P<model>[^/]+)/(?P<op>converse|converse-stream)$")
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<scope>[^,]+), SignedHeaders=(?P<signed>[^,]+), Signature=(?P<sig>\w+)$"
)

_CODES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
_MESSAGES = {
    "ThrottlingException": "Too many requests, please wait before trying again.",
    "ServiceUnavailableException": "Bedrock is unable to process your request.",
    "InternalServerException": "The server encountered an internal error.",
    "ValidationException": "The provided model identifier is invalid.",
    "UnrecognizedClientException": "The security token included in the request is invalid.",
    "InvalidSignatureException": "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
}


class FakeBedrock(CloudServer):
    """Bedrock Runtime in one region, with one access key (``credentials_env``) and the models ``allow_model`` names."""

    thread_name = "fake-bedrock"

    def __init__(self, *, region: str = "us-east-1") -> None:
        super().__init__()
        self.region = region
        self.access_key_id = "AKIA" + uuid.uuid4().hex[:16].upper()
        self.secret_access_key = uuid.uuid4().hex + uuid.uuid4().hex[:8]
        self.session_token: str | None = None
        self._models: set[str] = set()
        self._roles: dict[str, str] = {}
        self._temporary: dict[str, tuple[str, str]] = {}

    def allow_model(self, *model_ids: str) -> None:
        """Model ids this account may invoke; any other is an invalid model identifier."""
        with self._lock:
            self._models.update(model_ids)

    def trust(self, role_arn: str, web_identity_token: str) -> None:
        """Let ``web_identity_token`` assume ``role_arn`` (an OIDC provider the role's trust policy names)."""
        with self._lock:
            self._roles[role_arn] = web_identity_token

    @property
    def temporary_credentials(self) -> dict[str, tuple[str, str]]:
        """The credentials ``AssumeRoleWithWebIdentity`` gave out: access key id -> (secret, session token)."""
        with self._lock:
            return dict(self._temporary)

    def credentials_env(self) -> dict[str, str]:
        """The environment of a caller holding this account's key: what ``aws configure`` or a CI role would set."""
        env = {"AWS_ACCESS_KEY_ID": self.access_key_id, "AWS_SECRET_ACCESS_KEY": self.secret_access_key}
        if self.session_token:
            env["AWS_SESSION_TOKEN"] = self.session_token
        return env

    def answer(self, request: RawRequest) -> Wire:
        if request.method == "POST" and request.path == "/":
            return self._assume_role(request)
        match = _PATH.match(request.path)
        if request.method != "POST" or match is None:
            return self.refuse(request.path, 404, "UnknownOperationException", _error(404, "UnknownOperationException"))
        refused = self._authenticate(request)
        if refused is not None:
            return self.refuse(request.path, 403, refused, _error(403, refused))
        model = unquote(match["model"])
        with self._lock:
            known = model in self._models
        if not known:
            return self.refuse(request.path, 400, "ValidationException", _error(400, "ValidationException"))
        body = json.loads(request.body or b"{}")
        stream = match["op"] == "converse-stream"
        tools = [t["toolSpec"]["name"] for t in (body.get("toolConfig") or {}).get("tools", []) if "toolSpec" in t]
        reply = self.scripted(recorded(request, body, model, stream=stream), tools)
        return _render(reply, stream=stream)

    def _authenticate(self, request: RawRequest) -> str | None:
        """None when the request is signed with this account's key for this region and service, else AWS's code."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        auth = _AUTH.match(request.headers.get("authorization", ""))
        if auth is None:
            return "MissingAuthenticationTokenException"
        key_id, _date, region, service, _ = auth["scope"].split("/", 4)
        with self._lock:
            keys = {self.access_key_id: (self.secret_access_key, self.session_token), **self._temporary}
        secret, token = keys.get(key_id, ("", None))
        if not secret or request.headers.get("x-amz-security-token") != token:
            return "UnrecognizedClientException"
        if region != self.region or service != "bedrock":
            return "InvalidSignatureException"  # "Credential should be scoped to a valid region."
        signed = auth["signed"].split(";")
        headers = {name: request.headers.get(name, "") for name in signed}
        url = f"http://{headers.get('host', '')}{request.path}" + (f"?{request.query}" if request.query else "")
        again = AWSRequest(method=request.method, url=url, headers=headers, data=request.body)
        again.context["timestamp"] = request.headers.get("x-amz-date", "")
        signer = SigV4Auth(Credentials(key_id, secret, token), service, region)
        canonical = signer.canonical_request(again)
        expected = signer.signature(signer.string_to_sign(again, canonical), again)
        return None if expected == auth["sig"] else "InvalidSignatureException"

    def _assume_role(self, request: RawRequest) -> Wire:
        """STS ``AssumeRoleWithWebIdentity`` (unsigned, form-encoded, answered in XML as STS does)."""
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        role = form.get("RoleArn", "")
        with self._lock:
            expected = self._roles.get(role)
        if form.get("Action") != "AssumeRoleWithWebIdentity":
            return self.refuse("/", 400, "InvalidAction", _sts_error(400, "InvalidAction", "Unknown action."))
        if expected is None:
            message = "Not authorized to perform sts:AssumeRoleWithWebIdentity"
            return self.refuse("/", 403, "AccessDenied", _sts_error(403, "AccessDenied", message))
        if form.get("WebIdentityToken") != expected:
            message = "Couldn't retrieve verification key from your identity provider."
            return self.refuse("/", 400, "InvalidIdentityToken", _sts_error(400, "InvalidIdentityToken", message))
        key_id, secret, token = (
            "ASIA" + uuid.uuid4().hex[:16].upper(),
            uuid.uuid4().hex * 2,
            "FwoG" + uuid.uuid4().hex * 4,
        )
        with self._lock:
            self._temporary[key_id] = (secret, token)
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        body = (
            '<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
            "<AssumeRoleWithWebIdentityResult><Credentials>"
            f"<AccessKeyId>{key_id}</AccessKeyId><SecretAccessKey>{secret}</SecretAccessKey>"
            f"<SessionToken>{token}</SessionToken><Expiration>{expires}</Expiration>"
            f"</Credentials><AssumedRoleUser><Arn>{role}/codejury</Arn><AssumedRoleId>AROAFAKE:codejury</AssumedRoleId>"
            "</AssumedRoleUser></AssumeRoleWithWebIdentityResult>"
            f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>"
            "</AssumeRoleWithWebIdentityResponse>"
        )
        return Wire(200, {"Content-Type": "text/xml"}, [body.encode()])


def _sts_error(status: int, code: str, message: str) -> Wire:
    kind = "Sender" if status < 500 else "Receiver"
    body = (
        f"<ErrorResponse><Error><Type>{kind}</Type><Code>{code}</Code><Message>{message}</Message></Error>"
        f"<RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>"
    )
    return Wire(status, {"Content-Type": "text/xml"}, [body.encode()])


def _error(status: int, code: str, message: str | None = None, retry_after: str | None = None) -> Wire:
    headers = {"x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    return Wire.json(status, {"message": message or _MESSAGES.get(code, code)}, headers)


def _render(reply: Reply, *, stream: bool) -> Wire:
    reply = content(reply)
    if isinstance(reply, ErrorReply):
        code = reply.code or _CODES.get(reply.status, "InternalServerException")
        after = None if reply.retry_after is None else str(reply.retry_after)
        return _error(reply.status, code, reply.message, after)
    blocks: list[dict[str, Any]]
    if isinstance(reply, TextReply):
        blocks = [{"text": reply.text}]
        stop = "max_tokens" if reply.finish == "length" else "end_turn"
    else:
        blocks = [
            {"toolUse": {"toolUseId": f"tooluse_{i}", "name": n, "input": a}} for i, (n, a) in enumerate(reply.calls)
        ]
        stop = "max_tokens" if reply.finish == "length" else "tool_use"
    usage = {
        "inputTokens": reply.usage.input - reply.usage.cached_read - reply.usage.cache_write,
        "outputTokens": reply.usage.output,
        "totalTokens": reply.usage.input + reply.usage.output,
        "cacheReadInputTokens": reply.usage.cached_read,
        "cacheWriteInputTokens": reply.usage.cache_write,
    }
    if not stream:
        body = {
            "output": {"message": {"role": "assistant", "content": [_whole(b) for b in blocks]}},
            "stopReason": stop,
            "usage": usage,
            "metrics": {"latencyMs": 1},
        }
        return Wire.json(200, body, {"x-amzn-RequestId": str(uuid.uuid4())})
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    for i, block in enumerate(blocks):
        if "text" in block:
            events.append(("contentBlockDelta", {"contentBlockIndex": i, "delta": {"text": block["text"]}}))
        else:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            events.append(("contentBlockStart", {"contentBlockIndex": i, "start": start}))
            args = use["input"] if isinstance(use["input"], str) else json.dumps(use["input"])
            events.append(("contentBlockDelta", {"contentBlockIndex": i, "delta": {"toolUse": {"input": args}}}))
        events.append(("contentBlockStop", {"contentBlockIndex": i}))
    events.append(("messageStop", {"stopReason": stop}))
    events.append(("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}))
    chunks = [_event(name, payload) for name, payload in events]
    return Wire(200, {"Content-Type": "application/vnd.amazon.eventstream"}, chunks, streamed=True)


def _whole(block: dict[str, Any]) -> dict[str, Any]:
    """A non-streamed content block: a tool's input as JSON (a truncated ``str`` input cannot be: sent as text)."""
    use = block.get("toolUse")
    if use is None or not isinstance(use["input"], str):
        return block
    return {"toolUse": {**use, "input": {"_raw": use["input"]}}}


def _event(event_type: str, payload: dict[str, Any]) -> bytes:
    """One event-stream message: prelude (lengths, CRC32), string headers, JSON payload, message CRC32."""
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    encoded = b"".join(
        bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
        for name, value in headers.items()
    )
    data = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(encoded) + len(data) + 4, len(encoded))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + data
    return message + struct.pack(">I", zlib.crc32(message))
