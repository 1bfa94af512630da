"""A real PostgreSQL server for the store's tests, and a store URL per backend.

``postgres_server`` is ``codejury.testing.postgres``'s: ``initdb`` and ``pg_ctl`` into a temporary
directory on a free loopback port, as the ``postgres`` user when the tests run as root (PostgreSQL
refuses to run as root), one per test session. It skips, saying why, only where no server can be
started: no binaries (``make test-deps`` installs them) or no unprivileged user to run one.
``store_url`` is parametrised over SQLite and PostgreSQL: each test gets an empty database of its own.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codejury.testing.postgres import PostgresServer, PostgresStartFailed, PostgresUnavailable
from codejury.testing.postgres import postgres_server as start_postgres


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    try:
        with start_postgres() as server:
            yield server
    except PostgresUnavailable as exc:
        pytest.skip(f"{exc}: the PostgreSQL store tests cannot run")
    except PostgresStartFailed as exc:
        pytest.fail(str(exc))


@pytest.fixture
def new_pg_database(postgres_server: PostgresServer) -> Callable[[], str]:
    """Creates an empty database and returns its URL."""
    return postgres_server.new_database


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
