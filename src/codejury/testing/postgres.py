"""A real PostgreSQL server for tests and benchmarks: a throwaway cluster on a free loopback port.

``postgres_server()`` runs Debian's (or any) ``initdb`` and ``pg_ctl`` into a temporary directory,
listening on 127.0.0.1 only, with ``trust`` authentication and ``fsync`` off, as the ``postgres``
user when the caller is root (PostgreSQL refuses to run as root); the cluster and its files are
removed when the context exits. ``PostgresUnavailable`` says, in one line, why no server can be
started here (no binaries, or root with no unprivileged user); ``PostgresStartFailed``, that one
could be and did not start. ``PostgresServer.new_database()`` creates an empty database and
returns its URL (``postgresql://USER@127.0.0.1:PORT/NAME``).

Used by codejury's own suite (the store, the distributed queue) and ``benchmarks/service_pg.py``.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from codejury.errors import TestDoubleError

INSTALL_HINT = "make test-deps installs it"


class PostgresUnavailable(TestDoubleError):
    """No PostgreSQL server can be started on this machine (the reason is the message)."""


class PostgresStartFailed(TestDoubleError):
    """``initdb`` or ``pg_ctl start`` failed (the tail of its output is the message)."""


@dataclass(frozen=True)
class PostgresServer:
    port: int
    user: str

    def url(self, database: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """Create an empty database; its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


def pg_bindir() -> Path | None:
    """The folder of ``pg_ctl`` and ``initdb``: the newest Debian cluster version, else ``pg_ctl`` on PATH."""
    found = shutil.which("pg_ctl")
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), reverse=True)
    for path in [*candidates, *([found] if found else [])]:
        if Path(path).is_file():
            return Path(path).parent
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres_server(bindir: Path | None = None) -> Iterator[PostgresServer]:
    """A PostgreSQL server of its own, stopped and removed on exit; see the module docstring. ``bindir``: the
    folder of another build's ``initdb`` and ``pg_ctl`` (one with extensions such as pgvector)."""
    bindir = bindir or pg_bindir()
    if bindir is None:
        raise PostgresUnavailable(f"PostgreSQL is not installed ({INSTALL_HINT})")
    as_user: list[str] = []
    user = pwd.getpwuid(os.getuid()).pw_name
    if os.getuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            raise PostgresUnavailable(
                "running as root with no 'postgres' user: PostgreSQL refuses to run as root"
            ) from None
        as_user, user = ["runuser", "-u", "postgres", "--"], "postgres"
    base = Path(tempfile.mkdtemp(prefix="codejury-pg-"))
    data, sockets = base / "data", base / "sock"
    sockets.mkdir()
    if as_user:
        shutil.chown(base, "postgres")
        shutil.chown(sockets, "postgres")
    port = _free_port()

    def run(*cmd: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*as_user, *cmd], capture_output=True, text=True, timeout=120, check=False)

    try:
        init = run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", user, "--no-sync", "-E", "UTF8")
        if init.returncode != 0:
            raise PostgresStartFailed(f"initdb failed: {init.stderr.strip()[-500:]}")
        options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
        start = run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(base / "log"), "-w", "start")
        if start.returncode != 0:
            log = (base / "log").read_text(errors="replace")[-500:] if (base / "log").exists() else ""
            raise PostgresStartFailed(f"pg_ctl start failed: {start.stderr.strip()[-300:]} {log}")
        try:
            yield PostgresServer(port, user)
        finally:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
    finally:
        shutil.rmtree(base, ignore_errors=True)
