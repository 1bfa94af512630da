"""One ``git fetch`` of a head commit: the token as a header for the forge alone, the download capped as it comes.

``auth_env`` gives git the forge token as an HTTP header through its environment
(``GIT_CONFIG_COUNT``, ``http.<url>.extraHeader``): never in a URL, git's argv, a repository's
config, a log line or an error. The header is scoped to the repository's URL, and redirects are
not followed (``http.followRedirects false``): the token goes to the configured forge only.

``watched_fetch`` runs git in a process group of its own and measures the download while it
comes: git writes the incoming pack to a temporary file (``transfer.unpackLimit`` 1 keeps even a
small pack a pack), and the fetch is stopped as soon as that file passes the caller's cap, or
when the time is up, and its partial download removed. git's own error output is never shown,
since a remote URL in it may carry a job token.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from codejury.bounded_io import human_size
from codejury.change.git import Git

FETCH_TIMEOUT_S = 120.0
"""How long fetching the head commit may take before the review goes on without it."""
MAX_FETCH_BYTES = 2 * 1024**3
"""The most a fetch of one commit may download into a CI job's checkout."""
_WATCH_S = 0.02
"""How often a running fetch's download is measured against its cap."""
_KEEP_PACKS = {"transfer.unpackLimit": "1", "fetch.unpackLimit": "1"}
"""Every download is written as a pack file, so its size on disk is what has arrived so far."""


@dataclass(frozen=True)
class Remote:
    """Where a repository is fetched from, and the credentials for it (never shown)."""

    url: str
    """The repository's https clone URL on the configured forge."""
    user: str
    """The user name that goes with the token in HTTP Basic (``oauth2`` on GitLab, ``x-access-token`` on GitHub)."""
    token: str

    def __repr__(self) -> str:
        return f"Remote({self.url!r})"


@dataclass(frozen=True)
class Fetched:
    """How a fetch ended: ``problem`` is None when git succeeded, else why (one line, no git output)."""

    problem: str | None
    received: int
    """The bytes of pack data that had arrived when it ended (as far as they were measured)."""
    over_cap: bool = False


def auth_env(remote: Remote, base: Mapping[str, str]) -> dict[str, str]:
    """The token as an ``http.extraHeader`` for ``remote.url`` only, given to git through its environment after
    any configuration the caller set there; no redirect followed, no credential asked for or stored."""
    basic = base64.b64encode(f"{remote.user}:{remote.token}".encode()).decode()
    return _config_env(
        base,
        {
            f"http.{remote.url}.extraHeader": f"Authorization: Basic {basic}",
            "http.followRedirects": "false",
            "credential.helper": "",  # nothing asks, nothing is stored
        },
    ) | {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": ""}


def watched_fetch(
    git: Git, args: Sequence[str], env: Mapping[str, str], *, timeout_s: float, max_bytes: int | None
) -> Fetched:
    """Run ``git fetch ARGS``; stop it when its download passes ``max_bytes`` or ``timeout_s`` is up."""
    pack_dir, shallow_lock = _git_paths(git)
    command = git.command("fetch", *args)
    try:
        proc = subprocess.Popen(
            command, cwd=git.cwd, env=_config_env(env, _KEEP_PACKS), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        return Fetched(f"git could not run: {exc.strerror or exc}", 0)
    deadline = time.monotonic() + timeout_s
    received = 0
    try:
        while True:
            try:
                code = proc.wait(timeout=_WATCH_S)
                break
            except subprocess.TimeoutExpired:
                pass
            received = max(received, _incoming(pack_dir))
            if max_bytes is not None and received > max_bytes:
                _stop(proc, pack_dir, shallow_lock)
                return Fetched(f"the download passed {human_size(max_bytes)} and was stopped", received, True)
            if time.monotonic() > deadline:
                _stop(proc, pack_dir, shallow_lock)
                return Fetched(f"no answer within {timeout_s:g} s", received)
    except BaseException:
        _stop(proc, pack_dir, shallow_lock)
        raise
    return Fetched(None if code == 0 else f"git fetch exited {code}", received)


def _config_env(base: Mapping[str, str], entries: Mapping[str, str]) -> dict[str, str]:
    """``base`` with ``entries`` added to the configuration git reads from ``GIT_CONFIG_COUNT``."""
    count = int(base.get("GIT_CONFIG_COUNT", "0") or 0)
    env = dict(base)
    for index, (key, value) in enumerate(entries.items(), count):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    env["GIT_CONFIG_COUNT"] = str(count + len(entries))
    return env


def _git_paths(git: Git) -> tuple[Path, Path]:
    """Where the repository's packs arrive, and the lock a shallow fetch holds while it runs."""
    done = git.result("rev-parse", "--git-path", "objects/pack", "--git-path", "shallow.lock")
    lines = done.stdout.decode("utf-8", errors="replace").splitlines() if done.returncode == 0 else []
    found = [Path(line) if Path(line).is_absolute() else git.cwd / line for line in lines]
    if len(found) != 2:
        return git.cwd / "objects" / "pack", git.cwd / "shallow.lock"
    return found[0], found[1]


def _incoming(pack_dir: Path) -> int:
    """The bytes of the packs being received (``tmp_pack_*``: git renames a pack when it is complete)."""
    total = 0
    try:
        with os.scandir(pack_dir) as entries:
            for entry in entries:
                if entry.name.startswith("tmp_pack_"):
                    try:
                        total += entry.stat(follow_symlinks=False).st_size
                    except FileNotFoundError:
                        continue
    except FileNotFoundError:
        return 0
    return total


def _stop(proc: subprocess.Popen[bytes], pack_dir: Path, shallow_lock: Path) -> None:
    """Kill the fetch (git and the helpers it started) and remove what it left half written."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    try:
        for leftover in pack_dir.glob("tmp_*"):
            leftover.unlink(missing_ok=True)
    except OSError:
        pass
    shallow_lock.unlink(missing_ok=True)
