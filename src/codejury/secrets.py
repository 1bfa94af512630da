"""The secret values of a run, and the one ``Redactor`` that keeps them out of everything that leaves.

A model can echo a credential it saw (a ``.env`` file it read, a key in an error message) into a
finding; from there it would reach stdout, the ``-o`` file, forge comments, the coordinator's
prompt and the event log. The secrets of a run are known exactly, so they are scrubbed by value:

- environment variables whose names mark credentials (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``,
  ``*_PASSWORD``, ``*_KEY``), the forge tokens (``CODEJURY_GITLAB_TOKEN``,
  ``CODEJURY_GITHUB_TOKEN``, ``GITHUB_TOKEN``, ``CI_JOB_TOKEN``) and the variable each configured
  provider reads its key from (``api_key_env``, whatever its name);
- values shorter than ``MIN_SECRET_LENGTH`` (8) characters are left alone: replacing every
  ``1234`` or ``true`` in a review would destroy the text, and a key that short is not a key.

Each value is matched as a substring (so it is caught inside a URL, a header or a sentence) in
the forms a model or a file plausibly carries it:

- as is;
- JSON-escaped (a value with ``"`` or ``\\`` quoted from a JSON document, or in the event log's
  serialised lines);
- URL-encoded (a password in a connection string, ``postgres://u:p%40ss@db``);
- base64, at any alignment (``Authorization: Basic base64(user:token)``, a Docker ``config.json``
  ``auth`` entry, a Kubernetes ``Secret``'s ``data``): the value's encoding is matched whatever
  bytes precede it, by dropping the characters that mix its bytes with its neighbours'.

Not matched, on purpose: hex or reversed forms and changed case (no file or protocol stores a
token that way, and a model does not rewrite one so), and a prefix or fragment of a value (a
truncated key such as ``sk-abc…`` is not a usable credential).

``Redactor.redact(text)`` scrubs a string; ``Redactor.scrub(value)`` walks pydantic models,
dataclasses (pydantic-ai messages), lists, tuples and dicts and returns a copy with every string
scrubbed (the same object when nothing changed). Secrets added later (``add``) apply from then on.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus

from pydantic import BaseModel

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 8
SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_KEY")
FORGE_TOKEN_VARS = ("CODEJURY_GITLAB_TOKEN", "CODEJURY_GITHUB_TOKEN", "GITHUB_TOKEN", "CI_JOB_TOKEN")
_MAX_DEPTH = 64

T = TypeVar("T")


def secret_values(env: Mapping[str, str], names: Iterable[str] = ()) -> list[str]:
    """Values of environment variables that hold credentials (by name, plus ``names``), to scrub from every output."""
    wanted = {n.upper() for n in (*FORGE_TOKEN_VARS, *names) if n}
    return [
        v
        for k, v in env.items()
        if (k.upper().endswith(SECRET_SUFFIXES) or k.upper() in wanted) and len(v.strip()) >= MIN_SECRET_LENGTH
    ]


def provider_key_values(providers: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """The API keys of the configured providers (each read from its ``api_key_env``)."""
    names = [getattr(p, "api_key_env", None) for p in providers.values()]
    return secret_values(env, [n for n in names if isinstance(n, str)])


def variants(secret: str) -> set[str]:
    """The forms of ``secret`` that are scrubbed (see the module docstring); empty when it is too short."""
    value = secret.strip()
    if len(value) < MIN_SECRET_LENGTH:
        return set()
    forms = {secret, value, json.dumps(value, ensure_ascii=False)[1:-1], quote(value, safe=""), quote_plus(value)}
    raw = value.encode("utf-8")
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for offset in range(3):
            forms.add(_aligned_base64(raw, offset, encode))
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


def _aligned_base64(raw: bytes, offset: int, encode: Any) -> str:
    """The base64 characters that depend only on ``raw`` when ``offset`` unknown bytes precede it."""
    text: str = encode(b"\0" * offset + raw).decode("ascii")
    first = math.ceil(offset * 8 / 6)  # characters mixing the preceding bytes' bits
    last = (offset + len(raw)) * 8 // 6  # characters past this one mix the following bytes' bits
    return text[first:last]


class Redactor:
    """Replaces every known secret value (and its variants) with ``[REDACTED]``."""

    def __init__(self, secrets: Iterable[str] = (), *, replacement: str = REDACTED) -> None:
        self.replacement = replacement
        self._forms: tuple[str, ...] = ()
        self.add(secrets)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, names: Iterable[str] = ()) -> Redactor:
        """A redactor for the credentials in ``env`` (default: this process's environment)."""
        return cls(secret_values(os.environ if env is None else env, names))

    def __bool__(self) -> bool:
        return bool(self._forms)

    def add(self, secrets: Iterable[str]) -> None:
        """Scrub these values too, from now on."""
        forms = set(self._forms)
        for secret in secrets:
            if secret:
                forms |= variants(secret)
        # Longest first, so a secret that contains another is replaced whole.
        self._forms = tuple(sorted(forms, key=lambda f: (-len(f), f)))

    def redact(self, text: str) -> str:
        """``text`` with every known secret replaced (``text`` itself when it holds none)."""
        for form in self._forms:
            if form in text:
                text = text.replace(form, self.replacement)
        return text

    def scrub(self, value: T) -> T:
        """``value`` with every string inside it redacted: models, dataclasses and containers are copied
        where something changed, anything else (numbers, bytes, enums) is returned as is."""
        if not self._forms:
            return value
        result: T = self._walk(value, 0)
        return result

    def _walk(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if depth >= _MAX_DEPTH or value is None or isinstance(value, bool | int | float | bytes):
            return value
        if isinstance(value, BaseModel):
            updates = {}
            for name in type(value).model_fields:
                old = getattr(value, name)
                new = self._walk(old, depth + 1)
                if new is not old:
                    updates[name] = new
            return value.model_copy(update=updates) if updates else value
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {}
            for field in dataclasses.fields(value):
                old = getattr(value, field.name, None)
                new = self._walk(old, depth + 1)
                if new is not old:
                    changes[field.name] = new
            if not changes:
                return value
            return _dataclass_copy(value, changes)
        if isinstance(value, list | tuple):
            items = [self._walk(v, depth + 1) for v in value]
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            if isinstance(value, list):
                return items
            return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
        if isinstance(value, dict):
            pairs = [(self._walk(k, depth + 1), self._walk(v, depth + 1)) for k, v in value.items()]
            if all(nk is k and nv is v for (nk, nv), (k, v) in zip(pairs, value.items(), strict=True)):
                return value
            return dict(pairs)
        return value


def _dataclass_copy(value: Any, changes: Mapping[str, Any]) -> Any:
    """A shallow copy of dataclass ``value`` with ``changes``, made without calling its class: no
    ``__new__``/``__post_init__``, validation or deprecation warning runs (pydantic-ai warns when a
    ``RetryPromptPart`` is built), frozen or slotted alike."""
    twin = object.__new__(type(value))
    if hasattr(value, "__dict__"):
        twin.__dict__.update(vars(value))
    for field in dataclasses.fields(value):
        if hasattr(value, field.name):
            object.__setattr__(twin, field.name, changes.get(field.name, getattr(value, field.name)))
    return twin


def redact_env(text: str, env: Mapping[str, str] | None = None) -> str:
    """``text`` with the credentials of ``env`` (default: this process's environment) scrubbed."""
    return Redactor.from_env(env).redact(text)
