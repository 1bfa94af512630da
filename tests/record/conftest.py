"""A real PostgreSQL server for the store's tests, and a store URL per backend.

``postgres_server`` runs Debian's (or any) ``initdb`` and ``pg_ctl`` into a temporary directory on
a free loopback port, as the ``postgres`` user when the tests run as root (PostgreSQL refuses to
run as root). It skips, saying why, only where no server can be started: no binaries (``make
test-deps`` installs them) or no unprivileged user to run one. ``store_url`` is parametrised over
SQLite and PostgreSQL: each test gets an empty database of its own.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class PostgresServer:
    port: int
    user: str

    def url(self, database: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"


def _pg_bin() -> Path | None:
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


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (make test-deps installs it): the PostgreSQL store tests cannot run")
    as_user: list[str] = []
    user = pwd.getpwuid(os.getuid()).pw_name
    if os.getuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root with no 'postgres' user: PostgreSQL refuses to run as root")
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

    init = run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", user, "--no-sync", "-E", "UTF8")
    if init.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"initdb failed: {init.stderr.strip()[-500:]}")
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
    start = run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(base / "log"), "-w", "start")
    if start.returncode != 0:
        log = (base / "log").read_text(errors="replace")[-500:] if (base / "log").exists() else ""
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"pg_ctl start failed: {start.stderr.strip()[-300:]} {log}")
    try:
        yield PostgresServer(port, user)
    finally:
        run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def new_pg_database(postgres_server: PostgresServer) -> Callable[[], str]:
    """Creates an empty database and returns its URL."""
    import psycopg

    def create() -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(postgres_server.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return postgres_server.url(name)

    return create


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty store on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store' / 'reviews.sqlite3'}"
    create: Callable[[], str] = request.getfixturevalue("new_pg_database")
    return create()


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word (a hung database or service)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    server.close()
