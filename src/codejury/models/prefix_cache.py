"""The embedded model's system prompts, computed once per machine: llama.cpp slot files across runs.

llama.cpp keeps the KV cache of the last prompt it has seen, in its one slot and only in the process
that computed it. Every call starts with one of a few system prompts (a reviewer's shared rules and
focus, a check's, the coordinator's: 70 to 600 tokens, up to 8 s on two cores), and a review takes
turns between them: the generalist, then its checks, then the next review's generalist (the eval, a
service worker). So a call whose system prompt is not the one the slot starts with restores that
prompt's state from ``$CODEJURY_CACHE_DIR/prompts/`` (or computes it and saves it there), and
llama.cpp computes only what follows; a call with the slot's own system prompt leaves the slot alone,
as llama.cpp already reuses the longer prefix it holds. llama.cpp's own RAM prompt cache also brings
back an earlier prompt, but only one that an ordinary call displaced, never one a restore replaced
(measured: a process that restored its rules, then a check's prompt, found 3 of the rules' 276
tokens in its cache when it came back to them); a restore reads the file either way, in about the
time llama.cpp takes to bring a prompt back from RAM.

A file holds the state of one system prompt and nothing else (never a change under review); its name
is a hash of the llama.cpp build, the model file, the context size and the prompt text, so a file
from another model or build is never read. At most ``MAX_FILES`` are kept, the least recently used
removed first. Any failure (no writable cache, an unreadable file, a refused slot action) only means
the prompt is computed as usual.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from codejury.models.weights import cache_root

MAX_FILES = 16
"""Saved system prompts kept (each 10 to 20 MB for the embedded model)."""
SLOT_ACTION_TIMEOUT_S = 10.0


class PrefixServer(Protocol):
    """The part of ``xllamacpp.Server`` this module uses."""

    def handle_chat_completions(self, prompt: dict[str, Any]) -> Any: ...

    @property
    def listening_address(self) -> str: ...


def prefix_cache_dir() -> Path | None:
    """``$CODEJURY_CACHE_DIR/prompts`` (else under the user cache), created private; None when it cannot be."""
    directory = cache_root() / "prompts"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return directory if os.access(directory, os.W_OK) else None


def model_key(path: Path, n_ctx: int) -> str:
    """What a saved state depends on besides the prompt: the llama.cpp build, the model file, the context."""
    try:
        build = metadata.version("xllamacpp")
    except metadata.PackageNotFoundError:
        build = "unknown"
    stat = path.stat()
    return f"{build}|{path.name}|{stat.st_size}|{stat.st_mtime_ns}|{n_ctx}"


class PrefixStore:
    """Restores (or saves) the state of each call's system prompt in the server's one slot, unless it is there."""

    def __init__(self, server: PrefixServer, directory: Path, key: str, api_key: str) -> None:
        self._server = server
        self._directory = directory
        self._key = key
        self._api_key = api_key
        self._in_slot: str | None = None
        """The system prompt the slot's cached prompt starts with (every call goes through ``prime``)."""
        self.outcome: str | None = None
        """What the last ``prime`` did: ``"restored"`` (from its file), ``"saved"`` (computed, then saved), or
        None (the slot already started with that system prompt, there was none, or a slot action failed)."""

    def file_name(self, system: str) -> str:
        """The slot file of ``system`` on this model."""
        return hashlib.sha256(f"{self._key}\0{system}".encode()).hexdigest()[:32] + ".bin"

    def prime(self, chat: list[dict[str, str]]) -> None:
        """Before each call (callers hold the server's lock): the slot starts with the state of ``chat``'s
        system prompt, left as it is when it already does, else restored from its file or computed and saved.

        Only a shortcut: llama.cpp matches the prompt's tokens against its slot itself, so a wrong guess of
        what the slot holds (a call that failed half-way) costs time, never a wrong answer."""
        self.outcome = None
        system = chat[0]["content"] if chat and chat[0]["role"] == "system" else None
        # The call that follows leaves the slot starting with ``system``, whatever happens here.
        previous, self._in_slot = self._in_slot, system
        if system is None or system == previous:
            return
        name = self.file_name(system)
        path = self._directory / name
        if path.is_file():
            if self._slot_action("restore", name):
                with contextlib.suppress(OSError):
                    os.utime(path)  # recently used: kept when older files are pruned
                self.outcome = "restored"
                return
            path.unlink(missing_ok=True)  # unreadable to this build: computed and saved again below
        # Only the system prompt: the real call that follows reuses it from the slot, so nothing is paid twice.
        try:
            done = self._server.handle_chat_completions(
                {"messages": [chat[0]], "max_tokens": 1, "temperature": 0.0, "cache_prompt": True}
            )
        except Exception:  # noqa: BLE001 (the real call that follows reports what is wrong)
            return
        if not isinstance(done, dict) or "error" in done:
            return
        partial = f"{name}.{os.getpid()}.tmp"
        if self._slot_action("save", partial):
            try:
                (self._directory / partial).chmod(0o600)
                (self._directory / partial).replace(path)
                self.outcome = "saved"
            except OSError:
                (self._directory / partial).unlink(missing_ok=True)
            self._prune()

    def _slot_action(self, action: str, file_name: str) -> bool:
        """llama.cpp's slot save or restore through its loopback listener; False when it refused."""
        request = urllib.request.Request(
            f"{self._server.listening_address}/slots/0?action={action}",
            data=json.dumps({"filename": file_name}).encode(),
            headers={"Authorization": f"Bearer {self._api_key}", "Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=SLOT_ACTION_TIMEOUT_S) as response:  # noqa: S310 (loopback)
                body = json.loads(response.read() or b"{}")
        except (OSError, ValueError, urllib.error.URLError):
            return False
        return isinstance(body, dict) and "error" not in body

    def _prune(self) -> None:
        """At most ``MAX_FILES`` saved prompts, the least recently used removed first."""
        try:
            files = sorted(self._directory.glob("*.bin"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in files[MAX_FILES:]:
                old.unlink(missing_ok=True)
        except OSError:
            return
